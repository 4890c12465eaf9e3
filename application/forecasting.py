"""/info's forecast (issue 43): the session's recent growth against its budget."""

from __future__ import annotations

from context_compaction.domain.cutpoint import group_turns
from context_compaction.domain.forecast import Forecast, forecast

from . import results as r
from .turncontext import TurnContext


def turn_growth(turn: TurnContext) -> list[int]:
    """The tokens each complete visible turn added, oldest first."""
    return [t.tokens for t in group_turns(turn.records, turn.record_counts()) if t.complete]


def context_forecast(turn: TurnContext, used: int) -> Forecast:
    return forecast(turn_growth(turn), used=used, threshold=turn.budget.threshold, window=turn.budget.window)


def forecast_result(found: Forecast) -> r.ContextForecast:
    return r.ContextForecast(**found.__dict__)


def forecast_text(f: r.ContextForecast) -> str:
    if f.tokens_per_turn is None:
        return f"unknown (no complete turn yet); {f.tokens_to_threshold:,} tokens to the threshold"
    def turns(n: int | None) -> str:
        return "?" if n is None else f"~{n:,} turns"
    return (f"{turns(f.turns_to_threshold)} ({f.tokens_to_threshold:,} tokens) to the threshold, "
            f"{turns(f.turns_to_window)} ({f.tokens_to_window:,}) to the window; "
            f"{f.tokens_per_turn:,} tokens/turn, {f.method}")
