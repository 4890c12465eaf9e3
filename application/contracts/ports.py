"""Ports: what the application needs from the outside world (DESIGN §2).

Infrastructure implements them; tests may substitute fakes that record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from context_compaction.domain.attempts import Attempt
from context_compaction.domain.ledger import LedgerItem
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.session import Session
from context_compaction.domain.summary import SummarySource

# Rows and views the ports return (kept importable from here).
from .views import (
    CheckpointRow,
    CommandRecord,
    RevertRecord,
    SearchHit,
    SessionRow,
    SessionSnapshotView,
    TimelineEntry,
)

T = TypeVar("T")


class ConcurrencyConflict(Exception):
    """The event store refused a save because the session moved on; reload and retry.

    ``busy`` marks a database that stayed locked or unreachable rather than a lost race.
    ``under_lock`` marks a refusal while the writer lock was held: no other writer can
    have taken the version, so it is a constraint of the database (a host command id
    another session used, a trigger): worth one more decision after ``after_conflict``
    has looked, never a retry loop.
    """

    def __init__(self, message: str = "", *, busy: bool = False, under_lock: bool = False) -> None:
        super().__init__(message)
        self.busy = busy
        self.under_lock = under_lock


class EventStore(Protocol):
    """The write side: Session aggregates stored as events."""

    def load(self, session_id: str, version: int | None = None, *, allow_stale: bool = False) -> Session:
        """The session (as of ``version``); raises ``SessionNotFound``.

        ``allow_stale`` may return a held copy that another process has since moved past:
        fine for a decision that will be saved (the save then conflicts), not for one
        that will not be.
        """
        ...

    def load_complete(self, session_id: str) -> Session:
        """The session replayed from its first event (no snapshot), kept as the held
        copy: what a command that raised ``HistoryNeeded`` decides on (ADR 0051)."""
        ...

    def is_current(self, session: Session) -> bool:
        """True when no event was stored for the session after ``session.version``."""
        ...

    def save(self, session: Session) -> None:
        """Append the session's pending events atomically (with the read model).

        Raises ``ConcurrencyConflict`` when another writer got there first (or the
        database was busy): the caller reloads and decides again.
        """
        ...

    def decide_exclusively(
        self, session_id: str, decide: Callable[[Session], T]
    ) -> tuple[T, Session, bool]:
        """Load the current session, ``decide`` and save its events while holding the
        database's writer lock, so that no other writer comes in between; returns
        (decision, session, saved). ``decide`` must not touch the database. Raises what
        ``decide`` raises (nothing saved), or ``ConcurrencyConflict(busy=True)``.
        """
        ...


class ReadModel(Protocol):
    """The query side: tables projected from the events, caught up before answering."""

    def session(self, session_id: str) -> SessionRow | None: ...

    def sessions(self, limit: int = 100, offset: int = 0) -> list[SessionRow]: ...

    def messages(
        self,
        session_id: str,
        *,
        from_seq: int = 1,
        upto_seq: int | None = None,
        include_invalidated: bool = False,
        limit: int | None = None,
    ) -> list[MessageRecord]: ...

    def session_view(
        self, session_id: str, *, tail_only: bool = True, after_seq: int = 0
    ) -> SessionSnapshotView | None:
        """Session row, active checkpoint and its visible tail in ONE snapshot.

        With ``tail_only=False`` (or no checkpoint) all visible messages; only those
        with seq > ``after_seq``.
        """
        ...

    def checkpoint(self, checkpoint_id: str) -> CheckpointRow | None: ...

    def cleared_results(self, session_id: str, upto_version: int | None = None) -> dict[int, str]:
        """seq → placeholder of the tool results cleared by session version ``upto_version``."""
        ...

    def reverts(self, session_id: str) -> list[RevertRecord]:
        """The session's reverted checkpoints, oldest revert first (issue 16); a fork's
        include its ancestors' up to the fork point."""
        ...

    def revert_command(self, command_id: str) -> RevertRecord | None:
        """The revert made with this host ``command_id``, in any session (None: none)."""
        ...

    def checkpoints(self, session_id: str) -> list[CheckpointRow]: ...

    def command(self, command_id: str) -> CommandRecord | None:
        """Where the host command id was used, in any session (None: never)."""
        ...

    def search(
        self, session_id: str, query: str, *, limit: int, include_invalidated: bool
    ) -> list[SearchHit]:
        """Messages matching every term of ``query`` (user text, never SQL), best first."""
        ...


