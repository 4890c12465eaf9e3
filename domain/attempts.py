"""The compaction attempt log and the circuit breaker it drives (issues 16 and 17).

Every compaction attempt — manual, auto or overflow, whatever its outcome — is recorded
durably in its own aggregate (one per session, its id derived from the session id), so
recording it never conflicts with or moves the session: its version and context
generation stay where the attempt found them (DESIGN §15).

The breaker is a function of that log: after ``max_failures`` failed automatic attempts
in a row, automatic compaction pauses for ``pause_turns`` turns; any compaction that
commits closes it again. Because it is read from events, every process serving the
session sees the same state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

ATTEMPTS_NAMESPACE = UUID("3b0f3a52-8a4e-5c0f-b1c5-2d7f6e9a4c13")
OUTCOMES = ("compacted", "nothing_to_compact", "summary_failed", "stale_candidate", "degraded", "cleared",
            "candidate")
#: An attempt that ended in one of these counts against the breaker.
FAILURES = ("summary_failed",)


def attempts_aggregate_id(session_id: str) -> UUID:
    return uuid5(ATTEMPTS_NAMESPACE, session_id)


@dataclass(frozen=True)
class Attempt:
    """One recorded attempt, as listed by ``list_compaction_attempts``."""

    attempt_id: str
    at: str
    reason: str
    outcome: str
    stage: str | None
    summarizer: str | None
    model: str | None
    prompt_version: str | None
    duration_ms: int
    tokens_before: int
    tokens_after: int
    ledger: dict[str, Any] | None
    error_code: str | None
    at_seq: int  # the session's newest seq when the attempt started: turns are counted from it
    summary_usage: dict[str, Any] | None = None
    """The summary call's own measured usage (issue 43): ``model`` and the
    ``record_usage`` token fields; None when the summarizer reported none."""
    candidate_id: str | None = None
    """A dry run's candidate (issue 43): on its ``candidate`` attempt (which holds the
    summary call) and on the attempt that committed it (which made no call)."""
    nothing_reason: str | None = None
    """A ``nothing_to_compact`` attempt's cause (``CompactOutcome.nothing_reason``)."""
    checkpoint_id: str | None = None
    """The checkpoint a committed attempt made; None on other outcomes and on records
    written before it was kept (matching by numbers and time then picked the wrong one
    of two same-sized checkpoints)."""

    def to_record(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Attempt:
        return cls(**{k: record.get(k) for k in cls.__dataclass_fields__})


class CompactionAttempts(Aggregate):
    """The attempt log of one session. Its state is only what the breaker needs."""

    TOPIC = "context_compaction:CompactionAttempts"
    INITIAL_VERSION = 1

    class Created(Aggregate.Created):
        # Unused (``Started`` is the creation event), as in ``Session``.
        TOPIC = "context_compaction:CompactionAttempts.Created"

    @staticmethod
    def create_id(session_id: str) -> UUID:
        return attempts_aggregate_id(session_id)

    @event("Started", topic="context_compaction:CompactionAttempts.Started")
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.count = 0
        self.failures_in_a_row = 0
        self.last_failure_seq: int | None = None

    def record(self, attempt: Attempt) -> None:
        if attempt.outcome not in OUTCOMES:
            raise ValueError(f"unknown attempt outcome {attempt.outcome!r}")
        self._recorded(attempt=attempt.to_record())

    def record_usage(self, usage: RecordedUsage) -> None:
        self._usage_recorded(usage=usage.to_record())

    @event("UsageRecorded", topic="context_compaction:CompactionAttempts.UsageRecorded")
    def _usage_recorded(self, usage: dict[str, Any]) -> None:
        """In the attempts' stream, so that one read orders requests and compactions
        (the turns until the next compaction are counted from it); the breaker's state
        does not look at it."""

    def record_candidate(self, candidate: dict[str, Any]) -> None:
        self._candidate_prepared(candidate=candidate)

    @event("CandidatePrepared", topic="context_compaction:CompactionAttempts.CandidatePrepared")
    def _candidate_prepared(self, candidate: dict[str, Any]) -> None:
        """A dry run's candidate (issue 43): ``candidate_id``, ``checkpoint`` (its
        record), ``kept_turns``; ``commit_candidate`` reads it back from the stream."""

    @event("AttemptRecorded", topic="context_compaction:CompactionAttempts.AttemptRecorded")
    def _recorded(self, attempt: dict[str, Any]) -> None:
        self.count += 1
        outcome, reason = attempt.get("outcome"), attempt.get("reason")
        if outcome == "compacted":
            self.failures_in_a_row = 0
            self.last_failure_seq = None
        elif outcome in FAILURES and reason == "auto":
            self.failures_in_a_row += 1
            self.last_failure_seq = attempt.get("at_seq")


@dataclass(frozen=True)
class RecordedUsage:
    """One ``record_usage`` of the session's requests, kept durably for its cost (issue 43)."""

    request_id: str
    at: str
    model: str
    prompt_tokens: int
    cached_tokens: int
    cache_creation_tokens: int
    completion_tokens: int
    history_count: int  # the history messages the request carried

    def to_record(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RecordedUsage:
        return cls(**{k: record.get(k) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Breaker:
    """Whether automatic compaction is paused, and why."""

    open: bool
    failures_in_a_row: int
    turns_left: int = 0

    def to_record(self) -> dict[str, Any]:
        return {"open": self.open, "failures_in_a_row": self.failures_in_a_row, "turns_left": self.turns_left}


def breaker(
    failures_in_a_row: int,
    turns_since_last_failure: int,
    *,
    max_failures: int,
    pause_turns: int,
) -> Breaker:
    """The breaker for a log with ``failures_in_a_row`` failed auto attempts, the last one
    ``turns_since_last_failure`` turns ago. ``max_failures`` 0 disables it."""
    if max_failures <= 0 or failures_in_a_row < max_failures:
        return Breaker(False, failures_in_a_row)
    left = pause_turns - turns_since_last_failure
    return Breaker(left > 0, failures_in_a_row, max(0, left))


def newest_first(attempts: Sequence[Attempt], limit: int | None = None) -> list[Attempt]:
    out = sorted(attempts, key=lambda a: (a.at, a.attempt_id), reverse=True)
    return out if limit is None else out[:limit]
