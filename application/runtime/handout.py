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
from copy import deepcopy
from typing import Any

from context_compaction.domain.projection import KnownFlat
from context_compaction.domain.provider_messages import JSON_SCALARS

from ..contracts.results import ProjectionResult, TurnRequest

#: CPython up to 3.13 keeps a dict untracked by the collector while it holds no list,
#: dict or other container that could be tracked (inserting one tracks it for good),
#: so an untracked dict's flat ``copy()`` shares nothing mutable with it. CPython 3.14
#: tracks every dict (GH-127010), and other interpreters may never have done this: the
#: behaviour is checked here, not the version, and without it a dict is flat when its
#: values' types are all scalar (one C-level scan, issue 38).
LAZY_TRACKING = platform.python_implementation() == "CPython" and not gc.is_tracked({"k": "v"})
_IS_TRACKED = gc.is_tracked
#: (``is_flat`` inlined where it runs once a message: ``issuperset(map(type, values))``)
_FLAT = JSON_SCALARS.issuperset
_SCALARS = JSON_SCALARS


def owned(value: Any) -> Any:
    """A copy of one JSON-shaped value that shares no dict or list with it."""
    kind = type(value)
    if kind is dict:
        if (not _IS_TRACKED(value)) if LAZY_TRACKING else _FLAT(map(type, value.values())):
            return value.copy()
        return _walked(value)
    if kind is list:
        return [item if type(item) in _SCALARS else owned(item) for item in value]
    if kind in _SCALARS:
        return value
    # A tuple or a dict or list subclass: valid JSON to the commands (a host's tool
    # schema), rare, so copied the general way, its type kept.
    return deepcopy(value)


def _walked(value: dict[str, Any]) -> dict[str, Any]:
    """``owned`` of a dict that holds a dict or list: a flat one among its values is
    copied here, without a call of its own (a tool call's ``function``)."""
    copy = value.copy()
    lazy, tracked, flat, scalars = LAZY_TRACKING, _IS_TRACKED, _FLAT, _SCALARS
    for key, item in value.items():
        kind = type(item)
        if kind is dict:
            if (not tracked(item)) if lazy else flat(map(type, item.values())):
                copy[key] = item.copy()
            else:
                copy[key] = _walked(item)
        elif kind not in scalars:
            copy[key] = owned(item)
    return copy


def handed_out(messages: list[Any], known: KnownFlat | None = None) -> list[Any]:
    """A copy of JSON-shaped ``messages`` that shares no dict or list with them.

    Most messages are flat (role, string content, ids): one C-level ``dict.copy()`` each.
    Only the dicts and lists that hold other dicts or lists are walked. ``known`` (about
    this very list) says which messages the projection's builder found flat when it
    converted them: those are copied without a look, the nested ones it names walked (an
    assistant's tool calls without a call of ours), and only the others (system prompt,
    summary, open tool group) looked at (ADR 0098).
    The collector waits while the copy is made (ADR 0088): a copy of N messages allocates
    more than N containers, each young collection in between scans the half-made copy,
    and each tenth one a generation that the library's cached messages are in; after the
    copy, one young collection at most (none when the caller has dropped the copy by then).
    """
    if known is not None and known.messages is not messages:
        raise ValueError("known_flat describes another list of messages")
    if not gc.isenabled():  # (the host's choice: never switched back on here)
        return _copied(messages, known)
    gc.disable()
    try:
        return _copied(messages, known)
    finally:
        gc.enable()


def _copied(messages: list[Any], known: KnownFlat | None) -> list[Any]:
    if known is None:
        return _looked_at(messages)
    start, stop = known.start, known.stop
    body = list(map(dict.copy, messages[start:stop]))
    for index in known.nested:
        body[index] = _walked(messages[start + index])
    # An assistant's tool calls, the usual nested message: copied here without a call
    # or a look per container (the builder checked their shape, ``calls_only``).
    for index in known.calls:
        calls = body[index]["tool_calls"] = list(map(dict.copy, body[index]["tool_calls"]))
        for call in calls:
            call["function"] = call["function"].copy()
    out = _looked_at(messages[:start])
    out += body
    out += _looked_at(messages[stop:])
    return out


def _looked_at(messages: list[Any]) -> list[Any]:
    """The copy of messages nothing is known of: each looked at."""
    if not LAZY_TRACKING:
        flat = _FLAT
        return [
            (m.copy() if flat(map(type, m.values())) else owned(m)) if type(m) is dict else owned(m)
            for m in messages
        ]
    tracked = _IS_TRACKED
    return [
        (m.copy() if not tracked(m) else owned(m)) if type(m) is dict else owned(m)
        for m in messages
    ]


#: Results whose ``messages`` are the process's cached projection.
SHARING_MESSAGES = (TurnRequest, ProjectionResult)


def hand_out(result: Any) -> Any:
    """The typed caller's result: its messages its own copy to mark or edit (ADR 0058;
    the JSON edge serializes the cached ones, never handing them out)."""
    if isinstance(result, SHARING_MESSAGES):
        known = result.known_flat()
        # (dropped with the copy: it holds the cache's list, which is not the caller's)
        result.knowing_flat(None)
        result.messages = handed_out(result.messages, known)
        if isinstance(result, TurnRequest) and result.tools:
            # The tools are the command's, so the host's own and the ones an overflow
            # retry is rebuilt from: a provider adapter cleaning a schema in place
            # must change neither (issue 38).
            result.tools = handed_out(result.tools)
    return result
