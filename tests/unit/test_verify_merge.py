"""``ctxc verify`` compares each table as a merge of two key-ordered streams
(issue 18 (b), ADR 0044): only the keys that differ are kept."""

from __future__ import annotations

from context_compaction.infrastructure.verify import _diff


def test_the_merge_finds_missing_unexpected_and_different_rows_anywhere_in_the_order() -> None:
    live = [("a", 1, "x"), ("a", 2, "x"), ("b", 1, "changed"), ("c", 5, "x"), ("d", 1, "x")]
    rebuilt = [("a", 2, "x"), ("a", 3, "x"), ("b", 1, "x"), ("c", 5, "x"), ("e", 1, "x")]
    diff = _diff("rm_messages", iter(live), iter(rebuilt))  # key (session_id, seq)
    assert (diff.live, diff.rebuilt) == (5, 5)
    assert diff.extra == ["a/1", "d/1"]
    assert diff.missing == ["a/3", "e/1"]
    assert diff.different == ["b/1"]
    assert not diff.ok


def test_equal_streams_match_and_empty_sides_are_all_missing_or_unexpected() -> None:
    rows = [("s", n, "x") for n in range(1, 2000)]
    same = _diff("rm_messages", iter(rows), iter(list(rows)))
    assert same.ok and same.live == same.rebuilt == 1999
    gone = _diff("rm_messages", iter([]), iter(rows[:3]))
    assert gone.missing == ["s/1", "s/2", "s/3"] and gone.live == 0
    left = _diff("rm_messages", iter(rows[:2]), iter([]))
    assert left.extra == ["s/1", "s/2"] and left.rebuilt == 0
