"""Results of commands and queries (pydantic models; ``dispatch_json`` dumps them)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class DeleteSessionResult(Result):
    session_id: str
    version: int


class HistoryResult(Result):
    session_id: str
    messages: list[dict[str, Any]]


class ProjectionResult(Result):
    """The history part of a provider request and where it came from (spec §7.1)."""

    messages: list[dict[str, Any]]
    checkpoint_id: str | None
    context_generation: int
    first_raw_seq: int | None
    max_raw_seq: int
    version: int = 0
    diagnostics: list[str] = Field(default_factory=list)


class ReplayResult(Result):
    session_id: str
    version: int
    context_generation: int
    active_checkpoint_id: str | None
    next_seq: int
    deleted: bool
    model: str
    projection: ProjectionResult


class CheckpointsResult(Result):
    session_id: str
    active_checkpoint_id: str | None
    checkpoints: list[dict[str, Any]]


class SessionInfo(Result):
    session_id: str
    model: str
    agent_token_limit: int | None
    version: int
    next_seq: int
    message_count: int
    invalidated_count: int
    checkpoint_count: int
    context_generation: int
    active_checkpoint_id: str | None
    deleted: bool
    created_at: str
    updated_at: str


class SessionsResult(Result):
    sessions: list[SessionInfo]
