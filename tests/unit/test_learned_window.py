"""A window learned from an overflow error is history: ``Session.WindowLearned`` (issue 12).

A new process — a restarted worker, ``ctxc info`` — budgets with it instead of
overflowing again; it is stored as the provider's number and does not move the
context generation (docs/design.md §15).
"""

from __future__ import annotations

import json

import pytest

from context_compaction.domain.errors import InvalidCommand
from context_compaction.domain.session import Session
from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, ok, user

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

SID = "s"
SYSTEM = "You are a careful coding agent."
TEXT = ("This model's maximum context length is {n} tokens. However, your messages resulted in {p} tokens. "
        "Please reduce the length of the messages.")


def build(h: Harness) -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for t in coding_session(4, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("Next.", turn_id="next")]}))


def usage(h: Harness, **extra) -> dict:
    return ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": SYSTEM, **extra}))


def learned_events(h: Harness) -> list[dict]:
    rows = h.stored_events("context_compaction:Session.WindowLearned")
    return [{"version": v, **json.loads(state)} for v, _, state in rows]


def overflow(h: Harness, n: int, p: int | None = None) -> tuple[dict, dict]:
    """Prepare a request and report it refused: window ``n``, the provider counting ``p``
    (default: 20 % more than our estimate of the request)."""
    first = ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM}))
    assert first["usage"]["usage_source"] == "estimated"  # used_tokens is our estimate
    p = p or first["usage"]["used_tokens"] * 6 // 5
    retry = ok(h.do({"type": "recover_overflow", "session_id": SID, "request_id": first["request_id"],
                     "error_message": TEXT.format(n=n, p=p)}))
    return first, retry


def test_a_restarted_process_budgets_with_the_window_the_provider_reported(make_harness) -> None:
    h = make_harness("w", context_compaction={"keep_recent_tokens": 3_000})
    build(h)
    assert usage(h)["effective_window_tokens"] == 128_000
    first, retry = overflow(h, n=9_000)
    estimate = first["usage"]["used_tokens"]
    [event] = learned_events(h)
    assert (event["provider"], event["model"], event["window"]) == ("openai", "gpt-4o", 9_000)  # the provider's N
    assert (event["prompt_tokens"], event["estimated_tokens"]) == (estimate * 6 // 5, estimate)
    expected = 9_000 * estimate // (estimate * 6 // 5)
    assert retry["usage"]["effective_window_tokens"] == expected
    h.reopen()  # a new process: nothing in memory
    after = usage(h)
    assert after["effective_window_tokens"] == expected and after["window_source"] == "provider overflow error"
    assert usage(h, model="gpt-4o-mini")["effective_window_tokens"] == 128_000  # another model: its own
    h.bus.services.read_model.rebuild()  # a projection like any other
    assert usage(h)["effective_window_tokens"] == expected


def test_learning_a_window_does_not_move_the_context_generation(make_harness) -> None:
    h = make_harness("w", context_compaction={"keep_recent_tokens": 3_000})
    build(h)
    overflow(h, n=9_000, p=20_000)
    [event] = learned_events(h)
    at = lambda version: ok(h.do({"type": "replay_session", "session_id": SID, "at_version": version}))  # noqa: E731
    before, learned = at(event["version"] - 1), at(event["version"])
    assert learned["context_generation"] == before["context_generation"]
    # budget input, not context content
    assert learned["projection"]["messages"] == before["projection"]["messages"]


def test_the_latest_report_for_a_model_wins(make_harness) -> None:
    h = make_harness("w", context_compaction={"keep_recent_tokens": 3_000})
    build(h)
    overflow(h, n=9_000, p=9_500)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        {"role": "assistant", "content": "ok", "turn_id": "next"}, user("More.", turn_id="more")]}))
    overflow(h, n=12_000, p=12_500)
    assert [e["window"] for e in learned_events(h)] == [9_000, 12_000]
    h.reopen()
    estimate = learned_events(h)[-1]["estimated_tokens"]
    assert usage(h)["effective_window_tokens"] == min(12_000, 12_000 * estimate // 12_500)


@pytest.mark.parametrize("bad", [0, -5])
def test_a_window_must_be_positive(bad: int) -> None:
    session = Session.start("s", "gpt-4o", None, created_at="2026-01-01T00:00:00+00:00")
    with pytest.raises(InvalidCommand):
        session.learn_window(provider="openai", model="gpt-4o", window=bad, prompt_tokens=None,
                             estimated_tokens=None, created_at="2026-01-01T00:00:00+00:00")
    assert len(session.pending_events) == 1  # only Started
