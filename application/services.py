"""What handlers get: the ports, wired once by ``bootstrap`` (the composition root)."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any, TypeVar

from context_compaction.domain.errors import ContextCompactionError, StorageError
from context_compaction.domain.projection import ProviderIdentity
from context_compaction.domain.session import Session

from .ports import (
    Clock,
    ConcurrencyConflict,
    EventStore,
    IdFactory,
    ModelCatalog,
    ReadModel,
    Summarizer,
    TimelineStore,
    TokenCountCache,
    TokenCounter,
)
from .settings import Settings

if TYPE_CHECKING:
    from .context import ContextCache

log = logging.getLogger("context_compaction")

T = TypeVar("T")

_LOCKS_GUARD = threading.Lock()

#: Prefix of the command ids generated for appends that came without one. They only
#: guard our own immediate retries (the aggregate's window) and are marked as ours in
#: the event (``command_generated``), never told apart by this prefix (ADR 0019).
AUTO_COMMAND_PREFIX = "auto"

#: Attempts for one command against concurrent writers (optimistic concurrency).
COMMAND_ATTEMPTS = 12
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
    contexts: ContextCache = field(default_factory=lambda: _context_cache())
    extra: dict[str, Any] = field(default_factory=dict)
    _locks: dict[str, threading.RLock] = field(default_factory=dict, repr=False)

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


def _context_cache() -> ContextCache:
    from .context import ContextCache

    return ContextCache()


def mutate(
    services: Services,
    session_id: str,
    decide: Callable[[Session], T],
    *,
    attempts: int = COMMAND_ATTEMPTS,
) -> tuple[T, Session, bool]:
    """Load → decide → save, again from a fresh load when another writer won the race.

    ``decide`` runs the aggregate's command method; if it raises, nothing is saved.
    Returns the decision, the session and whether any event was saved.
    """
    with services.session_lock(session_id):
        return _mutate(services, session_id, decide, attempts)


def _mutate(
    services: Services, session_id: str, decide: Callable[[Session], T], attempts: int
) -> tuple[T, Session, bool]:
    busy = 0
    stale_ok = True
    for attempt in range(attempts):
        # Decide on the held copy (no read round trip); if it was stale, the save below
        # conflicts and the next attempt reloads.
        session = services.events.load(session_id, allow_stale=stale_ok)
        refusal: ContextCompactionError | None = None
        try:
            result = decide(session)
        except ContextCompactionError as exc:
            refusal = exc
        if refusal is not None or not session.pending_events:
            # A refusal or a no-op must come from the current state, never an old copy.
            if stale_ok and not services.events.is_current(session):
                stale_ok = False
                continue
            if refusal is not None:
                raise refusal
            return result, session, False
        try:
            services.events.save(session)
        except ConcurrencyConflict as conflict:
            stale_ok = False
            if conflict.busy:
                busy += 1
                if busy >= BUSY_ATTEMPTS:
                    raise StorageError(
                        "the database stayed locked or unreachable; nothing was written, "
                        "retry the command",
                        details={"session_id": session_id, "attempts": busy},
                    ) from None
            log.debug(
                "write conflict, retrying",
                extra={"session_id": session_id, "attempt": attempt + 1, "busy": conflict.busy},
            )
            time.sleep(random.uniform(0, min(0.2, 0.002 * 2**attempt)))
            continue
        return result, session, True
    raise StorageError(
        f"gave up after {attempts} attempts: the session kept changing under this command",
        details={"session_id": session_id, "attempts": attempts},
    )
