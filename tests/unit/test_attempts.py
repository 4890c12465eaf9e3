"""The attempt log aggregate and the breaker it drives (issues 16, 17): no storage."""

from __future__ import annotations

import pytest

from context_compaction.domain.attempts import (
    Attempt,
    CompactionAttempts,
    attempts_aggregate_id,
    breaker,
)
from context_compaction.domain.session import session_aggregate_id


def attempt(n: int, outcome: str, reason: str = "auto", seq: int = 10) -> Attempt:
    return Attempt(
        attempt_id=f"at_{n}", at=f"2026-01-01T00:00:{n:02d}Z", reason=reason, outcome=outcome,
        stage="summarized", summarizer="extractive", model="m", prompt_version="v1",
        duration_ms=5, tokens_before=100, tokens_after=40, ledger=None,
        error_code="summary_failed" if outcome == "summary_failed" else None, at_seq=seq,
    )


def test_its_id_is_derived_from_the_session_and_never_the_sessions() -> None:
    assert attempts_aggregate_id("s1") == CompactionAttempts.create_id("s1") == CompactionAttempts("s1").id
    assert attempts_aggregate_id("s1") != session_aggregate_id("s1")
    assert attempts_aggregate_id("s1") != attempts_aggregate_id("s2")


def test_auto_failures_in_a_row_count_and_a_commit_resets_them() -> None:
    log = CompactionAttempts("s1")
    for n in range(3):
        log.record(attempt(n, "summary_failed", seq=10 + n))
    log.record(attempt(3, "summary_failed", reason="manual"))
    log.record(attempt(4, "nothing_to_compact"))
    assert (log.count, log.failures_in_a_row, log.last_failure_seq) == (5, 3, 12)
    log.record(attempt(5, "compacted", reason="manual"))
    assert (log.failures_in_a_row, log.last_failure_seq) == (0, None)
    events = log.collect_events()
    assert [type(e).__name__ for e in events] == ["Started"] + ["AttemptRecorded"] * 6
    assert Attempt.from_record(events[1].attempt) == attempt(0, "summary_failed", seq=10)


def test_an_unknown_outcome_is_refused_and_records_nothing() -> None:
    log = CompactionAttempts("s1")
    log.collect_events()
    with pytest.raises(ValueError):
        log.record(attempt(0, "exploded"))
    assert log.collect_events() == [] and log.count == 0


@pytest.mark.parametrize(
    ("failures", "since", "expected"),
    [(2, 0, (False, 0)), (3, 0, (True, 5)), (3, 4, (True, 1)), (3, 5, (False, 0)), (7, 2, (True, 3))],
)
def test_the_breaker_opens_after_max_failures_and_pauses_for_the_turns(failures: int, since: int, expected: tuple[bool, int]) -> None:
    state = breaker(failures, since, max_failures=3, pause_turns=5)
    assert (state.open, state.turns_left) == expected
    assert state.failures_in_a_row == failures


def test_zero_max_failures_disables_the_breaker() -> None:
    assert not breaker(50, 0, max_failures=0, pause_turns=5).open
