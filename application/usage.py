"""/info (spec §16): every figure of the budget, from the same code the trigger uses."""

from __future__ import annotations

from context_compaction.domain.budget import Budget

from . import commands as c
from . import results as r
from .context import Draft, SessionContext, TurnInputs, budget_for, current_context, draft_for
from .services import Services

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
    lines = [
        row("Context window", window),
        row("Reserve", pair(u.reserve_tokens, u.configured_reserve_tokens)),
        row("Keep recent", pair(u.effective_keep_recent_tokens, u.configured_keep_recent_tokens)),
        row(
            "Compaction threshold",
            f"{u.compression_threshold_tokens:,}"
            + ("" if u.auto_compaction_enabled else " (auto compaction disabled)"),
        ),
        row("Used", f"{u.used_tokens:,} ({USAGE_LABELS.get(u.usage_source, u.usage_source)})"),
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
    ctx = current_context(svc, cmd.session_id)
    model = cmd.model or ctx.session.model
    draft = draft_for(svc, ctx, inputs_of(cmd), model)
    return context_usage(
        ctx,
        draft,
        budget_for(svc, ctx.session, model),
        model=model,
        used=draft.total,
        usage_source="estimated",
    )

