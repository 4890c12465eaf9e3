"""Commands and queries: pydantic models, discriminated on ``type`` (CONTRACT.md).

Names and fields here are a promise to other services: add, never rename.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    TypeAdapter,
    model_validator,
)

from context_compaction.domain.messages import MAX_INT, Message, json_problem


def _no_nul(value: str) -> str:
    # These land in TEXT columns, which PostgreSQL refuses NUL in: refused on both
    # backends alike, before anything is written (message content may hold NUL).
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000)")
    return value


NoNul = AfterValidator(_no_nul)
SessionId = Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
CommandId = Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
RequestId = Annotated[str, StringConstraints(min_length=1, max_length=128), NoNul]
PositiveInt = Annotated[StrictInt, Field(gt=0, le=MAX_INT)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0, le=MAX_INT)]
Seq = Annotated[StrictInt, Field(ge=1, le=MAX_INT)]


class Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# ---------------------------------------------------------------- commands
class StartSession(Command):
    type: Literal["start_session"] = "start_session"
    session_id: SessionId
    model: ModelName
    agent_token_limit: PositiveInt | None = None
    command_id: CommandId | None = None


class ConfigureSession(Command):
    """Change the model or the agent's token limit; an omitted field stays as it is,
    ``agent_token_limit: null`` removes the limit."""

    type: Literal["configure_session"] = "configure_session"
    session_id: SessionId
    model: ModelName | None = None
    agent_token_limit: PositiveInt | None = None


class AppendMessages(Command):
    """Append messages to the raw log. ``command_id`` makes it idempotent (unique across
    all sessions: a reuse with another payload is ``idempotency_conflict``); ``model``
    names who produced the assistant messages (default: the session's model), whose
    provider output fields are replayed only to it (spec §5.11)."""

    type: Literal["append_messages"] = "append_messages"
    session_id: SessionId
    messages: list[Message] = Field(min_length=1)
    command_id: CommandId | None = None
    model: ModelName | None = None


class InvalidateHistory(Command):
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


class PinMessages(Command):
    """Keep messages verbatim after the summary block in every projection (issue 16); a
    pin takes the whole tool group. Pinning a pinned message again changes nothing."""

    type: Literal["pin_messages"] = "pin_messages"
    session_id: SessionId
    seqs: list[Seq] = Field(min_length=1, max_length=10_000)
    command_id: CommandId | None = None


class UnpinMessages(Command):
    type: Literal["unpin_messages"] = "unpin_messages"
    session_id: SessionId
    seqs: list[Seq] = Field(min_length=1, max_length=10_000)
    command_id: CommandId | None = None


class RevertCheckpoint(Command):
    """Withdraw the active checkpoint: the projection returns to its parent (or raw
    history), the generation moves, raw history is untouched (issue 16)."""

    type: Literal["revert_checkpoint"] = "revert_checkpoint"
    session_id: SessionId
    checkpoint_id: Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
    command_id: CommandId | None = None


class DeleteSession(Command):
    type: Literal["delete_session"] = "delete_session"
    session_id: SessionId


class Compact(Command):
    """Manual /compact: forced, ignores ``enabled`` and the threshold (spec §11.1)."""

    type: Literal["compact"] = "compact"
    session_id: SessionId
    model: ModelName | None = None


ToolSchema = dict[str, Any]


class TurnInputsMixin(Command):
    system_prompt: Annotated[str, StringConstraints(max_length=2_000_000)] | None = None
    tools: list[ToolSchema] | None = Field(default=None, max_length=1024)
    knowledge: Annotated[str, StringConstraints(max_length=8_000_000)] | None = None
    active_plan: Annotated[str, StringConstraints(max_length=2_000_000)] | None = None
    model: ModelName | None = None

    @model_validator(mode="after")
    def _portable(self) -> TurnInputsMixin:
        problem = json_problem(
            [self.system_prompt, self.tools, self.knowledge, self.active_plan], where="inputs"
        )
        if problem:
            raise ValueError(problem)
        return self


class PrepareTurn(TurnInputsMixin):
    """Build the complete provider request for the next step (spec §11.2), compacting
    automatically at most once per turn when the request is over the threshold."""

    type: Literal["prepare_turn"] = "prepare_turn"
    session_id: SessionId


class RecordUsage(Command):
    """The provider's measured ``prompt_tokens`` for a prepared request (spec §7.2)."""

    type: Literal["record_usage"] = "record_usage"
    session_id: SessionId
    request_id: RequestId
    prompt_tokens: NonNegativeInt


class RecoverOverflow(Command):
    """The provider refused a prepared request as too long (spec §11.3)."""

    type: Literal["recover_overflow"] = "recover_overflow"
    session_id: SessionId
    request_id: RequestId
    error_message: Annotated[str, StringConstraints(max_length=100_000)] = ""
    tool_progress: StrictBool = False


# ----------------------------------------------------------------- queries
class GetContextUsage(TurnInputsMixin):
    """/info: the §16 figures for the request this session would send now."""

    type: Literal["get_context_usage"] = "get_context_usage"
    session_id: SessionId


class RecallTimeline(Command):
    type: Literal["recall_timeline"] = "recall_timeline"
    session_id: SessionId
    query: Annotated[str, StringConstraints(max_length=1000), NoNul] | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=1000)] = 20


