"""/info's forecast (issue 43): the session's recent growth against its budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from context_compaction.domain.cutpoint import group_turns
from context_compaction.domain.forecast import LAST_TURNS, Forecast, forecast
from context_compaction.domain.messages import MessageRecord

from ..contracts import results as r
from ..runtime.turncontext import TurnContext


def turn_growth(records: Sequence[MessageRecord], count: Callable[[MessageRecord], int],
                wanted: int = LAST_TURNS) -> list[int]:
    """The tokens each of the last ``wanted`` (or more) complete visible turns added,
    oldest first. Only the tail is grouped, so /info stays flat in the session's length:
    grouping from a user message gives the full grouping's turns after the first group
    (which may be the end of a longer turn, and is dropped). ``count``: a record's tokens,
    asked only for the tail (a list of every record's count was the one O(N) step left
    in a turn's usage report: 1 ms at 4,000 messages)."""
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
        tail = records[start:]
        turns = group_turns(tail, [count(record) for record in tail])
        complete = [t.tokens for t in (turns[1:] if start else turns) if t.complete]
        if start == 0 or len(complete) >= wanted:
            return complete
        candidates *= 2


def token_count(turn: TurnContext) -> Callable[[MessageRecord], int]:
    """A record's tokens in the draft's encoding (``prepare.record_counts``, one at a time)."""
    tokens = turn.ctx.tokens[turn.draft.encoding]
    return lambda record: tokens[record["seq"]]


def context_forecast(turn: TurnContext, used: int) -> Forecast:
    return forecast(turn_growth(turn.records, token_count(turn)), used=used, threshold=turn.budget.threshold, window=turn.budget.window)


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
