"""/info's forecast groups only the session's tail into turns (so /info stays flat in the
session's length), and gets the same recent turns as grouping the whole history."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compaction.application.compacting.forecasting import turn_growth
from context_compaction.domain.cutpoint import group_turns
from context_compaction.domain.forecast import LAST_TURNS

record = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool"]),
    "steering": st.booleans(),
    "turn_id": st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
    "tokens": st.integers(min_value=1, max_value=50),
})


class Tail:
    """What ``turn_growth`` is given: the visible records and their counts."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = [{**r, "seq": n + 1} for n, r in enumerate(records)]

    def record_counts(self) -> list[int]:
        return [r["tokens"] for r in self.records]

    @staticmethod
    def count(record: dict[str, Any]) -> int:
        return record["tokens"]


@settings(max_examples=300, deadline=None)
@given(st.lists(record, max_size=120))
def test_the_tail_gives_the_last_complete_turns_of_the_whole_history(records: list[dict[str, Any]]) -> None:
    tail = Tail(records)
    whole = [t.tokens for t in group_turns(tail.records, tail.record_counts()) if t.complete]
    assert turn_growth(tail.records, tail.count)[-LAST_TURNS:] == whole[-LAST_TURNS:]


def test_a_long_history_is_grouped_only_near_its_end() -> None:
    turns = [[{"role": "user", "steering": False, "turn_id": None, "tokens": 5},
              {"role": "assistant", "steering": False, "turn_id": None, "tokens": 7}] for _ in range(5000)]
    tail = Tail([m for t in turns for m in t])
    grouped: list[int] = []
    import context_compaction.application.compacting.forecasting as forecasting

    original = forecasting.group_turns
    forecasting.group_turns = lambda records, counts: grouped.append(len(records)) or original(records, counts)
    try:
        asked: list[int] = []
        assert turn_growth(tail.records, lambda r: asked.append(r["seq"]) or tail.count(r)) == [12] * (LAST_TURNS + 1)
    finally:
        forecasting.group_turns = original
    assert grouped and max(grouped) <= 2 * (LAST_TURNS + 2), grouped  # never the whole 10,000
    assert len(asked) <= 2 * (LAST_TURNS + 2), len(asked)  # nor each record's count
