"""``SqlAttemptLog``: the application's AttemptLog port over ``SessionsApplication``.

Each session's attempts are one ``CompactionAttempts`` aggregate in the same event
store (ADR 0032): a save never moves the session's version, and two processes recording
at once conflict only with each other (the loser reloads and appends again).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from context_compaction.domain.attempts import (
    Attempt,
    CompactionAttempts,
    RecordedUsage,
    attempts_aggregate_id,
    newest_first,
)
from context_compaction.domain.errors import StorageError

from ..database import StorageBusy, storage_errors, storage_failure
from .application import SessionsApplication
from .store import evict, replay

_TRIES = 8


class SqlAttemptLog:
    def __init__(self, app: SessionsApplication) -> None:
        self.app = app
        #: Called after a write that may quote the session's content (bootstrap: the
        #: purge's ``erase_if_purged``, for a write racing a purge; ADR 0072).
        self.after_content_write: Callable[[str], None] | None = None

    def _load(self, session_id: str) -> CompactionAttempts | None:
        try:
            with storage_errors():
                found: Any = self.app.repository.get(
                    attempts_aggregate_id(session_id), projector_func=replay
                )
        except AggregateNotFoundError:
            return None
        return found  # type: ignore[no-any-return]

    def record(self, session_id: str, attempt: Attempt) -> None:
        self._append(session_id, lambda log: log.record(attempt))
        if self.after_content_write is not None and attempt.ledger:
            self.after_content_write(session_id)

    def record_usage(self, session_id: str, usage: RecordedUsage) -> None:
        """One request's measured usage, in the same stream (issue 43)."""
        self._append(session_id, lambda log: log.record_usage(usage))

    def record_candidate(self, session_id: str, candidate: dict[str, Any]) -> None:
        """A dry run's candidate, kept until committed or stale (issue 43)."""
        self._append(session_id, lambda log: log.record_candidate(candidate))
        if self.after_content_write is not None:
            self.after_content_write(session_id)

    def _events(self, session_id: str) -> list[Any]:
        with storage_errors():
            return list(self.app.events.get(attempts_aggregate_id(session_id)))

    def candidate(self, session_id: str, candidate_id: str) -> dict[str, Any] | None:
        for e in reversed(self._events(session_id)):
            if (isinstance(e, CompactionAttempts.CandidatePrepared)  # type: ignore[attr-defined]
                    and e.candidate.get("candidate_id") == candidate_id):
                return dict(e.candidate)
        return None

    def _append(self, session_id: str, apply: Any) -> None:
        for n in range(_TRIES):
            log = self._load(session_id) or CompactionAttempts(session_id)
            apply(log)
            try:
                self.app.save(log)
                return
            except Exception as exc:
                # (the held copy has the unsaved attempt applied)
                evict(self.app.repository.cache, attempts_aggregate_id(session_id))
                failure = None if isinstance(exc, IntegrityError) else storage_failure(exc)
                # IntegrityError: another process appended to this log first.
                retry = isinstance(exc, IntegrityError) or isinstance(failure, StorageBusy)
                if not retry:
                    raise (failure or exc) from exc
            time.sleep(random.uniform(0.002, 0.02) * (n + 1))
        raise StorageError("the compaction attempt log stayed contended or busy")

    def streak(self, session_id: str) -> tuple[int, int | None]:
        """(automatic failures since the last committed compaction, the newest one's
        ``at_seq``): the log aggregate's own state, from the held copy brought up to
        date (one query), not every attempt the session ever had (ADR 0052)."""
        log = self._load(session_id)
        if log is None:
            return 0, None
        return log.failures_in_a_row, log.last_failure_seq

    def attempts(self, session_id: str, limit: int | None = None) -> list[Attempt]:
        return newest_first([e for e in self.entries(session_id) if isinstance(e, Attempt)], limit)

    def entries(self, session_id: str) -> list[Attempt | RecordedUsage]:
        """Attempts and usages in the order they were recorded (issue 43).

        A request is billed once: a ``record_usage`` retried for the same request (its
        answer lost, or sent by two processes) is recorded again, and only its last
        figures count, at the place of the first."""
        out: list[Attempt | RecordedUsage] = []
        usage_at: dict[str, int] = {}
        for e in self._events(session_id):
            if isinstance(e, CompactionAttempts.AttemptRecorded):  # type: ignore[attr-defined]
                out.append(Attempt.from_record(e.attempt))
            elif isinstance(e, CompactionAttempts.UsageRecorded):  # type: ignore[attr-defined]
                usage = RecordedUsage.from_record(e.usage)
                if usage.request_id in usage_at:
                    out[usage_at[usage.request_id]] = usage
                else:
                    usage_at[usage.request_id] = len(out)
                    out.append(usage)
        return out
