"""Review wave 3 (rev-handout): ways a host reaches the cache's messages through the lazy
hand-out of ADR 0058 (``HandedOutMessages``) and edits them, so that the next call
(typed and JSON) returns the edit (issue 13: it must never).

Each test builds a real session on SQLite, takes one typed result, reaches its messages
the way a host might, edits what it got, and asks again.
"""

from __future__ import annotations

import inspect
import json
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from helpers import Harness, assistant, ok, tool, user

from context_compaction.application.commands import GetProjection, PrepareTurn
from context_compaction.application.handout import HandedOutMessages
from context_compaction.application.results import ProjectionResult, TurnRequest

SID = "rev-handout"


def _session(harness: Harness) -> None:
    ok(harness.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    ok(harness.do({"type": "append_messages", "session_id": SID, "messages": [
        user("plain question"),
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}]},
        assistant(None, calls=[("call_1", "read_file", '{"path": "a.py"}')]),
        tool("call_1", "contents of a.py"),
        assistant("done"),
    ]}))


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
    "super().__getitem__": lambda x: [super(HandedOutMessages, x).__getitem__(i) for i in range(len(x))],
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


def test_a_thread_reading_a_slot_while_another_assigns_it_gets_no_cached_message(harness: Harness) -> None:
    """``__setitem__`` clears the slot's flag under the lock but stores the new value after
    releasing it: a reader in that gap is handed the cache's own message as the caller's.

    The gap is held open by a trace function on the assigning thread (the scheduler may
    switch threads at any bytecode there; this makes the switch certain)."""
    _session(harness)
    result = harness.bus.dispatch(PrepareTurn(session_id=SID))
    before = json.dumps(list(harness.bus.dispatch(PrepareTurn(session_id=SID)).messages))
    messages = result.messages
    lines, first = inspect.getsourcelines(HandedOutMessages.__setitem__)
    store = first + next(i for i, line in enumerate(lines) if "list.__setitem__(self, index, value)" in line)
    in_gap, leave_gap = threading.Event(), threading.Event()

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno == store:
            in_gap.set()
            leave_gap.wait(10)
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code is HandedOutMessages.__setitem__.__code__ else None

    def assign() -> None:
        sys.settrace(tracer)
        try:
            messages[0] = {"role": "user", "content": "the host's own"}
        finally:
            sys.settrace(None)

    writer = threading.Thread(target=assign)
    writer.start()
    try:
        assert in_gap.wait(10), "the assigning thread never reached the store"
        taken = messages[0]  # the reader, in the gap
    finally:
        leave_gap.set()
        writer.join(10)
    _edit([taken])
    _unchanged(harness, "prepare_turn", before)



class _Shifting:
    """An index whose ``__index__`` answers 0, then 1: ``__setitem__`` reads it once to
    clear a slot's flag and ``list.__setitem__`` reads it again to store."""

    def __init__(self) -> None:
        self.calls = 0

    def __index__(self) -> int:
        self.calls += 1
        return 0 if self.calls == 1 else 1


def test_an_assignment_clears_the_flag_of_the_slot_it_stores_in(harness: Harness) -> None:
    """The same gap as the thread case, in one thread: the flag cleared and the slot
    stored are found separately, so slot 0 keeps the cache's message marked as the host's."""
    _session(harness)
    result = harness.bus.dispatch(PrepareTurn(session_id=SID))
    before = json.dumps(list(harness.bus.dispatch(PrepareTurn(session_id=SID)).messages))
    result.messages[_Shifting()] = {"role": "user", "content": "the host's own"}
    _edit([result.messages[0]])
    _unchanged(harness, "prepare_turn", before)
