"""Commands and queries: pydantic models, discriminated on ``type`` (CONTRACT.md).

Names and fields here are a promise to other services: add, never rename.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, Union, get_args

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

from . import results as r
from . import results_costs as rc


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


R = TypeVar("R", bound=r.Result, covariant=True)

#: What a message of ``AppendMessages`` may be given as: our ``Message``, a JSON-shaped
#: mapping (CONTRACT.md "Message (input)") or a provider's message model (litellm's
#: ``Message``, ``choices[0].message``), validated into a ``Message``.
MessageInput = Message | Mapping[str, Any] | BaseModel


class Command(BaseModel, Generic[R]):
    """A command or query whose answer is an ``R``: ``bus.dispatch(cmd)`` is typed ``R``
    for a type checker (``class PrepareTurn(Command[r.TurnRequest])``, ADR 0040)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    if not TYPE_CHECKING:
        # ``Command[X]`` is a plain alias (``types.GenericAlias``), not one of pydantic's
        # parametrized models: a type checker reads the result type from it, the class
        # made from it has ``Command`` itself as its base (no model class per result
        # type, ~10 ms each at import), and ``result_type()`` reads it back.
        def __class_getitem__(cls, params: Any) -> Any:
            return types.GenericAlias(cls, params)

    @classmethod
    def result_type(cls) -> type[r.Result]:
        """The result model this command answers with (its ``Command[...]`` argument)."""
        for klass in cls.__mro__:
            for base in klass.__dict__.get("__orig_bases__", ()):
                args = get_args(base)
                if args and isinstance(args[0], type) and issubclass(args[0], r.Result):
                    return args[0]
        raise TypeError(f"{cls.__name__} names no result type")


# ------------------------------------------------------------ the registry
@dataclass(frozen=True)
class Route:
    """Where a command's handler lives: ``context_compaction.application.<module>``,
    function ``function`` (imported on first use, ADR 0016), and whether the command
    only reads (a read-only store serves it, ADR 0071)."""

    module: str
    function: str
    reads: bool = False


#: Every command, in declaration order, and its handler: the one list (issue 38). The
#: discriminated union ``AnyCommand``, the bus's handler table (``handlers.py``) and
#: the OpenAPI result table are derived from it.
ROUTES: dict[type[Command[Any]], Route] = {}

C = TypeVar("C", bound=type[Command[Any]])


def handled_by(module: str, function: str, *, reads: bool = False) -> Callable[[C], C]:
    """Declare a command's handler where the command is declared: ``module`` is the
    handler's module under ``context_compaction.application`` (a literal, so readers
    and the import checks see it), ``function`` its name there."""

    def register(cls: C) -> C:
        ROUTES[cls] = Route(module, function, reads)
        return cls

    return register


# ---------------------------------------------------------------- commands
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
            type: Literal["append_messages"] = "append_messages",  # noqa: A002 - the field's name
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


@handled_by("compacting.candidates", "compact")
class Compact(Command[r.CompactOutcome]):
    """Manual /compact: forced, ignores ``enabled`` and the threshold (spec §11.1); a
    ``dry_run`` commits nothing, ``up_to_seq``/``fraction`` take the oldest turns (issue 43)."""

    type: Literal["compact"] = "compact"
    session_id: SessionId
    model: ModelName | None = None
    dry_run: StrictBool = False
    up_to_seq: Seq | None = None
    fraction: Annotated[float, Field(gt=0, lt=1)] | None = None

    @model_validator(mode="after")
    def _one_limit(self) -> Compact:
        if self.up_to_seq is not None and self.fraction is not None:
            raise ValueError("give up_to_seq or fraction, not both")
        return self


@handled_by("compacting.candidates", "commit_prepared")
class CommitCandidate(Command[r.CompactOutcome]):
    """A dry run's candidate, committed unless the generation moved (``stale_candidate``)."""

    type: Literal["commit_candidate"] = "commit_candidate"
    session_id: SessionId
    candidate_id: Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]


ToolSchema = dict[str, Any]


class TurnInputsMixin(Command[R]):
    system_prompt: Annotated[str, StringConstraints(max_length=2_000_000)] | None = None
    tools: list[ToolSchema] | None = Field(default=None, max_length=1024)
    knowledge: Annotated[str, StringConstraints(max_length=8_000_000)] | None = None
    active_plan: Annotated[str, StringConstraints(max_length=2_000_000)] | None = None
    model: ModelName | None = None

    @model_validator(mode="after")
    def _portable(self) -> TurnInputsMixin[R]:
        problem = json_problem(
            [self.system_prompt, self.tools, self.knowledge, self.active_plan], where="inputs"
        )
        if problem:
            raise ValueError(problem)
        return self


