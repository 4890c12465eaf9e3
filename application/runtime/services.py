"""What handlers get: the ports, wired once by ``bootstrap`` (the composition root)."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import TypeVar

from context_compaction.domain.errors import ContextCompactionError, StorageError
from context_compaction.domain.provider_messages import ProviderIdentity
from context_compaction.domain.session import Session
from context_compaction.domain.session_state import HistoryNeeded

from ..contracts.ports import (
    AttemptLog,
    Clock,
    ConcurrencyConflict,
    ContentEraser,
    EventFeed,
    EventStore,
    IdFactory,
    ModelCatalog,
    ReadModel,
    StoreHandles,
    Summarizer,
    TimelineStore,
    TokenCountCache,
    TokenCounter,
    TurnLeases,
)
from ..state.session_context import ContextCache
from .telemetry import STORAGE_RETRIES, NoTelemetry, Telemetry
from ..contracts.settings import Settings
from ..state.turnstate import TurnMemory

log = logging.getLogger("context_compaction")

T = TypeVar("T")

_LOCKS_GUARD = threading.Lock()

#: Prefix of the command ids generated for appends that came without one. They only
#: guard our own immediate retries (the aggregate's window) and are marked as ours in
#: the event (``command_generated``), never told apart by this prefix (ADR 0019).
AUTO_COMMAND_PREFIX = "auto"

#: How long one command keeps trying against concurrent writers (ADR 0021): time, not
#: a count of attempts, so that a command never fails because others were busy. Only
#: the first attempt is optimistic; after a conflict the command decides again holding
#: the database's writer lock, which cannot conflict.
COMMAND_DEADLINE_SECONDS = 60.0
#: After a lost race, commands on that session go straight to the locked path for this
#: long: under sustained contention an optimistic attempt would only lose again, and
#: each lost attempt held the writer lock for a whole insert.
CONTENDED_SECONDS = 2.0
#: Attempts while the database stays locked/unreachable; each already waited for the
#: driver's own timeout, so a few more are enough.
BUSY_ATTEMPTS = 3


@dataclass
class Services:
    settings: Settings
    events: EventStore
    read_model: ReadModel
    clock: Clock
    ids: IdFactory
    catalog: ModelCatalog
    tokens: TokenCounter
    token_cache: TokenCountCache
    summarizer: Summarizer
    timeline: TimelineStore
    after_checkpoint: list[Callable[[], None]] = field(default_factory=list)
    """Run after a checkpoint commits (the Timeline follower); failures are logged only."""
    contexts: ContextCache = field(default_factory=ContextCache)
    turns: TurnMemory = field(default_factory=TurnMemory)
    """Requests, calibrations and per-turn attempts of this process (spec §7.2)."""
    store: StoreHandles | None = None
    """What the composition root built the store from (its own type: ``ctxc verify``
    and the read-only refusal use it); None for a bus built by hand."""
    attempts: AttemptLog | None = None
    """Where compaction attempts are recorded (issue 16); None records nothing."""
    summarizer_named: Callable[[str], Summarizer] | None = None
    """A summarizer by its ``settings.summarizer`` name (``resummarize``)."""
    feed: EventFeed | None = None
    """The event feed for ``read_events``; None: none."""
    telemetry: Telemetry = field(default_factory=NoTelemetry)
    """Spans and metrics (issue 15): the no-op unless the composition root picks one."""
    leases: TurnLeases | None = None
    """Running turns across processes (ADR 0041); None: this process only."""
    eraser: ContentEraser | None = None
    """Erases a purged session's content (ADR 0072); None: the store cannot."""
    _locks: dict[str, threading.RLock] = field(default_factory=dict, repr=False)
    _contended: dict[str, float] = field(default_factory=dict, repr=False)
    """session → monotonic time until which its writers take the locked path."""

    def now(self) -> str:
        return self.clock.now().astimezone(UTC).isoformat(timespec="microseconds")

    def identity(self, model: str) -> ProviderIdentity:
        return ProviderIdentity(provider=self.catalog.provider_of(model), model=model)

    def session_lock(self, session_id: str) -> threading.RLock:
        """In-process serialization of commands on one session (an optimization: the
        event store's optimistic concurrency is what makes commands correct)."""
        with _LOCKS_GUARD:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = self._locks[session_id] = threading.RLock()
            return lock

    def checkpoint_committed(self) -> None:
        for hook in self.after_checkpoint:
            try:
                hook()
            except Exception as exc:  # noqa: BLE001 - derived work never undoes a commit
                log.warning(
                    "after-checkpoint hook failed", extra={"error_class": type(exc).__name__}
                )


