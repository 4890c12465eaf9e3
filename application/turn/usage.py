"""/info (spec §16, §21.10): the budget the trigger decides on, from the same code.

``decide_usage`` (turncontext.py) is THE used-token figure: the provider-measured prompt of the last
request plus our estimate of what was added since, when the calibration key matches
(spec §7.2), else the local estimate. ``prepare_turn`` decides on it; ``/info`` shows
it, beside the pure local estimate (seed 003 rule 4 keeps statistics local).
"""

from __future__ import annotations

from typing import Any

from ..contracts import commands as c
from ..contracts import results as r
from ..state.drafts import inputs_of
from ..compacting.breaker import breaker_state
from ..history.costs import cost_line, session_cost
from ..compacting.forecasting import context_forecast, forecast_result, forecast_text
from ..runtime.services import Services
from ..runtime.turncontext import TurnContext, UsageDecision, decide_usage, prepare_context

USAGE_LABELS = {
    "estimated": "local estimate",
    "measured+estimated": "provider-measured + tail estimate",
}


# --------------------------------------------------------------------- /info
def prompt_cache_usage(svc: Services, session_id: str) -> r.PromptCacheUsage | None:
    """The cached share of the session's recent requests, as the provider reported it."""
    found = svc.turns.cache_usage(session_id)
    if found is None:
        return None
    requests, prompt, cached, created = found
    return r.PromptCacheUsage(
        requests=requests,
        prompt_tokens=prompt,
        cached_tokens=cached,
        cache_creation_tokens=created,
        cached_share=round(cached / prompt, 4) if prompt else 0.0,
    )


def context_usage(svc: Services, turn: TurnContext, decision: UsageDecision) -> r.ContextUsage:
    """The §16 figures of ``turn``'s request, ``decision`` being what the trigger uses,
    with the session's prompt-cache share."""
    cache = prompt_cache_usage(svc, turn.session_id)
    ctx, draft, budget = turn.ctx, turn.draft, turn.budget
    used, usage_source = decision.used, decision.source
    cp = ctx.checkpoint
    usage = r.ContextUsage(
        session_id=ctx.session.session_id,
        model=turn.model,
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
        ledger=_coverage(cp.ledger_report if cp else None),
        breakdown=dict(draft.breakdown),
        text="",
        prompt_cache=cache,
        reported_window_tokens=learned.window if (learned := ctx.session.learned_windows.get(turn.model)) else None,
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
    if u.reported_window_tokens is not None:
        window += f"; provider reported {u.reported_window_tokens:,} in its units"
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
        if u.ledger is not None:
            lg = u.ledger
            lines.append(row(
                "Ledger",
                f"{lg['items_total']:,} items: {lg['in_summary']:,} in summary, "
                f"{lg['restored']:,} restored, {lg['dropped']:,} dropped{_before(lg)}",
            ))
    else:
        lines.append(row("Active checkpoint", "none"))
    parts = ", ".join(f"{k} {v:,}" for k, v in u.breakdown.items() if v)
    lines.append(row("Breakdown", parts or "empty"))
    if u.prompt_cache is not None:
        pc = u.prompt_cache
        lines.append(row("Prompt cache", f"{pc.cached_share:.0%} cached over the last {pc.requests} requests"))
    return "\n".join(lines)


def _waiting_calls(records: Any) -> list[tuple[str, int]]:
    """(call id, seq) of the visible calls no visible record answers, oldest first."""
    issued: dict[str, int] = {}
    for record in records:
        for call in record.get("tool_calls") or ():
            issued.setdefault(call["id"], record["seq"])
        if record["role"] == "tool":
            issued.pop(record.get("tool_call_id") or "", None)
    return sorted(issued.items(), key=lambda item: item[1])


def get_context_usage(cmd: c.GetContextUsage, svc: Services) -> r.ContextUsage:
    """The figures the next ``prepare_turn`` with the same inputs decides on."""
    turn = prepare_context(svc, cmd.session_id, inputs_of(cmd), cmd.model)
    decision = decide_usage(svc, turn)
    usage = context_usage(svc, turn, decision)
    _forecast_and_cost(svc, turn, decision.used, usage)
    state = breaker_state(svc, cmd.session_id, turn.records)
    usage.compaction_breaker = r.CompactionBreaker(**state.to_record())
    roll_up_children(svc, usage, lambda sid: get_context_usage(c.GetContextUsage(session_id=sid), svc))
    # (only the builder's open tail can hold a waiting call: /info stays flat in N)
    waiting = _waiting_calls(turn.ctx.builder(turn.identity).open_records)
    usage.waiting_tool_calls = [{"tool_call_id": call_id, "seq": seq} for call_id, seq in waiting]
    if waiting:
        usage.text += (f"\n{'Waiting tool calls':<22}{len(waiting)}; the compaction boundary stays at or "
                       f"before seq {waiting[0][1]} until {waiting[0][0]!r} has its result")
    if state.open:
        usage.text += (f"\nAuto compaction     paused after {state.failures_in_a_row} failed attempts"
                       f" ({state.turns_left} more turns)")
    return usage


from context_compaction.application.history.forks import roll_up_children  # noqa: E402 (issue 42)


def _forecast_and_cost(svc: Services, turn: TurnContext, used: int, usage: r.ContextUsage) -> None:
    """/info's forecast and cost lines (issue 43)."""
    usage.forecast = forecast_result(context_forecast(turn, used))
    usage.text += f"\n{'Forecast':<22}{forecast_text(usage.forecast)}"
    cost = session_cost(svc, turn.session_id)
    usage.cost_usd = cost.total.total_usd if cost.total.priced else None
    if cost.total.calls:
        usage.text += f"\n{'Cost':<22}{cost_line(cost)}"


def _before(ledger: dict[str, int]) -> str:
    """How many of the dropped an earlier checkpoint listed (ADR 0107): the checkpoint's
    ``dropped_items`` name only what left in its compaction."""
    before = ledger.get("dropped_before", 0)
    return f" ({before:,} of them listed by an earlier checkpoint)" if before else ""


def _coverage(report: dict[str, Any] | None) -> dict[str, int] | None:
    """The active checkpoint's ledger coverage (the dropped list is its own query)."""
    if report is None:
        return None
    # (dropped_before: of the dropped, those an earlier checkpoint listed, ADR 0107; 0 in older records)
    return {k: int(report.get(k, 0)) for k in ("items_total", "in_summary", "restored", "dropped", "dropped_before")}
