"""When the context will reach the trigger and the window (issue 43).

The method is named in every forecast: the median of the tokens each of the last
``n`` complete turns added (a median, so one huge tool output does not set the pace),
and the turns left is the tokens left divided by it, rounded up.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

LAST_TURNS = 8


class Forecast(BaseModel):
    """Turns and tokens until the threshold and the window. Its fields are /info's
    ``forecast`` as they are (``results.ContextForecast`` is this model, named for the
    contract), so they are declared here once."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    method: str
    """How: ``median tokens added per turn over the last N turns`` (N named)."""
    turns_observed: int
    tokens_per_turn: int | None
    tokens_to_threshold: int
    turns_to_threshold: int | None
    """None when the growth is unknown (no complete turn observed) or zero."""
    tokens_to_window: int
    turns_to_window: int | None


def turns_until(tokens_left: int, per_turn: int | None) -> int | None:
    if per_turn is None or per_turn <= 0:
        return None
    return math.ceil(tokens_left / per_turn) if tokens_left > 0 else 0


def forecast(
    turn_tokens: Sequence[int], *, used: int, threshold: int, window: int, n: int = LAST_TURNS
) -> Forecast:
    """``turn_tokens``: the tokens each complete turn added, oldest first."""
    recent = list(turn_tokens)[-n:] if n > 0 else []
    per_turn = int(statistics.median(recent)) if recent else None
    to_threshold, to_window = max(0, threshold - used), max(0, window - used)
    return Forecast(
        method=f"median tokens added per turn over the last {len(recent)} of up to {n} complete turns",
        turns_observed=len(recent),
        tokens_per_turn=per_turn,
        tokens_to_threshold=to_threshold,
        turns_to_threshold=turns_until(to_threshold, per_turn),
        tokens_to_window=to_window,
        turns_to_window=turns_until(to_window, per_turn),
    )
