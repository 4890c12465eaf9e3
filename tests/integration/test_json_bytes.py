"""``dispatch_json_bytes`` (one orjson walk, ADR 0030 R7) parses to exactly what
``dispatch_json`` + Starlette's ``json.dumps`` rendering gave before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from context_compaction import Settings, bootstrap
from context_compaction.application.runtime.bus import _result_bytes, envelope_bytes


class Odd(BaseModel):
    value: Any
    items: list[dict[str, Any]] = []


ODD_VALUES = [
    "plain", "h\u00e9llo \u2603 \U0001f600", "nul\x00inside", "\u2028\u2029 separators",
    2**63 - 1, -(2**63), 2**64, 10**30, -(10**40),
    0.1, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, -0.0, 3.0,
    float("nan"), float("inf"),
    None, True, [], {}, [1, [2, [3, {"k": "v"}]]],
    {1: "int key"}, {"nested": {"big": 2**80, "text": "\x00\u00e9"}},
    (1, "tuple"),
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=range(len(ODD_VALUES)))
def test_odd_results_parse_the_same(value: Any) -> None:
    result = Odd(value=value, items=[{"role": "user", "content": value}])
    old = envelope_bytes({"ok": True, "result": result.model_dump(mode="json")})
    assert json.loads(_result_bytes(result)) == json.loads(old)


def test_a_lone_surrogate_fails_as_before() -> None:
    result = Odd(value="\ud800")
    with pytest.raises(UnicodeEncodeError):  # what JSONResponse.render did too
        envelope_bytes({"ok": True, "result": result.model_dump(mode="json")})
    with pytest.raises(UnicodeEncodeError):
        _result_bytes(result)


def test_real_commands_give_the_same_envelopes(tmp_path: Path) -> None:
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", summarizer="extractive"))
    text = "caf\u00e9 \x00 \U0001f600 \u2028"
    writes: list[dict[str, Any]] = [
        {"type": "start_session", "session_id": "s", "model": "gpt-4o-mini"},
        {"type": "append_messages", "session_id": "s", "messages": [
            {"role": "user", "content": text},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"n": 1e400}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": text}]}]},
    ]
    reads: list[dict[str, Any] | str] = [
        {"type": "prepare_turn", "session_id": "s", "system_prompt": "sys \u00e9", "tools": []},
        {"type": "get_projection", "session_id": "s"},
        {"type": "get_history", "session_id": "s"},
        {"type": "get_context_usage", "session_id": "s"},
        {"type": "no_such_command"},
        {"type": "get_projection", "session_id": "missing"},
        "not json",
    ]
    try:
        for write in writes:  # (once each: a second run would differ, not the bytes)
            reply = bus.dispatch_json_reply(json.dumps(write))
            assert reply.error_code is None and json.loads(reply.body)["ok"], reply
        for command in reads:
            raw = command if isinstance(command, str) else json.dumps(command)
            expected = _per_call_free(json.loads(envelope_bytes(bus.dispatch_json(raw))))
            reply = bus.dispatch_json_reply(raw)
            assert _per_call_free(json.loads(reply.body)) == expected, command
            assert reply.error_code == (None if expected["ok"] else expected["error"]["code"])
            assert _per_call_free(json.loads(bus.dispatch_json_bytes(raw))) == expected
    finally:
        bus.close()


def _per_call_free(envelope: dict[str, Any]) -> dict[str, Any]:
    """Without ``prepare_turn``'s ``request_id``, which is new on every call."""
    result = envelope.get("result")
    if isinstance(result, dict) and "request_id" in result:
        assert str(result.pop("request_id")).startswith("req_")
    return envelope


def test_dispatch_json_results_with_messages_equal_the_typed_dump_and_share_nothing(tmp_path: Path) -> None:
    # ``dispatch_json`` copies the cached messages instead of pydantic's JSON walk (ADR
    # 0062): the envelope must still be what ``model_dump(mode="json")`` of the typed
    # result gives, and editing it in place must not reach the next request.
    from context_compaction import commands as c

    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", summarizer="extractive"))
    try:
        bus.dispatch(c.StartSession(session_id="s", model="gpt-4o-mini"))
        bus.dispatch(c.AppendMessages(session_id="s", messages=[
            {"role": "user", "content": [{"type": "text", "text": "caf\u00e9"},
                                         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"n": 1}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "out"}]))
        commands = [
            (c.PrepareTurn(session_id="s", system_prompt="sys", tools=[]),
             {"type": "prepare_turn", "session_id": "s", "system_prompt": "sys", "tools": []}),
            (c.GetProjection(session_id="s"), {"type": "get_projection", "session_id": "s"}),
        ]
        for typed, text in commands:
            expected = _per_call_free({"ok": True, "result": bus.dispatch(typed).model_dump(mode="json")})
            envelope = bus.dispatch_json(json.dumps(text))
            assert type(envelope["result"]["messages"]) is list
            assert _per_call_free(json.loads(json.dumps(envelope))) == expected, text["type"]
            for message in envelope["result"]["messages"]:  # a host editing the envelope
                message["role"] = "edited"
                if isinstance(message.get("content"), list):
                    message["content"][0]["text"] = "edited"
                    message["content"][1]["image_url"]["url"] = "edited"
                for call in message.get("tool_calls") or []:
                    call["function"]["arguments"] = "edited"
                message.setdefault("tool_calls", []).append("edited")
            envelope["result"]["messages"].append({"role": "user", "content": "edited"})
            again = bus.dispatch_json(json.dumps(text))
            assert _per_call_free(json.loads(json.dumps(again))) == expected, text["type"]
            assert "edited" not in json.dumps(bus.dispatch(typed).model_dump(mode="json"))
    finally:
        bus.close()
