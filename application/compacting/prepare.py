"""A compaction's prepared value (issue 38, ADR 0087): everything one summary attempt
reads, gathered once and handed forward.

pi-mono's shape: ``findCutPoint`` → ``prepareCompaction`` → ``compact``. Here
:func:`prepare_compaction` plans the cut and, when there is something to compact,
:func:`prepare_summary` gathers what the summary call and its validation need — the
covered and retained records, the per-record token counts, the keep window beside the
pins, the summary model, its budget and the bounded input with the ledger's checklist,
and the room left beside the tail — into one :class:`Preparation`. ``compaction.py``
consumes it: the summary call, validation and commit read its fields and never go back
to the session's context for a figure.

The candidate arithmetic on a :class:`TurnContext` (its cut figures, the checkpoint on
top of it, the request that checkpoint would give) lives here too: compaction, the
degraded trim, the background summary and the candidate commands all use it, and
nothing below the ``compacting`` room does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from context_compaction.domain.budget import (
    FIXED_PARTS, SUMMARY_OUTPUT_CAP, SummaryBudget, check_fixed_parts, keep_with_checklist_room, resolve_window,
)
from context_compaction.domain.checkpoint import CANDIDATE_ID, Checkpoint
from context_compaction.domain.clearing import apply_clearing
from context_compaction.domain.cutpoint import CutPlan, NothingToCompact, plan_cut
from context_compaction.domain.errors import SummaryFailed
from context_compaction.domain.ledger import FACTS_HEADING, HEADING, Ledger, LedgerItem, fair_order, present
from context_compaction.domain.cues import CATCH_ALL
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.partial import plan_partial_cut
from context_compaction.domain.projection import build_projection
from context_compaction.domain.summary import prompt_overhead, smallest_window

from ..runtime.services import Services
from ..runtime.turncontext import TurnContext
from ..state.drafts import Draft, build_draft
from .ledgers import SummaryInput, checked_ledger, summary_input, tail_statements

#: Slack for the summary's own count against its count inside the request (token
#: boundaries at the joins).
_SUMMARY_MARGIN_TOKENS = 8
#: Below this the room beside the tail is no summary at all: ``prepare_compaction`` and
#: ``summarize_candidate`` answer ``no_summary_fits`` before any call (ADR 0111).
_SMALLEST_SUMMARY = 64


# ------------------------------------------------------- the turn's cut figures
def record_counts(turn: TurnContext) -> list[int]:
    """Each record's tokens in the draft's encoding, in log order."""
    tokens = turn.ctx.tokens[turn.draft.encoding]
    return [tokens[m["seq"]] for m in turn.ctx.records]


def pinned_history_tokens(turn: TurnContext) -> int:
    """Tokens of pinned messages still in the history part (all of them before the
    first checkpoint): whatever the cut, they stay in the request (issue 16)."""
    pins = set(turn.ctx.pinned_seqs)
    if not pins:
        return 0
    tokens = turn.ctx.tokens[turn.draft.encoding]
    return sum(tokens[m["seq"]] for m in turn.ctx.records if m["seq"] in pins)


def keep_beside_pins(turn: TurnContext, pinned: int | None = None) -> int:
    """The keep window of a cut: ``budget.keep``, with pins at most half the room the
    fixed parts and the pinned messages leave under the threshold (as ``budget.keep``
    is at most half the threshold), so that pins still leave room for the summary.
    ``pinned``: :func:`pinned_history_tokens`, when the caller has it already."""
    budget, fixed = turn.budget, turn.draft.fixed
    if pinned is None:
        pinned = pinned_history_tokens(turn)
    keep = budget.keep
    if turn.ctx.pinned_seqs:
        keep = max(0, min(keep, (budget.threshold - fixed - pinned) // 2))
    # (the checklist's guaranteed room: the tail shrinks first, ADR 0083)
    return keep_with_checklist_room(keep, threshold=budget.threshold, fixed=fixed + pinned, window=budget.window)


# ------------------------------------------------------------ the candidate
def candidate_checkpoint(
    turn: TurnContext, *, summary: str, first_retained_seq: int, reason: str, provider_kind: str, model: str,
    degraded: bool, summary_source: Mapping[str, Any], ledger: Mapping[str, Any] | None = None,
    provider_state: Mapping[str, Any] | None = None,
) -> Checkpoint:
    """A checkpoint on top of ``turn``, not stored yet: the next generation,
    ``tokens_before`` its draft; ``tokens_after`` is measured by :func:`draft_with`."""
    ctx = turn.ctx
    return Checkpoint(
        checkpoint_id=CANDIDATE_ID,
        generation=ctx.session.context_generation + 1,
        parent_checkpoint_id=ctx.checkpoint.checkpoint_id if ctx.checkpoint else None,
        summary=summary,
        first_retained_seq=first_retained_seq,
        source_max_seq=ctx.session.next_seq - 1,
        trigger_reason=reason,
        provider_kind=provider_kind,
        model=model,
        tokens_before=turn.draft.total,
        tokens_after=0,
        degraded=degraded,
        summary_source=summary_source,
        created_at="",
        ledger=ledger,
        provider_state=provider_state,
    )


def draft_with(svc: Services, turn: TurnContext, checkpoint: Checkpoint) -> Draft:
    """The request as it would be with ``checkpoint`` active: what a compaction
    candidate is measured by."""
    ctx, boundary = turn.ctx, checkpoint.first_retained_seq
    kept = apply_clearing([m for m in ctx.records if m["seq"] >= boundary], ctx.cleared)
    pins = set(ctx.pinned_seqs)
    pinned = [*ctx.pinned, *(m for m in ctx.records if m["seq"] < boundary and m["seq"] in pins)]
    projection = build_projection(
        checkpoint=checkpoint, messages=kept, context_generation=checkpoint.generation,
        identity=turn.identity, pinned=pinned,
    )
    tokens = ctx.tokens[turn.draft.encoding]
    history = sum(tokens.get(seq, 0) for seq in projection.included_seqs)
    return build_draft(svc.tokens, projection, turn.inputs, encoding=turn.draft.encoding, history_tokens=history)


# ------------------------------------------------------------ the summary's limits
def summarizer_name(svc: Services) -> str:
    """What ``svc.summarizer`` is called in the log: its ``provider_kind`` when it has
    one (the extractive one, a plugged-in one), else the configured name."""
    return str(getattr(svc.summarizer, "provider_kind", None) or svc.settings.summarizer)


def summary_budget_for(window: int, count: Callable[[str], int]) -> SummaryBudget:
    """The summary call's limits in this window; ``SummaryFailed`` when it has none."""
    output_cap = min(SUMMARY_OUTPUT_CAP, window // 4)
    summary_budget = SummaryBudget.compute(window, prompt_overhead(count, output_cap))
    if not summary_budget.feasible:
        smallest = smallest_window(count, SUMMARY_OUTPUT_CAP)
        raise SummaryFailed(
            f"the {window:,}-token window leaves no room for a summary request; the smallest "
            f"window that can compact is {smallest:,} tokens",
            details={"window": window, "smallest_window": smallest},
        )
    return summary_budget


def summary_window(svc: Services, model: str, session_window: int) -> int:
    """The window a summary request must fit: the session's, and the summary model's
    own (configured or catalog) when ``summary_model`` names another model."""
    config = svc.settings.model_config_for(model)
    if config.token_limit is None and svc.catalog.max_input_tokens(model) is None:
        return session_window  # nothing known of it: not the 128k default either
    own = resolve_window(configured_limit=config.token_limit, catalog_limit=svc.catalog.max_input_tokens(model))
    return min(session_window, own.hard_window)


# ------------------------------------------------------------ the prepared value
@dataclass(frozen=True)
class Part:
    """What a manual ``compact`` asked for beyond the default cut (issue 43)."""

    up_to_seq: int | None = None
    fraction: float | None = None

    @property
    def limited(self) -> bool:
        return self.up_to_seq is not None or self.fraction is not None


@dataclass(frozen=True)
class Preparation:
    """What one summary attempt reads, gathered once by :func:`prepare_summary`."""

    #: The context the cut was planned on (its draft is the "before" of the candidate).
    turn: TurnContext
    #: ``auto``, ``manual`` or ``overflow``: the checkpoint's trigger reason.
    reason: str
    #: The cut: the records to summarize, where the kept tail starts, its turns.
    plan: CutPlan
    #: The raw records from ``plan.first_retained_seq`` on (the tail the summary is read beside).
    retained: list[MessageRecord]
    #: The checkpoint the candidate replaces (its summary, ledger, provider state), if any.
    previous: Checkpoint | None
    #: The model that writes the summary (``summary_model``, else the session's).
    model: str
    #: What the summarizer is called in spans, metrics and the attempt log.
    summarizer: str
    #: Counts text in the draft's encoding.
    count: Callable[[str], int]
    #: The summary call's input budget and output reserve in the summary window.
    budget: SummaryBudget
    #: The bounded source, the prompt with its must-keep lines, the checklist.
    input: SummaryInput
    #: The output asked for: what fits beside the kept tail under the threshold.
    max_output_tokens: int
    #: The request with the smallest summary the candidate can carry: the summary block
    #: and the values of the checklist items its write-back has room for.
    smallest_after: int
    #: The kept tail's statements that supersede older values (``tail_statements``): read
    #: by the shrink check here and by ``verify_summary``, extracted once (ADR 0103).
    tail: tuple[LedgerItem, ...] = ()
    #: The request's parts with a one-character summary (``Draft.breakdown``): what an
    #: error names when no summary fits beside them.
    breakdown: Mapping[str, int] | None = None



def prepare_compaction(
    svc: Services, turn: TurnContext, reason: str, *, allow_turn_split: bool = False, part: Part | None = None
) -> Preparation | NothingToCompact:
    """Plan the cut of ``turn`` (limited by ``part``, issue 43) and prepare its summary
    attempt; the reason why not when there is nothing to compact."""
    ctx = turn.ctx
    previous = ctx.checkpoint.first_retained_seq if ctx.checkpoint else None
    counts, pinned = record_counts(turn), pinned_history_tokens(turn)
    plan = plan_partial_cut(
        ctx.records, counts, up_to_seq=part.up_to_seq, fraction=part.fraction, previous_first_retained=previous,
    ) if part is not None and part.limited else plan_cut(
        ctx.records, counts, keep_tokens=keep_beside_pins(turn, pinned), previous_first_retained=previous,
        allow_turn_split=allow_turn_split,
    )
    if isinstance(plan, NothingToCompact):
        return plan  # (the turn's overflow recovery may split the newest turn, spec §9.2)
    prepared = prepare_summary(svc, turn, plan, reason, pinned=pinned)
    if not (part is not None and part.limited) and not fits_a_summary(prepared):
        # The newest whole turn leaves no summary room under the threshold (a 1,000-token
        # window, issue 44): the kept tail gives way first, down to the turn under way.
        smaller = plan_cut(ctx.records, counts, keep_tokens=keep_beside_pins(turn, pinned),
                           previous_first_retained=previous, allow_turn_split=allow_turn_split,
                           keep_newest_turn=False)
        if isinstance(smaller, CutPlan) and smaller.first_retained_seq > plan.first_retained_seq:
            prepared = prepare_summary(svc, turn, smaller, reason, pinned=pinned)
    # No summary could pass §10.4's shrink check: say so before the call. (A call still
    # waiting held the boundary back: its refusal names it, the cause the host can clear.)
    if prepared.smallest_after >= turn.draft.total and prepared.plan.waiting_call is None:
        return NothingToCompact.SUMMARY_NOT_SMALLER
    if not fits_a_summary(prepared):  # (no summary fits: no call that must fail, say why, issue 44)
        raise no_summary_fits(prepared)
    return prepared


def no_summary_fits(prepared: Preparation) -> SummaryFailed:
    """Why no summary fits beside what the candidate keeps: its parts, the largest named,
    and the smallest window that leaves a summary room beside them."""
    budget, parts = prepared.turn.budget, dict(prepared.breakdown or {})
    first, pinned, kept = prepared.plan.first_retained_seq, parts.get("pinned", 0), parts.get("history", 0)
    fixed = sum(parts.get(p, 0) for p in FIXED_PARTS) - pinned
    other = prepared.smallest_after - pinned - kept - fixed  # (the summary block, the checklist's least)
    need = prepared.smallest_after + _SUMMARY_MARGIN_TOKENS + _SMALLEST_SUMMARY
    # (the threshold is the window less min(reserve, window // 2), spec §8.2)
    window = 2 * need if need <= budget.configured_reserve else need + budget.configured_reserve
    named = {"pinned messages": pinned, f"messages kept verbatim from seq {first}": kept,
             "system prompt, tools and other fixed parts": fixed}
    largest = max(named, key=lambda k: named[k])
    return SummaryFailed(
        f"no summary fits under the {budget.threshold:,}-token threshold: the context without it needs "
        f"{prepared.smallest_after:,} tokens (pinned messages: {pinned:,}, messages kept verbatim from seq "
        f"{first}: {kept:,}, fixed parts: {fixed:,}, summary block and checklist: {other:,}), mostly the "
        f"{largest}, and no room for a summary of {_SMALLEST_SUMMARY} tokens beside them; the smallest window "
        f"that can compact it is {window:,} tokens" + (" (or unpin messages)" if largest == "pinned messages" else ""),
        details={"smallest_after": prepared.smallest_after, "first_retained_seq": first,
                 "threshold": budget.threshold, "window": budget.window, "smallest_window": window,
                 "breakdown": {"pinned": pinned, "kept": kept, "fixed": fixed, "summary_and_checklist": other}},
    )


def fits_a_summary(prepared: Preparation) -> bool:
    """Whether the smallest candidate of ``prepared`` leaves a summary room under the threshold."""
    beside = prepared.turn.budget.threshold - prepared.smallest_after - _SUMMARY_MARGIN_TOKENS
    return beside >= _SMALLEST_SUMMARY


def prepare_summary(
    svc: Services, turn: TurnContext, plan: CutPlan, reason: str, *, pinned: int | None = None
) -> Preparation:
    """The summary attempt of ``plan``'s cut; ``SummaryFailed`` when the window leaves
    the summary no room."""
    ctx, budget, encoding = turn.ctx, turn.budget, turn.draft.encoding

    def count(text: str) -> int:
        return svc.tokens.count_text(text, encoding)

    if pinned is None:
        pinned = pinned_history_tokens(turn)
    model = svc.settings.summary_model_for(turn.model)
    limits = summary_budget_for(summary_window(svc, model, budget.window), count)
    # The tail the cut really keeps: at least the newest whole turn, which can be more than
    # the keep budget (ADR 0083 shrinks that budget for the checklist's room). The summary
    # is asked to fit beside it under the threshold, so that a summarizer that fills its
    # output (the extractive one does) is not refused afterwards for a size it was allowed.
    tokens, pins, first = ctx.tokens[encoding], set(ctx.pinned_seqs), plan.first_retained_seq
    retained = [m for m in ctx.records if m["seq"] >= first]
    kept = sum(tokens[m["seq"]] for m in retained if m["seq"] not in pins)
    room = (budget.threshold - max(keep_beside_pins(turn, pinned), kept) - turn.draft.fixed - pinned
            - limits.output_reserve)
    checkpoint = ctx.checkpoint
    built = summary_input(checkpoint.summary if checkpoint else None, checkpoint.ledger if checkpoint else None,
                          plan.summarize, source_budget=limits.source_budget, output_reserve=limits.output_reserve,
                          room=room, count=count,  # issue 44
                          reads_prompt=getattr(svc.summarizer, "reads_prompt", True))
    # (measured, not guessed: the request with a one-character summary is the rest of it)
    empty = draft_with(svc, turn, candidate_checkpoint(
        turn, summary=".", first_retained_seq=first, reason=reason, provider_kind="",
        model=model, degraded=False, summary_source={}))
    # (pinned messages the cut passes become fixed parts: when they alone break the
    # threshold that is the error, before a summary call that could not help, spec §8.4)
    check_fixed_parts(empty.breakdown, budget.threshold)
    beside = budget.threshold - empty.total - _SUMMARY_MARGIN_TOKENS
    # (the write-back's room is the checklist's guaranteed share: a summary that fills
    # ``beside`` left it none, and its restored lines went over the threshold, issue 44)
    if beside - built.ledger_tokens >= _SMALLEST_SUMMARY:
        beside -= built.ledger_tokens
    max_output = min(limits.output_reserve, beside) if beside >= _SMALLEST_SUMMARY else limits.output_reserve
    tail = tail_statements(retained)
    return Preparation(
        turn=turn, reason=reason, plan=plan, retained=retained, previous=checkpoint, model=model,
        summarizer=summarizer_name(svc), count=count, budget=limits,
        input=built, max_output_tokens=max_output,
        # (checked as ``verify_summary`` checks: the kept tail supersedes what it restates)
        smallest_after=empty.total + carried_floor(
            tuple(fair_order(checked_ledger(Ledger(built.checklist), tail).items)), built.ledger_tokens, count),
        tail=tail, breakdown=empty.breakdown,
    )


def carried_floor(checklist: tuple[LedgerItem, ...], budget_tokens: int, count: Callable[[str], int]) -> int:
    """Tokens the checklist adds to any summary at least: an item the write-back has room
    for is either stated by the summary (its value, at least) or written back (its line).
    The room is counted as ``verify`` spends it, each heading as new: never more items
    than it could restore. An item another item's value states costs nothing: stating
    that one states both (a constraint naming a path)."""
    spent, floor, headings = 0, 0, set()
    joined = "\0".join(i.value for i in checklist)
    for item in checklist:
        if item.kind in CATCH_ALL:
            continue  # (ADR 0099: a remark may be left out within its own share; it adds nothing for sure)
        heading = HEADING.get(item.kind, FACTS_HEADING)
        cost = count(item.line()) + 1 + (0 if heading in headings else count(f"## {heading}") + 2)
        if spent + cost > budget_tokens:
            continue
        spent += cost
        headings.add(heading)
        if joined.count(item.value) > 1 and any(o is not item and present(o.value, item) for o in checklist):
            continue
        floor += count(item.value)
    return floor
