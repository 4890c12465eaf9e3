"""The turn lifecycle (spec §7.2, §8.3-§8.4, §11.2, §11.4; DESIGN §7, §10).

* ``prepare_turn`` builds the complete request, budgets it, compacts automatically at
  most once per turn, and returns the request with a ``request_id``;
* ``record_usage`` calibrates the next budget with the provider's measured prompt size.

(``recover_overflow`` is in ``recovery.py``.) Requests, calibrations and per-turn
attempts live in memory only (spec §7.2). One ``TurnContext`` per trip (ADR 0024).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from context_compaction.domain.attempts import RecordedUsage
from context_compaction.domain.budget import check_fixed_parts
from context_compaction.domain.errors import InvalidCommand
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.overflow import trim_request

from ..contracts import commands as c
from ..contracts import results as r
from ..state.calibration import Calibration
from .promptcache import EXPLICIT_CACHE_PROVIDERS, with_cache_breakpoints
from ..runtime.handout import owned
from ..runtime.services import Services
from ..runtime.turncontext import TurnContext, UsageDecision, decide_usage, prepare_context
from .autocompact import auto_compact
from ..runtime.telemetry import record_token_usage
from ..state.turnstate import IssuedRequest
from ..history.costs import record_request_usage
from ..state.drafts import inputs_of
from .usage import context_usage

log = logging.getLogger("context_compaction.turns")

# -------------------------------------------------------------------- phases
def current_turn_start(records: Sequence[MessageRecord]) -> int:
    """Index of the first message of the newest turn (scans back, not the whole log)."""
    if not records:
        return 0
    last_turn = records[-1].get("turn_id")
    i = len(records) - 1
    while i > 0:
        record = records[i]
        if last_turn is not None:
            if records[i - 1].get("turn_id") != last_turn:
                break
        elif record["role"] == "user" and not record.get("steering"):
            break
        i -= 1
    return i


def turn_phase(records: Sequence[MessageRecord]) -> tuple[str, int, int]:
    """("start" | "continuation", turn key = first seq of the turn, its index)."""
    if not records:
        return "start", 0, 0
    start = current_turn_start(records)
    turn = records[start:]
    finished = turn[-1]["role"] == "assistant" and not turn[-1].get("tool_calls")
    midway = not finished and any(m["role"] == "assistant" for m in turn)
    return ("continuation" if midway else "start"), turn[0]["seq"], start


# ------------------------------------------------------------------- helpers
def _index_from_end(seqs: list[int], seq: int) -> int:
    """Where ``seq`` is in ``seqs``, searched from the end (the current turn is there)."""
    for index in range(len(seqs) - 1, -1, -1):
        if seqs[index] == seq:
            return index
    return len(seqs)



# -------------------------------------------------------------- prepare_turn
def prepare_turn(cmd: c.PrepareTurn, svc: Services) -> r.TurnRequest:
    turn = prepare_context(svc, cmd.session_id, inputs_of(cmd), cmd.model)
    return turn_request(svc, turn)


def turn_request(
    svc: Services,
    turn: TurnContext,
    *,
    retry_of: str | None = None,
    compaction: r.CompactOutcome | None = None,
    warnings: list[str] | None = None,
) -> r.TurnRequest:
    """The request for ``turn``: compacted first when it is over the threshold at the
    start of a turn (once per turn, never for a rebuilt request)."""
    warnings = list(warnings or [])
    check_fixed_parts(turn.draft.breakdown, turn.budget.threshold)  # spec §8.4
    phase, turn_key, _ = turn_phase(turn.records)
    usage = decide_usage(svc, turn)
    if retry_of is None and phase == "start" and turn.budget.should_compact(usage.used):
        auto = auto_compact(svc, turn, usage, turn_key)
        turn, usage, compaction = auto.turn, auto.usage, auto.outcome or compaction
        warnings += auto.warnings
    return _issue(svc, turn, usage, phase, turn_key, retry_of, compaction, warnings)


def _issue(
    svc: Services,
    turn: TurnContext,
    usage: UsageDecision,
    phase: str,
    turn_key: int,
    retry_of: str | None,
    compaction: r.CompactOutcome | None,
    warnings: list[str],
) -> r.TurnRequest:
    """Remember the request (for record_usage / recover_overflow) and return it."""
    ctx, draft, budget = turn.ctx, turn.draft, turn.budget
    messages = draft.messages
    history_count = len(draft.projection.included_seqs)
    history_digest: str | None = None
    if phase == "continuation" and usage.used > budget.threshold:
        messages, note = _trim_in_turn(svc, turn, turn_key)
        warnings += note
    else:
        history_digest = ctx.history_digest(draft.projection, turn.identity, history_count)
    cache_marks = svc.settings.context_compaction.prompt_cache == "auto"
    if cache_marks and turn.identity.provider in EXPLICIT_CACHE_PROVIDERS:
        messages = with_cache_breakpoints(messages)
    request_id = svc.ids.new_id("req")
    svc.turns.remember(
        IssuedRequest(
            request_id=request_id,
            session_id=turn.session_id,
            model=turn.model,
            # (the tools of its own: a typed PrepareTurn's nested tool dicts are the host's,
            # who may clean them for its next call; the retry is this request rebuilt)
            inputs=replace(turn.inputs, tools=tuple(owned(list(turn.inputs.tools)))),
            key=usage.key,
            history_count=history_count,
            history_digest=history_digest,
            estimate=draft.total,
            turn_key=turn_key,
            phase=phase,
            retry_of=retry_of,
        )
    )
    log.info("turn request prepared", extra={
        "session_id": turn.session_id, "request_id": request_id, "generation": ctx.session.context_generation,
        "used_tokens": usage.used, "usage_source": usage.source, "threshold": budget.threshold, "phase": phase})
    credentials = svc.settings.model_config_for(turn.model)
    return r.TurnRequest.model_construct(  # built by us: no re-validation of the messages
        request_id=request_id,
        session_id=turn.session_id,
        model=turn.model,
        messages=messages,
        tools=list(turn.inputs.tools),
        usage=context_usage(svc, turn, usage),
        compaction=compaction,
        warnings=warnings,
        checkpoint_id=ctx.checkpoint.checkpoint_id if ctx.checkpoint else None,
        context_generation=ctx.session.context_generation,
        phase=phase,  # type: ignore[arg-type]
        turn_start_index=_turn_start_index(turn, messages, turn_key),
        retry_of=retry_of,
        api_base=credentials.api_base,
    ).with_api_key(credentials.api_key).knowing_flat(draft.known_flat if messages is draft.messages else None)


def _turn_start_index(turn: TurnContext, messages: list[dict[str, object]], turn_key: int) -> int:
    """Where the current turn starts in ``messages`` (the draft's, or its trimmed copy)."""
    draft = turn.draft
    seqs = draft.projection.included_seqs
    index = len(draft.messages) - len(seqs) + _index_from_end(seqs, turn_key)
    if messages is not draft.messages:
        index -= len(draft.messages) - len(messages)
    return max(index, 0)


def _trim_in_turn(
    svc: Services, turn: TurnContext, turn_key: int
) -> tuple[list[dict[str, object]], list[str]]:
    """Spec §11.4: in the middle of a turn, shrink the request copy, never the log."""
    draft = turn.draft
    tokens = turn.tokens
    seqs = draft.projection.included_seqs
    offset = len(draft.messages) - len(seqs)
    sizes = []
    for index, message in enumerate(draft.messages):
        if index < offset:
            sizes.append(svc.tokens.count_message(message, draft.encoding))
        else:
            sizes.append(tokens.get(seqs[index - offset], 0))
    sizes[0] += draft.breakdown["tools"] + svc.tokens.request_overhead
    found = _index_from_end(seqs, turn_key)
    keep_from = offset + (found if found < len(seqs) else 0)
    trimmed = trim_request(
        draft.messages,
        sizes=sizes,
        keep_from=keep_from,
        limit=turn.budget.threshold,
        count=lambda m: svc.tokens.count_message(m, draft.encoding),
    )
    log.warning(
        "request trimmed within the turn",
        extra={
            "session_id": turn.session_id,
            "truncated": trimmed.truncated_tool_results,
            "dropped": trimmed.dropped_messages,
            "tokens_after": trimmed.tokens,
        },
    )
    return trimmed.messages, [
        f"request trimmed within the turn: {trimmed.truncated_tool_results} older tool results "
        f"shortened, {trimmed.dropped_messages} older messages left out of this request "
        f"(history unchanged); about {trimmed.tokens:,} tokens"
    ]


# -------------------------------------------------------------- record_usage
def record_usage(cmd: c.RecordUsage, svc: Services) -> r.RecordUsageResult:
    request = svc.turns.request(cmd.session_id, cmd.request_id)
    if (cmd.cached_tokens or 0) + (cmd.cache_creation_tokens or 0) > cmd.prompt_tokens:
        raise InvalidCommand(
            "cached_tokens and cache_creation_tokens are parts of prompt_tokens: their sum "
            "cannot exceed it"
        )
    if request.history_digest is not None:
        svc.turns.calibrations.record(
            cmd.session_id,
            Calibration(
                key=request.key,
                history_count=request.history_count,
                history_digest=request.history_digest,
                prompt_tokens=cmd.prompt_tokens,
            ),
        )
    cached, created = cmd.cached_tokens or 0, cmd.cache_creation_tokens or 0
    if cmd.cached_tokens is not None or cmd.cache_creation_tokens is not None:
        svc.turns.record_cache_usage(cmd.session_id, cmd.prompt_tokens, cached, created)
    record_request_usage(svc, cmd.session_id, RecordedUsage(
        request_id=cmd.request_id, at=svc.now(), model=request.model, prompt_tokens=cmd.prompt_tokens,
        cached_tokens=cached, cache_creation_tokens=created, completion_tokens=cmd.completion_tokens or 0,
        history_count=request.history_count,
    ))
    record_token_usage(svc.telemetry, request.model, "chat",
                       {"prompt_tokens": cmd.prompt_tokens, "completion_tokens": cmd.completion_tokens or 0})
    log.info(
        "provider usage recorded",
        extra={
            "session_id": cmd.session_id,
            "request_id": cmd.request_id,
            "prompt_tokens": cmd.prompt_tokens,
            "estimated_tokens": request.estimate,
            "cached_tokens": cached,
            "cache_creation_tokens": created,
        },
    )
    return r.RecordUsageResult(
        request_id=cmd.request_id,
        prompt_tokens=cmd.prompt_tokens,
        estimated_tokens=request.estimate,
        cached_tokens=cmd.cached_tokens,
        cache_creation_tokens=cmd.cache_creation_tokens,
        completion_tokens=cmd.completion_tokens,
    )
