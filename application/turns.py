"""The turn lifecycle (spec §7.2, §8.3-§8.4, §11.2-§11.4; DESIGN §7, §10).

* ``prepare_turn`` builds the complete request, budgets it, compacts automatically at
  most once per turn, and returns the request with a ``request_id``;
* ``record_usage`` calibrates the next budget with the provider's measured prompt size;
* ``recover_overflow`` turns a provider overflow into one rebuilt request per turn: the
  window the provider reported becomes history (``WindowLearned``), then one summary
  attempt for the turn, else a deterministic whole-turn trim (a degraded checkpoint).

Requests, calibrations and per-turn attempts live in memory only (spec §7.2).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from context_compaction.domain.budget import Budget, check_fixed_parts
from context_compaction.domain.cutpoint import CutPlan, NothingToCompact, plan_cut
from context_compaction.domain.errors import (
    OverflowNotRecoverable,
    OverflowRetryExhausted,
    StaleCandidate,
    StorageError,
    SummaryFailed,
)
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.overflow import (
    describe_cut,
    degraded_summary,
    parse_overflow,
    trim_request,
)
from context_compaction.domain.projection import CheckpointRef, build_projection, summary_message

from . import commands as c
from . import results as r
from .compaction import Candidate, commit_candidate, compact_context
from .context import (
    Draft,
    SessionContext,
    TurnInputs,
    budget_for,
    build_draft,
    current_context,
    draft_for,
)
from .services import Services, mutate
from .turnstate import Calibration, IssuedRequest, memory_of
from .usage import context_usage, decided_usage, inputs_of

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
    return build_turn_request(svc, cmd.session_id, inputs_of(cmd), cmd.model)


def build_turn_request(
    svc: Services,
    session_id: str,
    inputs: TurnInputs,
    model_override: str | None,
    *,
    retry_of: str | None = None,
    compaction: r.CompactOutcome | None = None,
    warnings: list[str] | None = None,
) -> r.TurnRequest:
    memory = memory_of(svc)
    warnings = list(warnings or [])
    ctx = current_context(svc, session_id)
    model = model_override or ctx.session.model
    budget = budget_for(svc, ctx.session, model)
    draft = draft_for(svc, ctx, inputs, model)
    check_fixed_parts(draft.breakdown, budget.threshold)  # spec §8.4
    phase, turn_key, _ = turn_phase(ctx.records)
    key, used, source = decided_usage(svc, ctx, draft, model)

    if (
        retry_of is None
        and phase == "start"
        and budget.should_compact(used)
        and memory.claim_summary_attempt(session_id, turn_key)
    ):
        compaction, note = _auto_compact(
            svc, session_id, turn_key, model, inputs, used, draft.total, budget
        )
        warnings += note
        if compaction is not None and compaction.status == "compacted":
            ctx = current_context(svc, session_id)
            draft = draft_for(svc, ctx, inputs, model)
            key, used, source = decided_usage(svc, ctx, draft, model)

    messages = draft.messages
    history_digest: str | None = None
    if phase == "continuation" and used > budget.threshold:
        messages, note = _trim_in_turn(svc, ctx, draft, budget)
        warnings += note
    else:
        identity = svc.identity(model)
        with ctx.lock:
            history_digest = ctx.builder(identity).history_digest(
                draft.projection, len(draft.projection.included_seqs)
            )
    request_id = svc.ids.new_id("req")
    memory.remember(
        IssuedRequest(
            request_id=request_id,
            session_id=session_id,
            model=model,
            inputs=inputs,
            key=key,
            history_count=len(draft.projection.included_seqs),
            history_digest=history_digest,
            estimate=draft.total,
            turn_key=turn_key,
            phase=phase,
            retry_of=retry_of,
        )
    )
    usage = context_usage(ctx, draft, budget, model=model, used=used, usage_source=source)
    offset = len(draft.messages) - len(draft.projection.included_seqs)
    turn_start_index = offset + _index_from_end(draft.projection.included_seqs, turn_key)
    if messages is not draft.messages:
        turn_start_index -= len(draft.messages) - len(messages)
    log.info(
        "turn request prepared",
        extra={
            "session_id": session_id,
            "request_id": request_id,
            "generation": ctx.session.context_generation,
            "used_tokens": used,
            "usage_source": source,
            "threshold": budget.threshold,
            "phase": phase,
        },
    )
    return r.TurnRequest.model_construct(  # built by us: no re-validation of the messages
        request_id=request_id,
        session_id=session_id,
        model=model,
        messages=messages,
        tools=list(inputs.tools),
        usage=usage,
        compaction=compaction,
        warnings=warnings,
        checkpoint_id=ctx.checkpoint.checkpoint_id if ctx.checkpoint else None,
        context_generation=ctx.session.context_generation,
        phase=phase,  # type: ignore[arg-type]
        turn_start_index=max(turn_start_index, 0),
        retry_of=retry_of,
    )


def _auto_compact(
    svc: Services,
    session_id: str,
    turn_key: int,
    model: str,
    inputs: TurnInputs,
    used: int,
    estimate: int,
    budget: Budget,
) -> tuple[r.CompactOutcome | None, list[str]]:
    """Spec §11.2 failure semantics for the automatic trigger; ``used`` is the figure
    the trigger decided on (measured + tail when calibrated), also for the hard check;
    ``estimate`` is our own count of the same request."""
    try:
        outcome = compact_context(svc, session_id, reason="auto", model=model, inputs=inputs)
    except (SummaryFailed, StaleCandidate, StorageError) as exc:
        log.warning(
            "auto compaction failed",
            extra={"session_id": session_id, "error_class": exc.code, "reason": "auto"},
        )
        note = [f"auto compaction failed ({exc.code}): {exc.message}"]
    else:
        if outcome.status == "compacted":
            return outcome, []
        # No summary was asked for: the turn keeps its one attempt (spec §11.3 step 3).
        memory_of(svc).release_summary_attempt(session_id, turn_key)
        note = ["auto compaction found nothing to compact"]
    if used <= budget.window:
        return None, [*note, "continuing with the previous context (still under the hard window)"]
    # Already over the hard window before sending (smaller model, new limit): do not send a
    # request that must fail; trim deterministically now (spec §11.2, §17). When the
    # provider's count put it over, the trim works in our units scaled to that count.
    cap = budget.window * estimate // used if used > estimate else None
    degraded = degraded_checkpoint(svc, session_id, model, inputs, window_cap=cap)
    return degraded, [*note, "over the hard window: committed a degraded checkpoint before sending"]


def _trim_in_turn(
    svc: Services, ctx: SessionContext, draft: Draft, budget: Budget
) -> tuple[list[dict[str, object]], list[str]]:
    """Spec §11.4: in the middle of a turn, shrink the request copy, never the log."""
    tokens = ctx.tokens[draft.encoding]
    offset = len(draft.messages) - len(draft.projection.included_seqs)
    sizes = []
    for index, message in enumerate(draft.messages):
        if index < offset:
            sizes.append(svc.tokens.count_message(message, draft.encoding))
        else:
            sizes.append(tokens.get(draft.projection.included_seqs[index - offset], 0))
    sizes[0] += draft.breakdown["tools"] + svc.tokens.request_overhead
    _, turn_key, _ = turn_phase(ctx.records)
    seqs = draft.projection.included_seqs
    found = _index_from_end(seqs, turn_key)
    keep_from = offset + (found if found < len(seqs) else 0)
    trimmed = trim_request(
        draft.messages,
        sizes=sizes,
        keep_from=keep_from,
        limit=budget.threshold,
        count=lambda m: svc.tokens.count_message(m, draft.encoding),
    )
    log.warning(
        "request trimmed within the turn",
        extra={
            "session_id": ctx.session.session_id,
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


# ------------------------------------------------------------------ degraded
#: The longest "what was cut" words (``describe_cut``): room for the breadcrumb is
#: reserved before the cut is known.
_LONGEST_CUT = (
    f"{10**6} oldest turns and the first {10**6} messages of the turn at seq {10**9} "
    f"(message seq {10**9}-{10**9})"
)


def degraded_checkpoint(
    svc: Services,
    session_id: str,
    model: str,
    inputs: TurnInputs,
    *,
    window_cap: int | None = None,
) -> r.CompactOutcome:
    """Spec §11.3 step 4-5: drop the oldest whole turns, no summary, ``degraded=True``.

    ``window_cap`` (the size of a refused request, in our units): the request was over
    the provider's real window, so the trim must cut below it.
    """
    ctx = current_context(svc, session_id)
    budget = budget_for(svc, ctx.session, model, window_cap=window_cap)
    before = draft_for(svc, ctx, inputs, model)
    tokens = ctx.tokens[before.encoding]
    counts = [tokens[m["seq"]] for m in ctx.records]
    previous = ctx.checkpoint.summary if ctx.checkpoint else None
    last_problem = "nothing older than the newest turn to drop"
    for keep_previous in ((True, False) if previous else (False,)):
        prior = previous if keep_previous else None
        reserve = svc.tokens.count_message(
            summary_message(degraded_summary(omitted=_LONGEST_CUT, previous_summary=prior)),
            before.encoding,
        )
        room = max(budget.threshold - before.fixed - reserve, 0)
        plan = plan_cut(
            ctx.records,
            counts,
            keep_tokens=room,
            previous_first_retained=ctx.checkpoint.first_retained_seq if ctx.checkpoint else None,
            allow_turn_split=True,
        )
        if isinstance(plan, NothingToCompact):
            last_problem = plan.value
            continue
        candidate = _degraded_candidate(svc, ctx, plan, before, tokens, inputs, model, prior)
        if candidate.tokens_after <= budget.window or not keep_previous:
            if candidate.tokens_after >= candidate.tokens_before:
                last_problem = "trimming would not shrink the request"
                continue
            outcome = commit_candidate(svc, candidate)
            _, _, cut = describe_cut(plan.summarize, plan.split_turn)
            outcome.report = (
                f"Context trimmed after overflow: {outcome.tokens_before:,} -> "
                f"{outcome.tokens_after:,} tokens\n"
                f"Dropped {cut} without a summary; "
                f"kept {outcome.kept_turns} turn{'s' if outcome.kept_turns != 1 else ''} "
                f"from message seq {outcome.first_retained_seq}\n"
                "Raw history unchanged"
            )
            return outcome
    raise OverflowRetryExhausted(
        f"cannot shrink the context any further: {last_problem}",
        details={"session_id": session_id},
    )


def _degraded_candidate(
    svc: Services,
    ctx: SessionContext,
    plan: CutPlan,
    before: Draft,
    tokens: dict[int, int],
    inputs: TurnInputs,
    model: str,
    previous: str | None,
) -> Candidate:
    whole, partial, cut = describe_cut(plan.summarize, plan.split_turn)
    text = degraded_summary(omitted=cut, previous_summary=previous)
    kept = [m for m in ctx.records if m["seq"] >= plan.first_retained_seq]
    projection = build_projection(
        checkpoint=CheckpointRef("degraded", text, plan.first_retained_seq, 0, True),
        messages=kept,
        context_generation=ctx.session.context_generation + 1,
        identity=svc.identity(model),
    )
    history = sum(tokens.get(seq, 0) for seq in projection.included_seqs)
    after = build_draft(svc, projection, inputs, encoding=before.encoding, history_tokens=history, summary=text)
    return Candidate(
        session_id=ctx.session.session_id,
        base_generation=ctx.session.context_generation,
        parent_checkpoint_id=ctx.checkpoint.checkpoint_id if ctx.checkpoint else None,
        summary=text,
        first_retained_seq=plan.first_retained_seq,
        source_max_seq=ctx.session.next_seq - 1,
        reason="overflow",
        tokens_before=before.total,
        tokens_after=after.total,
        kept_turns=plan.kept_turns,
        degraded=True,
        provider_kind="deterministic",
        model=model,
        summary_source={
            "source_messages": len(plan.summarize),
            "omitted_messages": len(plan.summarize),
            "truncated_messages": 0,
            "omitted_turns": whole,
            "omitted_messages_of_split_turn": partial,
            "previous_summary_included": previous is not None,
            "split_turn": plan.split_turn,
            "strategy": "deterministic whole-turn trim (context overflow, no summary)",
        },
    )


# -------------------------------------------------------------- record_usage
def record_usage(cmd: c.RecordUsage, svc: Services) -> r.RecordUsageResult:
    memory = memory_of(svc)
    request = memory.request(cmd.session_id, cmd.request_id)
    if request.history_digest is not None:
        with memory.lock:
            memory.calibration[cmd.session_id] = Calibration(
                key=request.key,
                history_count=request.history_count,
                history_digest=request.history_digest,
                prompt_tokens=cmd.prompt_tokens,
            )
    log.info(
        "provider usage recorded",
        extra={
            "session_id": cmd.session_id,
            "request_id": cmd.request_id,
            "prompt_tokens": cmd.prompt_tokens,
            "estimated_tokens": request.estimate,
        },
    )
    return r.RecordUsageResult(
        request_id=cmd.request_id, prompt_tokens=cmd.prompt_tokens, estimated_tokens=request.estimate
    )


# ---------------------------------------------------------- recover_overflow
def recover_overflow(cmd: c.RecoverOverflow, svc: Services) -> r.TurnRequest:
    """Spec §11.3: one recovery per turn, from durable history, before any tool ran."""
    memory = memory_of(svc)
    request = memory.request(cmd.session_id, cmd.request_id)
    if cmd.tool_progress or request.phase == "continuation":
        # Spec §11.4: no formal checkpoint mid-turn, whatever the host says.
        raise OverflowNotRecoverable(
            "tools already ran in this turn: the turn cannot restart from durable history; "
            "trim the request locally and retry the same step once (spec §11.4)",
            details={"request_id": cmd.request_id, "phase": request.phase},
        )
    if not memory.claim_overflow_recovery(request):
        raise OverflowRetryExhausted(
            "this turn already had its one overflow recovery; the request overflowed again",
            details={"request_id": cmd.request_id, "retry_of": request.retry_of},
        )
    info = parse_overflow(cmd.error_message)
    log.warning(
        "context overflow",
        extra={
            "session_id": cmd.session_id,
            "request_id": cmd.request_id,
            "reported_window": info.window,
            "reported_prompt_tokens": info.prompt_tokens,
            "estimated_tokens": request.estimate,
        },
    )
    if info.window is not None:
        provider = svc.catalog.provider_of(request.model)
        mutate(svc, cmd.session_id, lambda s: s.learn_window(
            provider=provider,
            model=request.model,
            window=info.window,
            prompt_tokens=info.prompt_tokens,
            estimated_tokens=request.estimate or None,
            created_at=svc.now(),
        ))
        warnings = [f"provider reported a {info.window:,}-token window"]
    else:
        warnings = ["the provider's window could not be read from the error; "
                    "using the configured window"]
    compaction: r.CompactOutcome | None = None
    if memory.claim_summary_attempt(cmd.session_id, request.turn_key):
        try:
            compaction = compact_context(
                svc,
                cmd.session_id,
                reason="overflow",
                model=request.model,
                inputs=request.inputs,
                allow_turn_split=True,
            )
        except (SummaryFailed, StaleCandidate) as exc:
            warnings.append(f"overflow summary failed ({exc.code}): {exc.message}")
            compaction = None
        if compaction is not None and compaction.status != "compacted":
            memory.release_summary_attempt(cmd.session_id, request.turn_key)
            warnings.append("overflow summary found nothing to compact")
            compaction = None
    else:
        warnings.append("this turn already used its one summary attempt")
    if compaction is None:
        # Whatever window was read (or none), the refused request was over the real
        # one: the trim cuts below its size (spec §11.3 steps 1, 4).
        compaction = degraded_checkpoint(
            svc, cmd.session_id, request.model, request.inputs, window_cap=request.estimate or None
        )
    return build_turn_request(
        svc,
        cmd.session_id,
        request.inputs,
        request.model,
        retry_of=request.request_id,
        compaction=compaction,
        warnings=warnings,
    )
