"""/info is the trigger's budget (spec §16, §21.10; issue 12).

``get_context_usage`` reports the ``used_tokens`` and ``usage_source`` the next
``prepare_turn`` decides on, plus the pure local estimate; ``breakdown`` attributes
every token of that estimate, the request's own priming as ``overhead``.
"""

from __future__ import annotations

from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.tokens import REQUEST_PRIMER, TiktokenCounter
from helpers import Harness, assistant, ok, user

SID = "s"
SYSTEM = "You are a careful coding agent."
TOOLS = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object", "properties": {}}}}]


def build(h: Harness) -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for t in coding_session(3, big_output_chars=1_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("Next.", turn_id="next")]}))


def info(h: Harness) -> dict:
    return ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": SYSTEM, "tools": TOOLS}))


def prepare(h: Harness) -> dict:
    return ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM, "tools": TOOLS}))


def test_info_after_record_usage_shows_what_the_next_prepare_turn_decides_on(harness: Harness) -> None:
    h = harness
    build(h)
    first = prepare(h)
    assert info(h)["usage_source"] == "estimated" == first["usage"]["usage_source"]
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": first["request_id"], "prompt_tokens": 9_999}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [assistant("Done.", turn_id="next")]}))
    shown = info(h)
    assert "measured" in shown["usage_source"]
    decided = prepare(h)["usage"]
    for field in ("used_tokens", "usage_source", "estimated_tokens", "breakdown", "would_compact"):
        assert shown[field] == decided[field], field
    assert shown["used_tokens"] > 9_999  # the measured prompt plus the appended answer
    assert shown["estimated_tokens"] == sum(shown["breakdown"].values()) != shown["used_tokens"]
    assert "provider-measured + tail estimate; local estimate" in shown["text"]


def test_breakdown_gives_the_priming_its_own_part_and_attributes_every_token(harness: Harness) -> None:
    h = harness
    build(h)
    usage = info(h)
    counter = TiktokenCounter()
    assert usage["breakdown"]["overhead"] == REQUEST_PRIMER
    assert usage["breakdown"]["system"] == counter.count_message({"role": "system", "content": SYSTEM}, "o200k_base")
    assert sum(usage["breakdown"].values()) == usage["estimated_tokens"] == usage["used_tokens"]
    assert set(usage["breakdown"]) == {"overhead", "system", "tools", "knowledge", "plan", "summary", "history", "pinned"}
