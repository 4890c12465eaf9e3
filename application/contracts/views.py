"""What the read model hands the application: rows and views, plain frozen data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from context_compaction.domain.budget import LearnedWindow
from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.messages import MessageRecord


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    model: str
    agent_token_limit: int | None
    version: int
    next_seq: int
    context_generation: int
    active_checkpoint_id: str | None
    message_count: int
    invalidated_count: int
    checkpoint_count: int
    deleted: bool
    created_at: str
    updated_at: str
    learned_windows: Mapping[str, LearnedWindow] = field(default_factory=dict)
    """model → the window a provider reported in an overflow error (``WindowLearned``)."""
    cleared_count: int = 0
    """How many tool results have been cleared (``ToolResultsCleared``, issue 17)."""
    parent_session_id: str | None = None
    """The session this one was forked from or spawned by (issue 42)."""


@dataclass(frozen=True)
class CommandRecord:
    """Where a host command id was used: command ids are unique across all sessions."""

    command_id: str
    session_id: str
    kind: str
    """``start_session`` or ``append_messages``."""
    first_seq: int
    last_seq: int

    @property
    def seqs(self) -> list[int]:
        return list(range(self.first_seq, self.last_seq + 1))


@dataclass(frozen=True, kw_only=True)
class CheckpointRow(Checkpoint):
    """A stored checkpoint: the ``Checkpoint`` (its one definition, ADR 0025) and where
    it is stored (its session, the session version that committed it)."""

    session_id: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        record = self.to_record()
        return {
            "checkpoint_id": self.checkpoint_id,
            "id": self.checkpoint_id,
            "session_id": self.session_id,
            **{k: v for k, v in record.items() if k not in ("checkpoint_id", "ledger", "provider_state")},
            "ledger": self.ledger_report,  # (coverage only: the items stay in the event)
            # Who made the native state (ADR 0039); the opaque state stays in the event.
            "native_state": _native_descriptor(self.provider_state),
            "version": self.version,
        }


def _native_descriptor(state: Any) -> dict[str, Any] | None:
    if not state:
        return None
    return {key: state.get(key) for key in ("provider", "model", "kind")}


@dataclass(frozen=True)
class TimelineEntry:
    key: str
    session_id: str
    checkpoint_id: str
    content: str
    created_at: str


@dataclass
class SessionSnapshotView:
    """The read model's view of one session at one moment (one read transaction)."""

    session: SessionRow
    checkpoint: CheckpointRow | None
    messages: list[MessageRecord] = field(default_factory=list)
    cleared: dict[int, str] = field(default_factory=dict)
    """seq → placeholder of the cleared tool results among ``messages`` (a full read only)."""
    pinned: list[MessageRecord] = field(default_factory=list)
    """Pinned visible messages below the checkpoint's boundary, in seq order."""
    pinned_seqs: tuple[int, ...] = ()
    """Every pinned seq of the session (also those in ``messages``)."""


@dataclass(frozen=True)
class SearchHit:
    """One message that matched ``search_history`` (issue 16)."""

    seq: int
    role: str
    turn_id: str | None
    snippet: str
    """Text around the first match, one line, no control characters."""
    score: float
    """Higher is better; comparable within one answer only (engine-specific)."""
    compacted: bool
    """Below the active checkpoint's boundary: only the summary stands for it."""
    invalidated: bool
    truncated: bool = False
    """The message is longer than the index holds: only its head and tail are
    searchable (issue 36, ADR 0071)."""


@dataclass(frozen=True)
class RevertRecord:
    """A checkpoint withdrawn by ``revert_checkpoint`` (issue 16)."""

    checkpoint_id: str
    session_id: str
    version: int
    now_active: str | None
    generation: int
    command_id: str | None
