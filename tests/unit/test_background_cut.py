"""The background summary plans the cut ``compact_context`` plans (ADR 0038): its keep
window leaves the pinned messages and the checklist their room (``keep_beside_pins``),
so a pinned session is not refused in the background for a cut the foreground would
not have made (each refusal is a failed automatic attempt for the breaker)."""

from __future__ import annotations

from typing import Any

from context_compaction.application.compacting.background_compaction import start_background_compaction
from context_compaction.application.contracts import commands as c
from backends import MakeHarness
from helpers import Harness, ok

SID = "s"
#: threshold 18,000; keep_recent_tokens above half of it: ``budget.keep`` is 9,000.
SETTINGS: dict[str, Any] = {
    "summarizer": "extractive",
    "models": {"gpt-4o": {"token_limit": 20_000}},
    "context_compaction": {"keep_recent_tokens": 20_000, "reserve_tokens": 2_000, "background_ratio": 0.6},
}


def pinned_session(h: Harness) -> int:
    """A 4,000-token pinned brief, then turns until the request uses 70% of the
    threshold (over the background ratio, under the threshold); returns the tokens used."""
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        {"role": "user", "content": "Pinned brief: " + "constraint " * 4000},
        {"role": "assistant", "content": "Noted."}]}))
    ok(h.do({"type": "pin_messages", "session_id": SID, "seqs": [1]}))
    n = 0
    while True:
        usage = ok(h.do({"type": "get_context_usage", "session_id": SID}))
        if usage["used_tokens"] >= 0.7 * usage["compression_threshold_tokens"]:
            assert usage["used_tokens"] < usage["compression_threshold_tokens"]
            return int(usage["used_tokens"])
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            {"role": "user", "content": f"q{n} edit src/m{n}.py " + "w " * 60},
            {"role": "assistant", "content": f"a{n} " + "x " * 60}]}))
        n += 1


def test_a_pinned_session_is_cut_in_the_background_where_compact_would_cut_it(make_harness: MakeHarness) -> None:
    foreground = make_harness("fg", **SETTINGS)
    used = pinned_session(foreground)
    expected = ok(foreground.do({"type": "compact", "session_id": SID}))
    assert expected["status"] == "compacted"

    background = make_harness("bg", **SETTINGS)
    assert pinned_session(background) == used
    svc = background.bus.services
    assert start_background_compaction(svc, c.PrepareTurn(session_id=SID))
    job = svc.turns.background.running(SID)
    assert job is not None and job.done.wait(30)
    attempts = ok(background.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]
    assert [(a["reason"], a["outcome"]) for a in attempts] == [("auto", "compacted")], attempts
    committed = ok(background.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert [cp["first_retained_seq"] for cp in committed] == [expected["first_retained_seq"]]
    assert committed[0]["tokens_after"] == expected["tokens_after"] < used