@handled_by("turn.turns", "prepare_turn")
class PrepareTurn(TurnInputsMixin[r.TurnRequest]):
    """Build the complete provider request for the next step (spec §11.2), compacting
    automatically at most once per turn when the request is over the threshold."""

    type: Literal["prepare_turn"] = "prepare_turn"
    session_id: SessionId


@handled_by("turn.turns", "record_usage")
class RecordUsage(Command[r.RecordUsageResult]):
    """The provider's measured ``prompt_tokens`` for a prepared request (spec §7.2)."""

    type: Literal["record_usage"] = "record_usage"
    session_id: SessionId
    request_id: RequestId
    prompt_tokens: NonNegativeInt
    cached_tokens: NonNegativeInt | None = None
    """Of ``prompt_tokens``, read from the provider's prompt cache (issue 17)."""
    cache_creation_tokens: NonNegativeInt | None = None
    """Of ``prompt_tokens``, written to the provider's prompt cache (Anthropic)."""
    completion_tokens: NonNegativeInt | None = None


@handled_by("turn.recovery", "recover_overflow")
class RecoverOverflow(Command[r.TurnRequest]):
    """The provider refused a prepared request as too long (spec §11.3)."""

    type: Literal["recover_overflow"] = "recover_overflow"
    session_id: SessionId
    request_id: RequestId
    error_message: Annotated[str, StringConstraints(max_length=100_000)] = ""
    tool_progress: StrictBool = False


# ----------------------------------------------------------------- queries
@handled_by("turn.usage", "get_context_usage", reads=True)
class GetContextUsage(TurnInputsMixin[r.ContextUsage]):
    """/info: the §16 figures for the request this session would send now."""

    type: Literal["get_context_usage"] = "get_context_usage"
    session_id: SessionId


@handled_by("compacting.compaction", "recall_timeline", reads=True)
class RecallTimeline(Command[r.TimelineResult]):
    type: Literal["recall_timeline"] = "recall_timeline"
    session_id: SessionId
    query: Annotated[str, StringConstraints(max_length=1000), NoNul] | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=1000)] = 20


@handled_by("history.queries", "get_history", reads=True)
class GetHistory(Command[r.HistoryResult]):
    """The raw log; ``from_seq``/``to_seq`` bound it (inclusive), pages ascend from
    ``from_seq`` and ``limit`` cuts the end (expand a compacted range, issue 16)."""

    type: Literal["get_history"] = "get_history"
    session_id: SessionId
    include_invalidated: StrictBool = False
    #: An audit read of a deleted session (else ``session_deleted``, ADR 0072).
    include_deleted: StrictBool = False
    from_seq: Seq | None = None
    to_seq: Seq | None = None
    limit: PositiveInt | None = None

    @model_validator(mode="after")
    def _range(self) -> GetHistory:
        if self.from_seq is not None and self.to_seq is not None and self.from_seq > self.to_seq:
            raise ValueError("from_seq must be <= to_seq")
        return self


@handled_by("history.queries", "search_history", reads=True)
class SearchHistory(Command[r.SearchResult]):
    """Full-text search over the session's raw history (issue 16): every term of
    ``query`` must occur; invalidated messages only with ``include_invalidated``."""

    type: Literal["search_history"] = "search_history"
    session_id: SessionId
    query: Annotated[str, StringConstraints(min_length=1, max_length=1_000), NoNul]
    limit: Annotated[StrictInt, Field(gt=0, le=1_000)] = 20
    include_invalidated: StrictBool = False


@handled_by("history.queries", "get_projection", reads=True)
class GetProjection(Command[r.ProjectionResult]):
    type: Literal["get_projection"] = "get_projection"
    session_id: SessionId
    model: ModelName | None = None


@handled_by("history.queries", "replay_session", reads=True)
class ReplaySession(Command[r.ReplayResult]):
    type: Literal["replay_session"] = "replay_session"
    session_id: SessionId
    at_version: PositiveInt | None = None
    #: An audit read of a deleted session (else ``session_deleted``, ADR 0072).
    include_deleted: StrictBool = False
    model: ModelName | None = None


@handled_by("history.queries", "replay_state")
class ReplayState(Command[r.ReplayStateResult]):
    """``replay_session`` without the projection (issue 41): the state as of a version
    (pins, cleared results, active checkpoint, next seq) reads no raw message, where the
    projection of a session never compacted is every message."""

    type: Literal["replay_state"] = "replay_state"
    session_id: SessionId
    at_version: PositiveInt | None = None
    #: An audit read of a deleted session (else ``session_deleted``, ADR 0072).
    include_deleted: StrictBool = False


