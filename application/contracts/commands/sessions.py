"""Commands of the session lifecycle: start, configure, append, invalidate, pin, revert,
delete, purge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal

from context_compaction.domain.messages import Message
from pydantic import Field, StrictBool, StringConstraints

from .. import results as r
from .base import (Command, CommandId, MessageInput, ModelName, NonNegativeInt,
                   NoNul, PositiveInt, Seq, SessionId, handled_by)


@handled_by("history.sessions", "start_session")
class StartSession(Command[r.StartSessionResult]):
    type: Literal["start_session"] = "start_session"
    session_id: SessionId
    model: ModelName
    agent_token_limit: PositiveInt | None = None
    command_id: CommandId | None = None
    # A sub-agent's session (issue 42): linked to the parent's tool call that spawned it.
    parent_session_id: SessionId | None = None
    parent_tool_call_id: Annotated[str, StringConstraints(min_length=1, max_length=512), NoNul] | None = None


@handled_by("history.sessions", "configure_session")
class ConfigureSession(Command[r.ConfigureSessionResult]):
    """Change the model or the agent's token limit; an omitted field stays as it is,
    ``agent_token_limit: null`` removes the limit."""

    type: Literal["configure_session"] = "configure_session"
    session_id: SessionId
    model: ModelName | None = None
    agent_token_limit: PositiveInt | None = None


@handled_by("history.sessions", "append_messages")
class AppendMessages(Command[r.AppendMessagesResult]):
    """Append messages to the raw log. ``command_id`` makes it idempotent (unique across
    all sessions: a reuse with another payload is ``idempotency_conflict``); ``model``
    names who produced the assistant messages (default: the session's model), whose
    provider output fields are replayed only to it (spec §5.11)."""

    type: Literal["append_messages"] = "append_messages"
    session_id: SessionId
    messages: list[Message] = Field(min_length=1)
    command_id: CommandId | None = None
    model: ModelName | None = None

    if TYPE_CHECKING:
        # The signature a type checker sees: ``messages`` as the README shows them
        # (JSON-shaped dicts, a provider's message object as litellm returned it),
        # which the validator accepts; ``self.messages`` stays ``list[Message]`` (ADR
        # 0040). Only for type checkers: a real ``__init__`` would make pydantic call
        # it when validating JSON (a missing field a TypeError, not invalid_command).
        # tests/typing checks that it names exactly the model's fields.
        def __init__(
            self,
            *,
            session_id: str,
            messages: Sequence[MessageInput],
            command_id: str | None = None,
            model: str | None = None,
            type: Literal["append_messages"] = "append_messages",
        ) -> None: ...


@handled_by("history.sessions", "invalidate_history")
class InvalidateHistory(Command[r.InvalidateHistoryResult]):
    """clear: everything so far; rewind: keep seq <= to_seq; delete: the given seqs.

    A delete that would split a tool group is refused unless ``expand_tool_groups``
    lets it take the whole group.
    """

    type: Literal["invalidate_history"] = "invalidate_history"
    session_id: SessionId
    kind: Literal["clear", "rewind", "delete"]
    to_seq: NonNegativeInt | None = None
    seqs: list[Seq] | None = Field(default=None, max_length=100_000)
    expand_tool_groups: StrictBool = False
    reason: Annotated[str, StringConstraints(max_length=2000), NoNul] = ""


@handled_by("history.sessions", "pin_messages")
class PinMessages(Command[r.PinsResult]):
    """Keep messages verbatim after the summary block in every projection (issue 16); a
    pin takes the whole tool group. Pinning a pinned message again changes nothing."""

    type: Literal["pin_messages"] = "pin_messages"
    session_id: SessionId
    seqs: list[Seq] = Field(min_length=1, max_length=10_000)
    command_id: CommandId | None = None


@handled_by("history.sessions", "unpin_messages")
class UnpinMessages(Command[r.PinsResult]):
    type: Literal["unpin_messages"] = "unpin_messages"
    session_id: SessionId
    seqs: list[Seq] = Field(min_length=1, max_length=10_000)
    command_id: CommandId | None = None


@handled_by("history.sessions", "revert_checkpoint")
class RevertCheckpoint(Command[r.RevertResult]):
    """Withdraw the active checkpoint: the projection returns to its parent (or raw
    history), the generation moves, raw history is untouched (issue 16)."""

    type: Literal["revert_checkpoint"] = "revert_checkpoint"
    session_id: SessionId
    checkpoint_id: Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
    command_id: CommandId | None = None


@handled_by("history.sessions", "delete_session")
class DeleteSession(Command[r.DeleteSessionResult]):
    type: Literal["delete_session"] = "delete_session"
    session_id: SessionId


@handled_by("history.sessions", "purge_session")
class PurgeSession(Command[r.PurgeSessionResult]):
    """Erase a session's content for good (issue 35, ADR 0072): message bodies,
    reasoning, tool arguments and outputs, summaries, ledgers, provider state, search
    rows, Timeline entries and snapshots, in the event store too. It stays listed as
    deleted; its events keep their shape with the content replaced."""

    type: Literal["purge_session"] = "purge_session"
    session_id: SessionId
