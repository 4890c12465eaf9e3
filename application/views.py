"""What the read model hands the application: rows and views, plain frozen data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from context_compaction.domain.budget import LearnedWindow
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


@dataclass(frozen=True)
class CheckpointRow:
    """All fields of spec §6.2, plus what the summary was made from."""

    checkpoint_id: str
    session_id: str
    generation: int
    parent_checkpoint_id: str | None
    summary: str
    first_retained_seq: int
    source_max_seq: int
    trigger_reason: str
    provider_kind: str
    model: str
    tokens_before: int
    tokens_after: int
    degraded: bool
    summary_source: dict[str, Any]
    created_at: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint_id,
            "id": self.checkpoint_id,
            "session_id": self.session_id,
            "generation": self.generation,
            "parent_checkpoint_id": self.parent_checkpoint_id,
            "summary": self.summary,
            "first_retained_seq": self.first_retained_seq,
            "source_max_seq": self.source_max_seq,
            "trigger_reason": self.trigger_reason,
            "provider_kind": self.provider_kind,
            "model": self.model,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "degraded": self.degraded,
            "summary_source": dict(self.summary_source),
            "created_at": self.created_at,
            "version": self.version,
        }


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
