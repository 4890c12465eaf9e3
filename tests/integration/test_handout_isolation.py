"""What ``prepare_turn`` / ``get_projection`` hand out shares nothing with the
library's cached projection (ADR 0052 point 4, ADR 0030 R8)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from backends import MakeHarness
from helpers import assistant, ok, tool, user

from context_compaction.application.contracts.commands import AppendMessages, GetProjection, PrepareTurn

BACKENDS = ("memory", "sqlite", "postgres")
SID = "handout"
#: Every test on both of the hand-out copy's paths (``handout_path``, issue 38).
pytestmark = pytest.mark.usefixtures("handout_path")


def _session(make_harness: MakeHarness) -> Any:
    h = make_harness("main")
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("plain question"),
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
        assistant(None, calls=[("call_1", "read_file", '{"path": "a.py"}'), ("call_2", "ls", "{}")]),
        tool("call_1", "contents of a.py"),
        tool("call_2", "a.py b.py", name="ls"),
        assistant("done"),
    ]}))
    return h


def _vandalize(value: Any) -> None:
    """Change every dict and list reachable from ``value`` in place."""
    if isinstance(value, dict):
        for key in list(value):
            item = value[key]
            if isinstance(item, (dict, list)):
                _vandalize(item)
            elif isinstance(item, str):
                value[key] = item + " VANDALIZED"
        value["vandal"] = True
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _vandalize(item)
        value.append("vandal")


@pytest.mark.parametrize("command", ["prepare_turn", "get_projection"])
def test_editing_every_handed_out_dict_and_list_changes_nothing_the_next_call_returns(
    make_harness: MakeHarness, command: str
) -> None:
    h = _session(make_harness)
    make = (lambda: PrepareTurn(session_id=SID)) if command == "prepare_turn" else (lambda: GetProjection(session_id=SID))
    first = h.bus.dispatch(make())
    before = copy.deepcopy(first.messages)
    _vandalize(first.messages)
    for message in first.messages:
        _vandalize(message)
    second = h.bus.dispatch(make())
    assert second.messages == before
    # and the JSON path agrees with the typed one after the vandalism
    json_messages = ok(h.do({"type": command, "session_id": SID}))["messages"]
    assert json_messages == before
    raw = json.loads(h.bus.dispatch_json_bytes({"type": command, "session_id": SID}))
    assert raw["result"]["messages"] == before


def test_editing_the_json_envelope_changes_nothing_the_next_call_returns(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    first = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    before = copy.deepcopy(first["messages"])
    for message in first["messages"]:
        _vandalize(message)
    assert h.bus.dispatch(PrepareTurn(session_id=SID)).messages == before


def test_typed_and_json_prepare_turn_report_the_same_token_figures(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    typed = h.bus.dispatch(PrepareTurn(session_id=SID, system_prompt="Be careful.")).model_dump(mode="json")
    plain = ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": "Be careful."}))
    for key in typed:
        if "token" in key or key in ("messages", "model", "compaction", "breakdown"):
            assert typed[key] == plain[key], key


def test_editing_the_appended_messages_afterwards_changes_nothing_the_library_holds(
    make_harness: MakeHarness,
) -> None:
    h = _session(make_harness)
    before = copy.deepcopy(h.bus.dispatch(PrepareTurn(session_id=SID)).messages)
    mine = [user("later"), assistant(None, calls=[("call_9", "grep", '{"q": "x"}')]), tool("call_9", "hit"),
            {"role": "user", "content": [{"type": "text", "text": "multi"}]}]
    h.bus.dispatch(AppendMessages(session_id=SID, messages=mine))
    expected = copy.deepcopy(h.bus.dispatch(PrepareTurn(session_id=SID)).messages)
    assert expected[: len(before)] == before
    for message in mine:
        _vandalize(message)
    assert h.bus.dispatch(PrepareTurn(session_id=SID)).messages == expected