@handled_by("history.queries", "list_checkpoints", reads=True)
class ListCheckpoints(Command[r.CheckpointsResult]):
    type: Literal["list_checkpoints"] = "list_checkpoints"
    session_id: SessionId
    #: An audit read of a deleted session (else ``session_deleted``: summaries are its
    #: content, ADR 0072).
    include_deleted: StrictBool = False


@handled_by("history.queries", "list_sessions", reads=True)
class ListSessions(Command[r.SessionsResult]):
    type: Literal["list_sessions"] = "list_sessions"
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] = 100
    offset: NonNegativeInt = 0
    tree: StrictBool = False
    """Also answer ``tree``: the root sessions of the page with their forks and
    sub-agents nested (issue 42)."""


@handled_by("history.forks", "fork_session")
class ForkSession(Command[r.ForkSessionResult]):
    """A new session born as ``session_id`` is at ``at_version`` (or right after
    ``at_seq`` was appended; default: now). Nothing is copied: the child's reads resolve
    the inherited history from the parent's events (issue 42, ADR 0081)."""

    type: Literal["fork_session"] = "fork_session"
    session_id: SessionId
    new_session_id: SessionId
    at_version: PositiveInt | None = None
    at_seq: Seq | None = None
    command_id: CommandId | None = None


@handled_by("agent.subagents", "complete_subagent")
class CompleteSubagent(Command[r.CompleteSubagentResult]):
    """A sub-agent's result becomes its parent's tool result for the call that spawned
    it (issue 42): one append on the parent, at most once."""

    type: Literal["complete_subagent"] = "complete_subagent"
    session_id: SessionId
    result: Annotated[str, StringConstraints(max_length=10_000_000)]


@handled_by("compacting.attemptlog", "list_compaction_attempts", reads=True)
class ListCompactionAttempts(Command[r.CompactionAttemptsResult]):
    """Every compaction attempt of a session, newest first (issue 16)."""

    type: Literal["list_compaction_attempts"] = "list_compaction_attempts"
    session_id: SessionId
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    #: An audit read of a deleted session (else ``session_deleted``: a ledger's dropped
    #: items quote its messages, ADR 0072).
    include_deleted: StrictBool = False


@handled_by("compacting.resummarize", "resummarize")
class Resummarize(Command[r.ResummarizeResult]):
    """Summarize a past checkpoint's exact source again; commits nothing (issue 16)."""

    type: Literal["resummarize"] = "resummarize"
    session_id: SessionId
    checkpoint_id: Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
    summarizer: Annotated[str, StringConstraints(min_length=1, max_length=64), NoNul] | None = None
    model: ModelName | None = None


@handled_by("history.costs", "get_session_cost")
class GetSessionCost(Command[rc.SessionCostResult]):
    """Recorded usages and summary calls priced, per model; compactions' balance (issue 43)."""

    type: Literal["get_session_cost"] = "get_session_cost"
    session_id: SessionId


@handled_by("history.feed", "read_events", reads=True)
class ReadEvents(Command[r.EventsResult]):
    """The event feed: stored events after a position, in order (issue 15)."""

    type: Literal["read_events"] = "read_events"
    after: NonNegativeInt = 0
    limit: Annotated[StrictInt, Field(ge=1, le=1000)] = 100
    #: The page's stored bytes (issue 36, ADR 0071): a page stops at ``limit`` events
    #: or this many bytes, whichever comes first, and holds at least one event.
    max_bytes: Annotated[StrictInt, Field(ge=1, le=256 * 1024 * 1024)] = 8 * 1024 * 1024


@handled_by("history.feed", "read_session_events")
class ReadSessionEvents(Command[r.SessionEventsResult]):
    """One session's own events in version order (issue 41): from ``from_version``
    (inclusive), at most ``limit``. Versions are contiguous from 1, so a reader pages by
    arithmetic; the compaction attempts are ``list_compaction_attempts``."""

    type: Literal["read_session_events"] = "read_session_events"
    session_id: SessionId
    from_version: Seq = 1
    limit: Annotated[StrictInt, Field(ge=1, le=1000)] = 100


#: Every declared command, discriminated on ``type`` (derived from ``ROUTES``).
AnyCommand: Any = Annotated[Union[tuple(ROUTES)], Field(discriminator="type")]  # noqa: UP007

COMMAND_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyCommand, config=ConfigDict(defer_build=True))


@functools.cache
def command_types() -> Mapping[str, type[Command[Any]]]:
    """``type`` value → command class, for everything ``AnyCommand`` accepts.

    Built once (the JSON edge asks on every command: rebuilding it was ~4 % of a JSON
    append's CPU) and read-only, since every caller shares it."""
    union = get_args(AnyCommand)[0]
    return types.MappingProxyType({cls.model_fields["type"].default: cls for cls in get_args(union)})
