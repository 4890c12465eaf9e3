"""Review of issue 17 (rev17): the breaker pauses exactly ``breaker_pause_turns`` turns
also in a real agent loop, where the failing turn goes on (its reply is appended with
the same turn id after the failed attempt) before the next turn starts."""

from __future__ import annotations

from typing import Any

from context_compaction.application.contracts.ports import SummaryRequest, SummaryResult
from context_compaction.domain.errors import SummaryFailed
from helpers import Harness, ok, user
from test_breaker import near_the_threshold  # (the same session, SID and RESERVE)

BACKENDS = ("memory",)

SID = "s"
RESERVE = 1_000


class Down:
    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        raise SummaryFailed("the fake summarizer is down")


def turn(h: Harness, n: int, *, turn_ids: bool) -> dict[str, Any]:
    """Start turn ``n`` (prepare), then finish it with the assistant's reply."""
    tid = {"turn_id": f"t{n}"} if turn_ids else {}
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user(f"Step {n}.", **tid)]}))
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [{"role": "assistant", "content": f"Did step {n}.", **tid}]}))
    return request


def _paused_turns(make_harness, turn_ids: bool) -> list[int]:
    down = Down()
    h = make_harness("b", adapters={"summarizer": down},
                     context_compaction={"reserve_tokens": RESERVE, "keep_recent_tokens": 300,
                                         "max_consecutive_failures": 3, "breaker_pause_turns": 3})
    near_the_threshold(h)
    paused = []
    for n in range(8):
        before = down.calls
        warnings = turn(h, n, turn_ids=turn_ids)["warnings"]
        if down.calls == before:
            assert any("paused after" in w for w in warnings)
            paused.append(n)
    return paused


def test_the_pause_lasts_breaker_pause_turns_with_turn_ids(make_harness) -> None:
    # turns 0-2 fail and open the breaker; 3, 4, 5 are paused; 6 tries again (and fails)
    assert _paused_turns(make_harness, turn_ids=True) == [3, 4, 5, 7]


def test_the_pause_lasts_breaker_pause_turns_without_turn_ids(make_harness) -> None:
    assert _paused_turns(make_harness, turn_ids=False) == [3, 4, 5, 7]
