"""The background summaries of this process (issue 17, ADR 0038): at most one per session.

Each runs on its own thread (the summary port is synchronous, and an attempt started in
one ``TurnRunner.run`` must outlive that call's event loop: the turn that uses it is a
later one). Cancelling marks the attempt and joins its thread: a cancelled attempt
never commits (the mark is read under the same lock the commit holds) and is not
recorded in the attempt log. The summary call itself cannot be interrupted, so a join
lasts at most until that call returns (``summary_timeout_seconds`` bounds it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("context_compaction.compaction")


class Cancelled(Exception):
    """The attempt was cancelled (shutdown): nothing was committed or recorded."""


@dataclass(eq=False)
class BackgroundJob:
    session_id: str
    owner: object | None = None
    cancelled: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    """What the work returned (a ``CompactOutcome`` when it got that far), or None."""
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held to check ``cancelled`` and commit in one step; ``cancel`` takes it to mark."""

    def commit_unless_cancelled(self, commit: Callable[[], Any]) -> Any:
        with self.lock:
            if self.cancelled:
                raise Cancelled
            return commit()


class BackgroundSummaries:
    """Running background attempts by session; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, BackgroundJob] = {}
        self._closed = False

    def start(
        self, session_id: str, work: Callable[[BackgroundJob], Any], owner: object | None = None
    ) -> BackgroundJob | None:
        """Run ``work(job)`` on a new thread; None (nothing started) when one is already
        running for the session or the registry is closed."""
        with self._lock:
            if self._closed or session_id in self._jobs:
                return None
            job = self._jobs[session_id] = BackgroundJob(session_id, owner)
            job.thread = threading.Thread(
                target=self._run, args=(job, work), name="ctxc-background-summary", daemon=True
            )
        job.thread.start()
        return job

    def _run(self, job: BackgroundJob, work: Callable[[BackgroundJob], Any]) -> None:
        try:
            job.result = work(job)
        except Cancelled:
            log.info("background summary cancelled", extra={"session_id": job.session_id})
        except Exception as exc:  # noqa: BLE001 - a thread has no caller to raise to
            log.warning("background summary failed",
                        extra={"session_id": job.session_id, "error_class": type(exc).__name__})
        finally:
            with self._lock:
                if self._jobs.get(job.session_id) is job:
                    del self._jobs[job.session_id]
            job.done.set()

    def running(self, session_id: str) -> BackgroundJob | None:
        with self._lock:
            return self._jobs.get(session_id)

    def cancel(self, *, owner: object | None = None, timeout: float | None = None) -> int:
        """Cancel the attempts started by ``owner`` (all of them, and refuse new ones,
        when None) and join their threads; returns how many are still running after
        ``timeout`` seconds each (0 unless a summary call outlived it)."""
        with self._lock:
            if owner is None:
                self._closed = True
            jobs = [j for j in self._jobs.values() if owner is None or j.owner is owner]
        for job in jobs:
            with job.lock:  # waits for a commit in progress to finish whole
                job.cancelled = True
        left = 0
        for job in jobs:
            if job.thread is not None and job.thread is not threading.current_thread():
                job.thread.join(timeout)
                left += job.thread.is_alive()
        return left
