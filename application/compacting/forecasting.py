"""/info's forecast (issue 43): the session's recent growth against its budget."""

from __future__ import annotations

from collections.abc import Sequence

from context_compaction.domain.cutpoint import group_turns
from context_compaction.domain.forecast import LAST_TURNS, Forecast, forecast
from context_compaction.domain.messages import MessageRecord

from ..contracts import results as r
from ..runtime.turncontext import TurnContext
from .prepare import record_counts


def turn_growth(records: Sequence[MessageRecord], counts: Sequence[int], wanted: int = LAST_TURNS) -> list[int]:
    """The tokens each of the last ``wanted`` (or more) complete visible turns added,
    oldest first. Only the tail is grouped, so /info stays flat in the session's length:
    grouping from a user message gives the full grouping's turns after the first group
    (which may be the end of a longer turn, and is dropped). ``counts``: each record's
    tokens (``prepare.record_counts``)."""
    candidates = wanted + 2
    while True:
        start, seen = 0, 0
        for index in range(len(records) - 1, -1, -1):
            record = records[index]
            if record["role"] == "user" and not record.get("steering"):
                seen += 1
                if seen == candidates:
                    start = index
                    break
        turns = group_turns(records[start:], counts[start:])
        complete = [t.tokens for t in (turns[1:] if start else turns) if t.complete]
        if start == 0 or len(complete) >= wanted:
            return complete
        candidates *= 2


def context_forecast(turn: TurnContext, used: int) -> Forecast:
    return forecast(turn_growth(turn.records, record_counts(turn)), used=used, threshold=turn.budget.threshold, window=turn.budget.window)


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
