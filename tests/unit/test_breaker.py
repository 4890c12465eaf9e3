"""The circuit breaker of automatic compaction (issue 17): read from the attempt log."""

from __future__ import annotations

from typing import Any

from context_compaction.application.contracts.ports import SummaryRequest, SummaryResult
from context_compaction.domain.errors import SummaryFailed
from helpers import Harness, ok, user

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

SID = "s"
RESERVE = 1_000


class Flaky:
    """A summarizer that fails while ``failing`` is set (a port adapter, not our code)."""

    def __init__(self) -> None:
        self.failing = True
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        if self.failing:
            raise SummaryFailed("the fake summarizer is down")
        return SummaryResult(text="Summary: the agent fixed the refund test.", provider_kind="flaky", model=request.model)


def turn(h: Harness, n: int) -> dict[str, Any]:
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user(f"Step {n}.", turn_id=f"t{n}")]}))
    return ok(h.do({"type": "prepare_turn", "session_id": SID}))


def near_the_threshold(h: Harness) -> int:
    """Twelve long turns, then a window that puts the next turn just over the threshold;
    returns the tokens used before that window."""
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for n in range(12):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"Request {n}: " + "details " * 200, turn_id=f"h{n}"),
            {"role": "assistant", "content": "Done " + "ok " * 200, "turn_id": f"h{n}"}]}))
    used = ok(h.do({"type": "get_context_usage", "session_id": SID}))["used_tokens"]
    ok(h.do({"type": "configure_session", "session_id": SID, "agent_token_limit": used + RESERVE - 50}))
    return int(used)


def breaker(h: Harness) -> dict[str, Any]:
    return ok(h.do({"type": "get_context_usage", "session_id": SID}))["compaction_breaker"]


def test_the_breaker_opens_after_three_failures_pauses_and_resets_on_success(make_harness, caplog) -> None:
    flaky = Flaky()
    h = make_harness("b", adapters={"summarizer": flaky},
                     context_compaction={"reserve_tokens": RESERVE, "keep_recent_tokens": 300,
                                         "max_consecutive_failures": 3, "breaker_pause_turns": 2})
    used = near_the_threshold(h)
    for n in range(3):
        warnings = turn(h, n)["warnings"]
        assert flaky.calls == n + 1 and any("auto compaction failed" in w for w in warnings)
    assert breaker(h) == {"open": True, "failures_in_a_row": 3, "turns_left": 2}
    for n in (3, 4):  # paused for two turns: no summary call
        warnings = turn(h, n)["warnings"]
        assert flaky.calls == 3 and any("paused after 3 failed attempts" in w for w in warnings)
    assert caplog.text.count("auto compaction paused after repeated failures") == 1  # logged once
    turn(h, 5)  # the pause is over: one more attempt, which fails and pauses again
    assert flaky.calls == 4 and breaker(h)["open"] and breaker(h)["failures_in_a_row"] == 4
    flaky.failing = False
    outcome = ok(h.do({"type": "compact", "session_id": SID}))  # manual /compact still works
    assert outcome["status"] == "compacted" and flaky.calls == 5
    assert breaker(h) == {"open": False, "failures_in_a_row": 0, "turns_left": 0}  # a success resets it


def test_over_the_hard_window_a_paused_breaker_still_trims(make_harness) -> None:
    flaky = Flaky()
    h = make_harness("w", adapters={"summarizer": flaky},
                     context_compaction={"reserve_tokens": RESERVE, "keep_recent_tokens": 300,
                                         "max_consecutive_failures": 1, "breaker_pause_turns": 5})
    used = near_the_threshold(h)
    turn(h, 0)
    assert flaky.calls == 1 and breaker(h)["open"]
    ok(h.do({"type": "configure_session", "session_id": SID, "agent_token_limit": used // 2}))
    result = turn(h, 1)
    assert flaky.calls == 1  # paused: no summary
    assert result["compaction"]["stage"] == "degraded" and result["compaction"]["degraded"]
    assert result["usage"]["used_tokens"] <= result["usage"]["effective_window_tokens"]


class ListOnly:
    """A host's own attempt log: it records and lists attempts, and keeps no count."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.listed = 0

    def record(self, session_id: str, attempt: Any) -> None:
        self.inner.record(session_id, attempt)

    def attempts(self, session_id: str, limit: int | None = None) -> list[Any]:
        self.listed += 1
        return self.inner.attempts(session_id, limit)


def _three_failures(make_harness, wrap: bool) -> tuple[Harness, list[str], ListOnly | None]:
    flaky = Flaky()
    h = make_harness("l", adapters={"summarizer": flaky},
                     context_compaction={"reserve_tokens": RESERVE, "keep_recent_tokens": 300,
                                         "max_consecutive_failures": 3, "breaker_pause_turns": 2})
    services = h.bus.services
    listed: list[str] = []
    host = None
    if wrap:
        host = services.attempts = ListOnly(services.attempts)
    else:
        ours, real = services.attempts, services.attempts.attempts
        ours.attempts = lambda session_id, limit=None: listed.append(session_id) or real(session_id, limit)
    near_the_threshold(h)
    for n in range(3):
        turn(h, n)
    return h, listed, host


def test_the_breaker_reads_the_logs_count_not_every_attempt(make_harness) -> None:
    """ADR 0052: the trigger reads the log aggregate's failures in a row (one read of
    the events after the held copy), so a compaction does not cost more in an old
    session with hundreds of attempts."""
    h, listed, _ = _three_failures(make_harness, wrap=False)
    assert breaker(h) == {"open": True, "failures_in_a_row": 3, "turns_left": 2}
    assert listed == []
    h.close()


def test_a_host_log_without_a_count_gives_the_same_breaker(make_harness) -> None:
    h, _, host = _three_failures(make_harness, wrap=True)
    assert breaker(h) == {"open": True, "failures_in_a_row": 3, "turns_left": 2}
    assert host is not None and host.listed > 0
    h.close()

# The breaker pauses exactly ``breaker_pause_turns`` turns also in a real agent loop,
# where the failing turn goes on (its reply is appended with the same turn id after the
# failed attempt) before the next turn starts.


class Down:
    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        raise SummaryFailed("the fake summarizer is down")


def finish_turn(h: Harness, n: int, *, turn_ids: bool) -> dict[str, Any]:
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
        warnings = finish_turn(h, n, turn_ids=turn_ids)["warnings"]
        if down.calls == before:
            assert any("paused after" in w for w in warnings)
            paused.append(n)
    return paused


def test_the_pause_lasts_breaker_pause_turns_with_turn_ids(make_harness) -> None:
    # turns 0-2 fail and open the breaker; 3, 4, 5 are paused; 6 tries again (and fails)
    assert _paused_turns(make_harness, turn_ids=True) == [3, 4, 5, 7]


def test_the_pause_lasts_breaker_pause_turns_without_turn_ids(make_harness) -> None:
    assert _paused_turns(make_harness, turn_ids=False) == [3, 4, 5, 7]
