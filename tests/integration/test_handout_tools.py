"""A request's ``tools`` are the caller's own too (issue 38: a host or litellm that
edits a request must never change the next one).

``PrepareTurn(tools=TOOLS)`` kept the host's nested tool dicts in the request it handed
out and in the remembered request an overflow retry is rebuilt from: litellm or a host
that edited ``request.tools`` in place (a schema cleaned for a provider, a name
rewritten) changed the host's ``TOOLS`` (so every later turn) and the retried request.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import pytest

from helpers import Harness, ok, user, assistant

from context_compaction.application.contracts.commands import AppendMessages, PrepareTurn, RecoverOverflow, StartSession

SID = "tools-handout"


def _tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }}]


def _edit(tools: list[dict[str, Any]]) -> None:
    """What a provider adapter does to a tool schema before sending it."""
    tools[0]["function"]["name"] = "EDITED"
    tools[0]["function"]["parameters"]["properties"]["path"]["type"] = "EDITED"
    tools[0]["function"]["parameters"]["required"].append("EDITED")


def _session(harness: Harness) -> None:
    harness.bus.dispatch(StartSession(session_id=SID, model="gpt-4o"))
    history = []
    # 200 words a message: the overflow retry still compacts (12 of 25 messages left);
    # 2,000 cost the extractive summarizer ~6 s a test (its sentence scan grows faster
    # than the sentence) and the copies under test do not depend on a message's length.
    for i in range(12):
        history += [user(f"question {i} " + "word " * 200), assistant(f"answer {i} " + "text " * 200)]
    harness.bus.dispatch(AppendMessages(session_id=SID, messages=[*history, user("go on")]))


def test_editing_the_request_s_tools_leaves_the_host_s_tools_and_the_next_turn_alone(harness: Harness) -> None:
    _session(harness)
    TOOLS = _tools()
    request = harness.bus.dispatch(PrepareTurn(session_id=SID, tools=TOOLS))
    _edit(request.completion_kwargs()["tools"])
    assert TOOLS == _tools(), "editing the request changed the host's tools"
    assert harness.bus.dispatch(PrepareTurn(session_id=SID, tools=TOOLS)).tools == _tools()


def test_editing_the_request_s_tools_leaves_the_overflow_retry_alone(harness: Harness) -> None:
    _session(harness)
    request = harness.bus.dispatch(PrepareTurn(session_id=SID, tools=_tools()))
    _edit(request.tools)
    retried = harness.bus.dispatch(RecoverOverflow(session_id=SID, request_id=request.request_id))
    assert retried.retry_of == request.request_id
    assert retried.tools == _tools(), "the retried request carries the host's edit of the first one"


def test_the_json_path_hands_out_tools_of_its_own(harness: Harness) -> None:
    _session(harness)
    TOOLS = _tools()
    request = harness.bus.dispatch(PrepareTurn(session_id=SID, tools=TOOLS))
    answer = ok(harness.do({"type": "prepare_turn", "session_id": SID, "tools": copy.deepcopy(TOOLS)}))
    _edit(answer["tools"])
    retried = harness.bus.dispatch(RecoverOverflow(session_id=SID, request_id=request.request_id))
    assert retried.tools == _tools()


def test_editing_the_host_s_own_tools_after_the_turn_leaves_the_overflow_retry_alone(harness: Harness) -> None:
    # The host hands its own TOOLS to litellm next to ``request.messages`` (or cleans
    # them for the next turn): the retry is the refused request rebuilt, not the host's
    # later edit of its own list.
    _session(harness)
    TOOLS = _tools()
    request = harness.bus.dispatch(PrepareTurn(session_id=SID, tools=TOOLS))
    _edit(TOOLS)
    retried = harness.bus.dispatch(RecoverOverflow(session_id=SID, request_id=request.request_id))
    assert retried.retry_of == request.request_id
    assert retried.tools == _tools(), "the retried request carries the host's later edit of its own tools"


@pytest.mark.parametrize("shape", ["tuple", "dict subclass"])
def test_tools_given_as_tuples_or_dict_subclasses_are_the_caller_s_own_too(
    harness: Harness, handout_path: str, shape: str
) -> None:
    # Both pass the command's validation as JSON (an array, an object); the copy must
    # not stop at them and hand out the host's dicts beneath.
    def tools() -> list[dict[str, Any]]:
        parameters = {"type": "object", "anyOf": ({"required": ["path"]},)} if shape == "tuple" \
            else OrderedDict(type="object", anyOf=[OrderedDict(required=["path"])])
        return [{"type": "function", "function": {"name": "read_file", "parameters": parameters}}]

    _session(harness)
    TOOLS = tools()
    request = harness.bus.dispatch(PrepareTurn(session_id=SID, tools=TOOLS))
    request.tools[0]["function"]["parameters"]["anyOf"][0]["required"].append("EDITED")
    assert TOOLS == tools(), "editing the request changed the host's tools"
    retried = harness.bus.dispatch(RecoverOverflow(session_id=SID, request_id=request.request_id))
    retried.tools[0]["function"]["parameters"]["anyOf"][0]["required"].append("EDITED")
    assert TOOLS == tools(), "editing the retried request changed the host's tools"
