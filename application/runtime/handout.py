"""What a typed caller gets as ``messages`` (issue 13, ADR 0030 R8, ADR 0058).

The messages of ``prepare_turn`` / ``get_projection`` come from the process's cached
projection: a host (or litellm) that edits them in place must not change the next
request. So the typed caller gets a plain list of copies that share no dict or list with
the cache. The copy is O(N) in the request; ADR 0058 records the lazy copy-when-taken
list that was tried instead and why it went: C-level readers (pydantic-core validating a
``TurnRequest`` or a host's own model, unbound ``list`` methods) read a list subclass's
slots directly and so handed the cache's own objects to code that edits them.
"""

from __future__ import annotations

import gc
import platform
from typing import Any

from ..contracts.results import ProjectionResult, TurnRequest

#: CPython up to 3.13 keeps a dict untracked by the collector while it holds no list,
#: dict or other container that could be tracked (inserting one tracks it for good),
#: so an untracked dict's flat ``copy()`` shares nothing mutable with it. CPython 3.14
#: tracks every dict (GH-127010), and other interpreters may never have done this: the
#: behaviour is checked here, not the version, and without it a dict is flat when its
#: values' types are all scalar (one C-level scan, issue 38).
LAZY_TRACKING = platform.python_implementation() == "CPython" and not gc.is_tracked({"k": "v"})
_IS_TRACKED = gc.is_tracked if LAZY_TRACKING else (lambda _: True)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def owned(value: Any) -> Any:
    """A copy of one JSON-shaped value that shares no dict or list with it."""
    kind = type(value)
    if kind is dict:
        copy = value.copy()
        if _IS_TRACKED(value):
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    copy[key] = owned(item)
        return copy
    if kind is list:
        return [owned(item) if type(item) is dict or type(item) is list else item for item in value]
    return value


def handed_out(messages: list[Any]) -> list[Any]:
    """A copy of JSON-shaped ``messages`` that shares no dict or list with them.

    Most messages are flat (role, string content, ids): one C-level ``dict.copy()`` each.
    Only the dicts and lists that hold other dicts or lists are walked. The collector
    waits while the copy is made (ADR 0088): a copy of N messages allocates more than N
    containers, each young collection in between scans the half-made copy, and each
    tenth one a generation that the library's cached messages are in; after the copy,
    one young collection at most (none when the caller has dropped the copy by then).
    """
    if not gc.isenabled():  # (the host's choice: never switched back on here)
        return _copied(messages)
    gc.disable()
    try:
        return _copied(messages)
    finally:
        gc.enable()


def _copied(messages: list[Any]) -> list[Any]:
    if not LAZY_TRACKING:
        flat = _SCALARS.issuperset
        return [
            (m.copy() if flat(map(type, m.values())) else owned(m)) if type(m) is dict
            else owned(m) if type(m) is list else m
            for m in messages
        ]
    tracked = _IS_TRACKED
    return [
        (m.copy() if not tracked(m) else owned(m)) if type(m) is dict
        else owned(m) if type(m) is list else m
        for m in messages
    ]


#: Results whose ``messages`` are the process's cached projection.
SHARING_MESSAGES = (TurnRequest, ProjectionResult)


def hand_out(result: Any) -> Any:
    """The typed caller's result: its messages its own copy to mark or edit (ADR 0058;
    the JSON edge serializes the cached ones, never handing them out)."""
    if isinstance(result, SHARING_MESSAGES):
        result.messages = handed_out(result.messages)
        if isinstance(result, TurnRequest) and result.tools:
            # The tools are the command's, so the host's own and the ones an overflow
            # retry is rebuilt from: a provider adapter cleaning a schema in place
            # must change neither (issue 38).
            result.tools = handed_out(result.tools)
    return result
