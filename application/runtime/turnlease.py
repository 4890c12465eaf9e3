"""One running turn per session, across processes (issue 15, ADR 0041).

``TurnRunner.run`` takes the session's lease (``TurnLeases``, a row in the session's
database) before it appends anything, keeps it alive while the turn runs and gives it
up at the end. A second ``run`` on the session — in this process or another one — is
refused with ``turn_in_progress``, and so is a manual ``compact``. A holder that
crashed blocks the session until its lease runs out (``seconds``), never for good.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from types import TracebackType

from context_compaction.domain.errors import ContextCompactionError, TurnInProgress

from ..contracts.ports import TurnLeases
from .services import Services

log = logging.getLogger("context_compaction.runner")

#: How long a lease lasts without renewal: the longest a crashed process blocks its
#: session. The holder renews it three times per period.
DEFAULT_LEASE_SECONDS = 30.0


def refuse_while_turn_runs(svc: Services, session_id: str) -> None:
    """Spec §11.1: a manual compaction never interrupts a running turn, whichever
    process runs it; it is refused with ``turn_in_progress``."""
    svc.turns.refuse_while_turn_runs(session_id)
    if svc.leases is not None and svc.leases.holder(session_id) is not None:
        raise _in_progress(session_id, "/compact will not interrupt it")


def _in_progress(session_id: str, consequence: str) -> TurnInProgress:
    return TurnInProgress(
        f"a turn is running in session {session_id!r}; {consequence}. "
        "Run it again when the turn has finished.",
        details={"session_id": session_id},
    )


class TurnLease:
    """The lease of one running turn: ``async with TurnLease(...)`` takes it (or raises
    ``TurnInProgress``), renews it in the background, and releases it on the way out."""

    def __init__(self, svc: Services, session_id: str, seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        if seconds <= 0:
            raise ValueError("a lease needs a positive number of seconds")
        self.leases: TurnLeases | None = svc.leases
        self.session_id = session_id
        self.seconds = seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.lost = False
        self._renewed_at = 0.0
        self._renewing: asyncio.Task[None] | None = None

    async def __aenter__(self) -> TurnLease:
        if self.leases is not None:
            started = time.monotonic()
            taken = await self._acquire(self.leases)
            if not taken:
                raise _in_progress(self.session_id, "a second turn will not run beside it")
            self._renewed_at = started
            self._renewing = asyncio.create_task(self._renew_until_cancelled())
        return self

    async def _acquire(self, leases: TurnLeases) -> bool:
        """The upsert in a thread. Cancelled while it waits for the database, it still
        runs and may take the lease, with no ``__aexit__`` to give it back: it is
        released then (by the thread, or here when the thread had finished), or the
        session would stay blocked for ``seconds`` with no turn running."""
        guard = threading.Lock()
        answer: list[bool] = []  # the upsert's, once it has one
        abandoned: list[bool] = []  # the caller was cancelled

        def take() -> bool:
            taken = leases.acquire(self.session_id, self.owner, self.seconds)
            with guard:
                answer.append(taken)
                orphaned = bool(abandoned)
            if taken and orphaned:
                self._release_quietly(leases)
            return taken

        try:
            return await asyncio.to_thread(take)
        except asyncio.CancelledError:
            with guard:
                abandoned.append(True)
                orphan = bool(answer and answer[0])
            if orphan:
                threading.Thread(target=self._release_quietly, args=(leases,), daemon=True).start()
            raise

    def _release_quietly(self, leases: TurnLeases) -> None:
        try:
            leases.release(self.session_id, self.owner)
        except ContextCompactionError as failure:  # it runs out by itself
            log.warning("turn lease not released", extra={
                "session_id": self.session_id, "error_code": failure.code})

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
            await asyncio.gather(self._renewing, return_exceptions=True)
        if self.leases is not None and not self.lost:
            try:
                await asyncio.to_thread(self.leases.release, self.session_id, self.owner)
            except ContextCompactionError as failure:  # it runs out by itself
                log.warning("turn lease not released", extra={
                    "session_id": self.session_id, "error_code": failure.code})

    async def ensure(self) -> None:
        """Before each command of the turn: refuse to go on once another turn has taken
        the session. When the last renewal is older than half the lease (the loop was
        blocked, renewals failed), renew now rather than trust it."""
        if self.leases is not None and not self.lost and (
            time.monotonic() - self._renewed_at > self.seconds / 2
        ):
            await self._renew()
        if self.lost:
            raise _in_progress(
                self.session_id, "this turn's lease ran out and another turn took the session"
            )

    async def _renew(self) -> None:
        assert self.leases is not None
        started = time.monotonic()
        kept = await asyncio.to_thread(self.leases.renew, self.session_id, self.owner, self.seconds)
        if kept:
            self._renewed_at = max(self._renewed_at, started)
        elif not self.lost:
            self.lost = True
            log.warning("turn lease lost", extra={"session_id": self.session_id})

    async def _renew_until_cancelled(self) -> None:
        while not self.lost:
            await asyncio.sleep(self.seconds / 3)
            try:
                await self._renew()
            except ContextCompactionError as failure:  # a storage error: try again next time
                log.warning("turn lease not renewed", extra={
                    "session_id": self.session_id, "error_code": failure.code})
