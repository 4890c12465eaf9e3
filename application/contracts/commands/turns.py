"""Commands of the agent loop: compact (and commit a dry run's candidate), prepare a
turn, record its usage, recover an overflow, /info and the Timeline recall."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from context_compaction.domain.messages import json_problem
from pydantic import Field, StrictBool, StrictInt, StringConstraints, model_validator

from .. import results as r
from .base import Command, ModelName, NonNegativeInt, NoNul, R, RequestId, Seq, SessionId, handled_by


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
