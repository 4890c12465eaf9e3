"""The typed hand-out is the host's own copy (issue 13, ADR 0058): whatever
way the host reaches a message of ``prepare_turn`` / ``get_projection`` and edits it,
the next request is unchanged (issue 13)."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from helpers import Harness, mixed_session, ok

from context_compaction.application.contracts.commands import GetProjection, PrepareTurn

SID = "lazy"
#: Every test on both of the hand-out copy's paths (``handout_path``, issue 38).
pytestmark = pytest.mark.usefixtures("handout_path")


def _session(harness: Harness) -> None:
    mixed_session(harness, SID)


def _edit(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        if isinstance(message.get("content"), list):
            message["content"][0]["cache_control"] = {"type": "ephemeral"}
            message["content"].append({"type": "text", "text": "added"})
        else:
            message["content"] = "changed by the host"
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = "{}changed"
        message["cache_control"] = {"type": "ephemeral"}


#: How a host gets at the messages of a typed result before editing them.
REACH: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
    "walk": lambda r: r.messages,
    "by index": lambda r: [r.messages[i] for i in range(len(r.messages))],
    "a slice": lambda r: r.messages[:],
    "completion_kwargs": lambda r: r.completion_kwargs()["messages"],
    "model_dump": lambda r: r.model_dump()["messages"],
    "model_copy": lambda r: r.model_copy().messages,
    "deep model_copy": lambda r: r.model_copy(deep=True).messages,
    "pickle": lambda r: pickle.loads(pickle.dumps(r.messages)),
    "system prompt put first": lambda r: [{"role": "system", "content": "x"}] + r.messages,
}


@pytest.mark.parametrize("command", ["prepare_turn", "get_projection"])
@pytest.mark.parametrize("reach", list(REACH))
def test_a_host_editing_what_it_reached_changes_nothing_the_next_call_returns(
    harness: Harness, command: str, reach: str
) -> None:
    if reach == "completion_kwargs" and command == "get_projection":
        pytest.skip("a projection is not a request: it has no completion_kwargs")
    _session(harness)
    make = (lambda: PrepareTurn(session_id=SID)) if command == "prepare_turn" else (lambda: GetProjection(session_id=SID))
    first = harness.bus.dispatch(make())
    before = copy.deepcopy(list(first.messages))
    _edit(REACH[reach](first))
    assert harness.bus.dispatch(make()).messages == before
    assert ok(harness.do({"type": command, "session_id": SID}))["messages"] == before


def test_typed_messages_are_a_plain_list_that_shares_nothing_with_the_next_call(harness: Harness) -> None:
    """C-level readers (pydantic-core, unbound ``list`` methods) read a list's slots
    directly, so the hand-out is a plain list of copies (ADR 0058, review wave 3)."""
    _session(harness)
    first = harness.bus.dispatch(PrepareTurn(session_id=SID))
    second = harness.bus.dispatch(PrepareTurn(session_id=SID))
    assert type(first.messages) is list and first.messages == second.messages
    assert not any(list.__getitem__(first.messages, i) is list.__getitem__(second.messages, i)
                   for i in range(len(first.messages)))