class GetHistory(Command):
    """The raw log; ``from_seq``/``to_seq`` bound it (inclusive), pages ascend from
    ``from_seq`` and ``limit`` cuts the end (expand a compacted range, issue 16)."""

    type: Literal["get_history"] = "get_history"
    session_id: SessionId
    include_invalidated: StrictBool = False
    from_seq: Seq | None = None
    to_seq: Seq | None = None
    limit: PositiveInt | None = None

    @model_validator(mode="after")
    def _range(self) -> GetHistory:
        if self.from_seq is not None and self.to_seq is not None and self.from_seq > self.to_seq:
            raise ValueError("from_seq must be <= to_seq")
        return self


class SearchHistory(Command):
    """Full-text search over the session's raw history (issue 16): every term of
    ``query`` must occur; invalidated messages only with ``include_invalidated``."""

    type: Literal["search_history"] = "search_history"
    session_id: SessionId
    query: Annotated[str, StringConstraints(min_length=1, max_length=1_000), NoNul]
    limit: Annotated[StrictInt, Field(gt=0, le=1_000)] = 20
    include_invalidated: StrictBool = False


class GetProjection(Command):
    type: Literal["get_projection"] = "get_projection"
    session_id: SessionId
    model: ModelName | None = None


class ReplaySession(Command):
    type: Literal["replay_session"] = "replay_session"
    session_id: SessionId
    at_version: PositiveInt | None = None
    model: ModelName | None = None


class ListCheckpoints(Command):
    type: Literal["list_checkpoints"] = "list_checkpoints"
    session_id: SessionId


class ListSessions(Command):
    type: Literal["list_sessions"] = "list_sessions"
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] = 100
    offset: NonNegativeInt = 0


class ListCompactionAttempts(Command):
    """Every compaction attempt of a session, newest first (issue 16)."""

    type: Literal["list_compaction_attempts"] = "list_compaction_attempts"
    session_id: SessionId
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None


class Resummarize(Command):
    """Summarize a past checkpoint's exact source again; commits nothing (issue 16)."""

    type: Literal["resummarize"] = "resummarize"
    session_id: SessionId
    checkpoint_id: Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
    summarizer: Annotated[str, StringConstraints(min_length=1, max_length=64), NoNul] | None = None
    model: ModelName | None = None


AnyCommand = Annotated[
    Union[  # noqa: UP007 - a discriminated union reads better spelled out
        StartSession,
        ConfigureSession,
        AppendMessages,
        InvalidateHistory,
        PinMessages,
        UnpinMessages,
        RevertCheckpoint,
        DeleteSession,
        GetHistory,
        SearchHistory,
        GetProjection,
        ReplaySession,
        ListCheckpoints,
        ListSessions,
        Compact,
        GetContextUsage,
        RecallTimeline,
        PrepareTurn,
        RecordUsage,
        RecoverOverflow,
        ListCompactionAttempts,
        Resummarize,
    ],
    Field(discriminator="type"),
]

COMMAND_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyCommand, config=ConfigDict(defer_build=True))


def command_types() -> dict[str, type[Command]]:
    """``type`` value → command class, for everything ``AnyCommand`` accepts."""
    union = get_args(AnyCommand)[0]
    return {cls.model_fields["type"].default: cls for cls in get_args(union)}
