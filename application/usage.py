"""/info (spec §16, §21.10): the budget the trigger decides on, from the same code.

``decided_usage`` is THE used-token figure: the provider-measured prompt of the last
request plus our estimate of what was added since, when the calibration key matches
(spec §7.2), else the local estimate. ``prepare_turn`` decides on it; ``/info`` shows
it, beside the pure local estimate (seed 003 rule 4 keeps statistics local).
"""

from __future__ import annotations

import hashlib
import json

from context_compaction.domain.budget import Budget

from . import commands as c
from . import results as r
from .context import Draft, SessionContext, TurnInputs, budget_for, current_context, draft_for
from .services import Services
from .turnstate import CalibrationKey, memory_of

USAGE_LABELS = {
    "estimated": "local estimate",
    "measured+estimated": "provider-measured + tail estimate",
}


def inputs_of(cmd: c.TurnInputsMixin) -> TurnInputs:
    return TurnInputs(
        system_prompt=cmd.system_prompt,
        tools=tuple(cmd.tools or ()),
        knowledge=cmd.knowledge,
        active_plan=cmd.active_plan,
    )


# --------------------------------------------------------------- calibration
def fixed_digest(draft: Draft) -> str:
    fixed = [m for m in draft.messages[:1] if m.get("role") == "system"]
    payload = json.dumps([fixed, draft.tools], sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def calibration_key(svc: Services, ctx: SessionContext, draft: Draft, model: str) -> CalibrationKey:
    return CalibrationKey(
        provider=svc.catalog.provider_of(model),
        model=model,
        generation=ctx.session.context_generation,
        checkpoint_id=ctx.checkpoint.checkpoint_id if ctx.checkpoint else None,
        fixed_digest=fixed_digest(draft),
    )


def decided_usage(
    svc: Services, ctx: SessionContext, draft: Draft, model: str
) -> tuple[CalibrationKey, int, str]:
    """(calibration key, used tokens, usage source) for the request ``draft``.

    ``measured + estimate(suffix)`` when the key matches and what was sent is an exact
    prefix of what will be sent; the full local estimate otherwise (spec §7.2).
    """
    key = calibration_key(svc, ctx, draft, model)
    cal = memory_of(svc).calibration.get(ctx.session.session_id)
    projection = draft.projection
    raw_count = len(projection.included_seqs)
    if cal is None or cal.key != key or cal.history_count > raw_count:
        return key, draft.total, "estimated"
    identity = svc.identity(model)
    with ctx.lock:
        digest = ctx.builder(identity).history_digest(projection, cal.history_count)
    if digest != cal.history_digest:
        return key, draft.total, "estimated"
    tokens = ctx.tokens[draft.encoding]
    suffix = sum(tokens.get(seq, 0) for seq in projection.included_seqs[cal.history_count :])
    return key, cal.prompt_tokens + suffix, "measured+estimated"


# --------------------------------------------------------------------- /info
def context_usage(
    ctx: SessionContext,
    draft: Draft,
    budget: Budget,
    *,
    model: str,
    used: int,
    usage_source: str,
) -> r.ContextUsage:
    cp = ctx.checkpoint
    usage = r.ContextUsage(
        session_id=ctx.session.session_id,
        model=model,
        configured_window_tokens=budget.configured_window,
        effective_window_tokens=budget.window,
        window_source=budget.window_source,
        configured_reserve_tokens=budget.configured_reserve,
        reserve_tokens=budget.reserve,
        configured_keep_recent_tokens=budget.configured_keep,
        effective_keep_recent_tokens=budget.keep,
        compression_threshold_tokens=budget.threshold,
        used_tokens=used,
        estimated_tokens=draft.total,
        remaining_tokens=max(0, budget.window - used),
        usage_source=usage_source,  # type: ignore[arg-type]
        auto_compaction_enabled=budget.enabled,
        would_compact=budget.should_compact(used),
        active_checkpoint_id=cp.checkpoint_id if cp else None,
        checkpoint_generation=ctx.session.context_generation,
        checkpoint_tokens_before=cp.tokens_before if cp else None,
        checkpoint_tokens_after=cp.tokens_after if cp else None,
        checkpoint_degraded=bool(cp and cp.degraded),
        breakdown=dict(draft.breakdown),
        text="",
    )
    usage.text = usage_text(usage)
    return usage


def usage_text(u: r.ContextUsage) -> str:
    """The §16 text form, with thousands separators and configured vs effective values."""

    def row(label: str, value: str) -> str:
        return f"{label:<22}{value}"

    def pair(effective: int, configured: int) -> str:
        return f"{effective:,}" if effective == configured else f"{effective:,} (configured {configured:,})"

    window = f"{u.effective_window_tokens:,}"
    if u.effective_window_tokens != u.configured_window_tokens:
        window += f" ({u.window_source}; model {u.configured_window_tokens:,})"
    source = USAGE_LABELS.get(u.usage_source, u.usage_source)
    if u.usage_source != "estimated":
        source += f"; local estimate {u.estimated_tokens:,}"
    used = f"{u.used_tokens:,} ({source})"
    lines = [
        row("Context window", window),
        row("Reserve", pair(u.reserve_tokens, u.configured_reserve_tokens)),
        row("Keep recent", pair(u.effective_keep_recent_tokens, u.configured_keep_recent_tokens)),
        row(
            "Compaction threshold",
            f"{u.compression_threshold_tokens:,}"
            + ("" if u.auto_compaction_enabled else " (auto compaction disabled)"),
        ),
        row("Used", used),
        row("Remaining", f"{u.remaining_tokens:,}"),
    ]
    if u.active_checkpoint_id:
        cp = (
            f"{u.active_checkpoint_id}, {u.checkpoint_tokens_before or 0:,} -> "
            f"{u.checkpoint_tokens_after or 0:,}"
        )
        if u.checkpoint_degraded:
            cp += " (degraded: no semantic summary)"
        lines.append(row("Active checkpoint", cp))
    else:
        lines.append(row("Active checkpoint", "none"))
    parts = ", ".join(f"{k} {v:,}" for k, v in u.breakdown.items() if v)
    lines.append(row("Breakdown", parts or "empty"))
    return "\n".join(lines)


def get_context_usage(cmd: c.GetContextUsage, svc: Services) -> r.ContextUsage:
    """The figures the next ``prepare_turn`` with the same inputs decides on."""
    ctx = current_context(svc, cmd.session_id)
    model = cmd.model or ctx.session.model
    draft = draft_for(svc, ctx, inputs_of(cmd), model)
    _, used, source = decided_usage(svc, ctx, draft, model)
    return context_usage(
        ctx, draft, budget_for(svc, ctx.session, model), model=model, used=used, usage_source=source
    )