class TimelineStore(Protocol):
    """Where checkpoint summaries become recallable memories (spec §13). Best effort."""

    def put(self, entry: TimelineEntry) -> None: ...

    def entries(
        self, session_id: str, query: str | None = None, limit: int = 20
    ) -> list[TimelineEntry]: ...


class Clock(Protocol):
    def now(self) -> datetime: ...


class IdFactory(Protocol):
    def new_id(self, prefix: str) -> str: ...


class ModelCatalog(Protocol):
    """What is known about a model without asking it (litellm's local catalog)."""

    def max_input_tokens(self, model: str) -> int | None: ...

    def provider_of(self, model: str) -> str: ...



class TokenCounter(Protocol):
    """Counts tokens the way the provider will (or biased high where it cannot know)."""

    def encoding_for(self, model: str) -> str:
        """An encoding key for ``model``; counts are cached per key."""
        ...

    def cache_key(self, encoding: str) -> str: ...

    def count_text(self, text: str, encoding: str) -> int: ...

    def count_record(self, record: MessageRecord, encoding: str) -> int:
        """One raw message with its per-message overhead."""
        ...

    def count_message(self, message: dict[str, Any], encoding: str) -> int:
        """One provider-format message (system prompt, summary block)."""
        ...

    def count_tools(self, tools: Sequence[dict[str, Any]], encoding: str) -> int: ...

    @property
    def request_overhead(self) -> int: ...


class TokenCountCache(Protocol):
    """Per-message token counts, computed once per encoding and kept in the read model."""

    def token_counts(self, session_id: str, key: str, from_seq: int) -> dict[int, int]: ...

    def store_token_counts(self, session_id: str, key: str, counts: dict[int, int]) -> None: ...


@dataclass(frozen=True)
class SummaryRequest:
    """One summary call: the prompt for a model, the structured material for others."""

    session_id: str
    model: str
    prompt: list[dict[str, str]]
    source: SummarySource
    max_output_tokens: int
    previous_provider_state: Mapping[str, Any] | None = None
    """The active checkpoint's provider-native state, if any (ADR 0039): a native
    summarizer continues from it when it made it for the same provider and model."""
    checklist: tuple[LedgerItem, ...] = ()
    """The cumulative must-keep items (issue 44, ADR 0077): the previous checkpoint's
    ledger with the covered range's items merged in, superseded values taken out; a
    summarizer keeps them first (the ledger check writes back what it leaves out)."""
    count_tokens: Callable[[str], int] | None = None
    """The session's own token counter: what ``max_output_tokens`` is measured in."""
    output_factor: float = 1.0
    """The safety factor of that counter (ADR 0008: x1.25 for a model tiktoken has no
    encoding for): a model's own tokens count up to this many each. An LLM summarizer
    asks the provider for ``max_output_tokens / output_factor`` of its tokens, so that an
    obedient summary fits ``max_output_tokens`` as the session counts it (issue 44)."""

    @property
    def provider_max_tokens(self) -> int:
        """``max_tokens`` for the provider: ``max_output_tokens`` in the model's own tokens."""
        return max(1, int(self.max_output_tokens / max(self.output_factor, 1.0)))


@dataclass(frozen=True)
class SummaryResult:
    text: str
    provider_kind: str
    model: str
    provider_state: dict[str, Any] | None = None
    """Provider-native compaction state for the checkpoint (ADR 0039), beside ``text``
    (its readable shadow); None for the readable summarizers."""
    usage: dict[str, int] | None = None
    """The summary call's measured usage (``record_usage``'s token fields), when the
    provider reported one (issue 43): priced with the attempt."""


