"""Results of the session lifecycle: start, configure, append, invalidate, pin, revert,
delete, purge."""

from __future__ import annotations

from pydantic import Field

from .base import Result


class StartSessionResult(Result):
    session_id: str
    version: int


class ConfigureSessionResult(Result):
    session_id: str
    version: int
    model: str
    agent_token_limit: int | None


class AppendMessagesResult(Result):
    seqs: list[int]
    version: int
    duplicate: bool = False
    """True when the command_id had been applied before: nothing was appended."""


class InvalidateHistoryResult(Result):
    context_generation: int
    version: int
    excluded_seqs: list[list[int]] = Field(default_factory=list)
    """The seq ranges this command excluded (inclusive ``[lo, hi]`` pairs)."""


class PinsResult(Result):
    """Every pinned seq of the session after the command, ascending."""

    session_id: str
    pinned_seqs: list[int]
    version: int


class RevertResult(Result):
    session_id: str
    checkpoint_id: str
    """The checkpoint withdrawn."""
    context_generation: int
    active_checkpoint_id: str | None
    """The parent now active, or null: raw history."""
    version: int


class DeleteSessionResult(Result):
    session_id: str
    version: int


class PurgeSessionResult(Result):
    session_id: str
    version: int
    erased_events: int
    """Stored events whose content was replaced by the tombstone."""
    files_scrubbed: bool | None = None
    """SQLite: the file was vacuumed and its WAL emptied, so no old page keeps the
    content; False when another connection's open read kept the WAL (purge again once
    it is done). None on PostgreSQL: old row versions stay until ``VACUUM`` (ADR 0072)."""
