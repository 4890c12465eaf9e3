"""Results of the session tree (issue 42): listing sessions, forks and sub-agents."""

from __future__ import annotations

from pydantic import Field

from .base import Result


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
    parent_session_id: str | None = None
    """The session this one was forked from or spawned by (issue 42); null: a root."""


class SessionsResult(Result):
    sessions: list[SessionInfo]
    tree: list[SessionTreeNode] | None = None
    """With ``tree: true``: the page's root sessions, each with its children nested."""


class ChildUsage(Result):
    session_id: str
    kind: str
    """``fork`` or ``subagent``."""
    used_tokens: int
    children_tokens: int = 0


class SessionTreeNode(Result):
    session: SessionInfo
    children: list[SessionTreeNode] = Field(default_factory=list)


class ForkSessionResult(Result):
    session_id: str
    parent_session_id: str
    fork_version: int
    """The parent's version the child was born at."""
    fork_seq: int
    """The parent's last seq then: the child's seqs up to it are inherited."""
    version: int
    next_seq: int
    context_generation: int
    active_checkpoint_id: str | None


class CompleteSubagentResult(Result):
    session_id: str
    parent_session_id: str
    parent_tool_call_id: str
    seq: int | None
    """The parent's tool result's seq (null: the host had answered the call itself)."""
    already_answered: bool