class Summarizer(Protocol):
    """Spec §10: exactly one summary per compaction; failure raises ``SummaryFailed``."""

    def summarize(self, request: SummaryRequest) -> SummaryResult: ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    """A ``Summarizer`` that can also await its call: used when the command runs for an
    ``adispatch`` (ADR 0042). ``asummarize`` must not block the loop it runs on."""

    def summarize(self, request: SummaryRequest) -> SummaryResult: ...

    async def asummarize(self, request: SummaryRequest) -> SummaryResult: ...


class ContentEraser(Protocol):
    """Erases a purged session's content where it is stored (issue 35, ADR 0072)."""

    def erase(self, session_id: str) -> tuple[int, bool | None]:
        """Replace the content of the session's stored events by a tombstone, drop its
        snapshots, search rows and Timeline entries in one transaction; returns how
        many events were rewritten, and whether the store's files keep no old copy
        (None: the engine cannot say, ``PurgeSessionResult.files_scrubbed``)."""
        ...


class TurnLeases(Protocol):
    """Which process runs a turn on a session (ADR 0041): one lease per session, held
    by an owner until it is released or its time runs out (a crashed holder blocks the
    session for at most its lease time). Each call is its own short transaction."""

    def acquire(self, session_id: str, owner: str, seconds: float) -> bool:
        """Take the session's lease for ``seconds``; False while another owner holds
        an unexpired one."""
        ...

    def renew(self, session_id: str, owner: str, seconds: float) -> bool:
        """Extend ``owner``'s lease; False when it is no longer ``owner``'s."""
        ...

    def release(self, session_id: str, owner: str) -> None:
        """Give the lease up (nothing when it is no longer ``owner``'s)."""
        ...

    def holder(self, session_id: str) -> str | None:
        """The owner of the session's unexpired lease, or None."""
        ...


class ContextOverflow(Exception):
    """The provider refused a request as too long for its context window."""


@dataclass(frozen=True)
class ProviderReply:
    """One assistant message from the provider, in the contract's message shape."""

    message: dict[str, Any]
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    """Of ``prompt_tokens``, served from the provider's prompt cache (issue 17)."""
    cache_creation_tokens: int | None = None
    completion_tokens: int | None = None


class ChatProvider(Protocol):
    """The model a ``TurnRunner`` talks to; raises ``ContextOverflow`` on a too-long request."""

    async def complete(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ProviderReply: ...


class ToolExecutor(Protocol):
    """Runs one tool call (``{"id", "name", "arguments"}``) and returns its output text."""

    async def __call__(self, call: dict[str, Any]) -> str: ...


class AttemptLog(Protocol):
    """The compaction attempt log of each session (issue 16): its own stream, so
    recording never moves or conflicts with the session (DESIGN §15).

    A log may also offer ``streak(session_id) -> (failures, at_seq)``: the automatic
    failures since the last committed compaction and the newest one's ``at_seq``. The
    breaker then reads that instead of every attempt (ours does; ADR 0052)."""

    def record(self, session_id: str, attempt: Attempt) -> None:
        """Append one attempt durably; raises ``StorageError`` when it cannot."""
        ...

    def attempts(self, session_id: str, limit: int | None = None) -> list[Attempt]:
        """The session's attempts, newest first."""
        ...

    # A log may also keep the session's measured usages (issue 43): ``record_usage(
    # session_id, RecordedUsage)`` and ``entries(session_id)``, attempts and usages in
    # the order recorded. Ours does; without them nothing is priced.


class EventFeed(Protocol):
    """The stored events of every session, in notification order (issue 15)."""

    def read(self, after: int, limit: int, max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` events with a position above ``after`` whose stored bytes
        stay within ``max_bytes`` (at least one), each as ``{position, session_id,
        version, type, at, payload}`` (JSON-ready); and whether it stopped at a bound."""
        ...

    def read_session(self, session_id: str, from_version: int, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` events of one session from ``from_version`` on, each as
        ``{version, type, at, payload}`` (JSON-ready)."""
        ...


class StoreHandles(Protocol):
    """What the composition root built the store from, for the host's tools (``ctxc
    verify``, the read-only refusal): the infrastructure's own type fills it (issue 38:
    instead of a dict of anything)."""

    #: The database, as the operator named it (a URL without credentials, a path).
    database: str
    #: Why the store is open read-only (ADR 0071); None: it writes.
    read_only: str | None