def mutate(
    services: Services,
    session_id: str,
    decide: Callable[[Session], T],
    *,
    deadline_seconds: float = COMMAND_DEADLINE_SECONDS,
    after_conflict: Callable[[], None] | None = None,
) -> tuple[T, Session, bool]:
    """Load → decide → save; after a lost race, decide again under the writer lock.

    ``decide`` runs the aggregate's command method; if it raises, nothing is saved. It
    must not use the database: it may run holding the writer lock (ADR 0021). What has
    to be looked up again after a lost race goes in ``after_conflict``, which runs
    before the next decision, outside that lock, and may raise to end the command.
    Returns the decision, the session and whether any event was saved.
    """
    with services.session_lock(session_id):
        return _mutate(services, session_id, decide, deadline_seconds, after_conflict)


def _mutate(
    services: Services,
    session_id: str,
    decide: Callable[[Session], T],
    deadline_seconds: float,
    after_conflict: Callable[[], None] | None,
) -> tuple[T, Session, bool]:
    now = time.monotonic()
    give_up_at = now + deadline_seconds
    busy = 0
    refused = 0
    stale_ok = True
    exclusive = services._contended.get(session_id, 0.0) > now
    attempt = 0
    rebuilt = 0
    while True:
        attempt += 1
        try:
            if exclusive:
                return services.events.decide_exclusively(session_id, decide)
            outcome = _decide_optimistically(services, session_id, decide, stale_ok)
            if outcome is None:
                stale_ok = False
                continue
            return outcome
        except HistoryNeeded:
            # A rare command names an old seq; the held copy (from a snapshot) lacks
            # closed tool groups: decide again on a full replay (ADR 0051).
            rebuilt += 1
            if rebuilt > 3:
                raise
            services.events.load_complete(session_id)
        except ConcurrencyConflict as conflict:
            stale_ok = False
            if conflict.busy:
                busy += 1
            elif conflict.under_lock:
                refused += 1
            else:
                exclusive = True  # another writer won: the next attempt cannot lose
                _mark_contended(services, session_id)
            _give_up_if_final(conflict, session_id, busy=busy, refused=refused,
                              can_explain=after_conflict is not None)
            if time.monotonic() >= give_up_at:
                raise StorageError(
                    f"gave up after {deadline_seconds:g} s: the session kept changing under "
                    "this command; nothing was written, retry the command",
                    details={"session_id": session_id, "attempts": attempt},
                ) from None
            services.telemetry.add(
                STORAGE_RETRIES, 1, {"cause": "busy" if conflict.busy else "conflict"}
            )
            log.debug(
                "write conflict, retrying",
                extra={"session_id": session_id, "attempt": attempt, "busy": conflict.busy},
            )
            if conflict.busy:
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2**attempt)))
            elif after_conflict is not None:
                after_conflict()  # (a busy save learned nothing: its retry's save tells)


def _give_up_if_final(conflict: ConcurrencyConflict, session_id: str, *, busy: int, refused: int,
                      can_explain: bool) -> None:
    """Raise ``StorageError`` when retrying cannot help: the database stayed busy, or a
    constraint refused the rows under the writer lock twice (or once, with nothing to
    explain it)."""
    if conflict.busy and busy >= BUSY_ATTEMPTS:
        raise StorageError(
            f"the database stayed locked or unreachable ({conflict}); nothing "
            "was written, retry the command",
            details={"session_id": session_id, "attempts": busy, "cause": str(conflict)},
        ) from None
    if not conflict.busy and conflict.under_lock and (refused > 1 or not can_explain):
        # A constraint refused the rows under the writer lock: the same decision would
        # be refused again until the deadline (60 s, seen on SQLite with a trigger).
        # ``after_conflict`` may name a known cause (a command id another session took)
        # before one more decision; a second refusal is final.
        raise StorageError(
            f"the database refused the write: {conflict}; nothing was written",
            details={"session_id": session_id, "cause": str(conflict)},
        ) from None


def _decide_optimistically(
    services: Services, session_id: str, decide: Callable[[Session], T], stale_ok: bool
) -> tuple[T, Session, bool] | None:
    """Decide on the held copy (no read round trip) and save; if the copy was stale, the
    save conflicts. None: a refusal or a no-op came from a stale copy, decide again."""
    session = services.events.load(session_id, allow_stale=stale_ok)
    refusal: ContextCompactionError | None = None
    try:
        result = decide(session)
    except ContextCompactionError as exc:
        refusal = exc
    if refusal is not None or not session.pending_events:
        # A refusal or a no-op must come from the current state, never an old copy.
        if stale_ok and not services.events.is_current(session):
            return None
        if refusal is not None:
            raise refusal
        return result, session, False
    services.events.save(session)
    return result, session, True


def _mark_contended(services: Services, session_id: str) -> None:
    now = time.monotonic()
    contended = services._contended
    with _LOCKS_GUARD:
        if len(contended) > 1000:  # forget sessions whose contention is over
            for key in [k for k, until in contended.items() if until <= now]:
                del contended[key]
        contended[session_id] = now + CONTENDED_SECONDS
