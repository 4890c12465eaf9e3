"""Ways a host reaches the cache's messages through the lazy
hand-out and edits them (they broke the lazy ``HandedOutMessages`` that ADR 0058 tried), so that the next call
(typed and JSON) returns the edit (issue 13: it must never).

Each test builds a real session on SQLite, takes one typed result, reaches its messages
the way a host might, edits what it got, and asks again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from helpers import Harness, mixed_session, ok

from context_compaction.application.contracts.commands import GetProjection, PrepareTurn
from context_compaction.application.contracts.results import ProjectionResult, TurnRequest

SID = "rev-handout"


def _session(harness: Harness) -> None:
    mixed_session(harness, SID)


def _edit(messages: Any) -> None:
    """What a host does to a request before sending it: marks and rewrites in place."""
    for message in messages:
        if isinstance(message.get("content"), list):
            message["content"][0]["text"] = "EDITED BY THE HOST"
        else:
            message["content"] = "EDITED BY THE HOST"
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = "EDITED BY THE HOST"


def _command(kind: str) -> Any:
    return PrepareTurn(session_id=SID) if kind == "prepare_turn" else GetProjection(session_id=SID)


def _unchanged(harness: Harness, kind: str, before: str) -> None:
    typed = json.dumps(list(harness.bus.dispatch(_command(kind)).messages))
    assert typed == before, "the host's edit reached the library's cache (typed call)"
    via_json = json.dumps(ok(harness.do({"type": kind, "session_id": SID}))["messages"])
    assert via_json == before, "the host's edit reached the library's cache (JSON call)"


class HostRequest(BaseModel):
    """A host's own request model, as hosts wrap what they send."""

    messages: list[dict[str, Any]]


def _revalidated(result: Any) -> Any:
    # The library's own result type, rebuilt from its fields (a host adding a field,
    # or a framework re-validating what it was handed).
    return type(result).model_validate(dict(result)).messages


#: Validation by pydantic: pydantic-core reads a list subclass's slots in C, never
#: through ``__getitem__``/``__iter__``, and keeps nested ``Any`` values as they are.
VALIDATE: dict[str, Callable[[Any], Any]] = {
    "Result.model_validate(dict(result))": _revalidated,
    "Result(**dict(result))": lambda r: type(r)(**dict(r)).messages,
    "host model list[dict[str, Any]]": lambda r: HostRequest(messages=r.messages).messages,
    "TypeAdapter(list[Any])": lambda r: TypeAdapter(list[Any]).validate_python(r.messages),
}


@pytest.mark.parametrize("kind", ["prepare_turn", "get_projection"])
@pytest.mark.parametrize("way", list(VALIDATE))
def test_a_host_validating_the_result_with_pydantic_then_editing_changes_nothing_next(
    harness: Harness, kind: str, way: str
) -> None:
    _session(harness)
    # (``before`` from another call: walking ``result.messages`` would copy them all)
    before = json.dumps(list(harness.bus.dispatch(_command(kind)).messages))
    result = harness.bus.dispatch(_command(kind))
    assert isinstance(result, (TurnRequest, ProjectionResult))
    _edit(VALIDATE[way](result))
    _unchanged(harness, kind, before)


#: ``list``'s own methods called on the hand-out (the brief of issue 13 names them): a
#: list subclass cannot intercept them, the eager copy (before ADR 0058) needed not.
UNBOUND: dict[str, Callable[[list[Any]], Any]] = {
    "list.__getitem__(x, i)": lambda x: [list.__getitem__(x, i) for i in range(len(x))],
    "list.__getitem__(x, slice)": lambda x: list.__getitem__(x, slice(None)),
    "list.copy(x)": lambda x: list.copy(x),
    "list.__iter__(x)": lambda x: list(list.__iter__(x)),
    "list.pop(x)": lambda x: [list.pop(x) for _ in range(len(x))],
    "list.__add__(x, [])": lambda x: list.__add__(x, []),
    "list.reverse(x) after one take": lambda x: (x[0], list.reverse(x), [x[i] for i in range(len(x))])[-1],
}


@pytest.mark.parametrize("way", list(UNBOUND))
def test_list_methods_called_unbound_on_the_hand_out_change_nothing_next(harness: Harness, way: str) -> None:
    _session(harness)
    result = harness.bus.dispatch(PrepareTurn(session_id=SID))
    before = json.dumps(list(harness.bus.dispatch(PrepareTurn(session_id=SID)).messages))
    _edit(UNBOUND[way](result.messages))
    _unchanged(harness, "prepare_turn", before)
