"""``group_split_by``: the group a cut would split, found without ``last_seq`` per group
(ADR 0052), with the same answer as the plain scan of every group."""

from __future__ import annotations

import random

import pytest

from context_compaction.domain import toolgroups
from context_compaction.domain.toolgroups import ToolGroup, group_split_by


def plain_scan(groups: list[ToolGroup], first_retained_seq: int) -> ToolGroup | None:
    for group in groups:
        if group.seq < first_retained_seq <= group.last_seq:
            return group
    return None


def random_groups(rng: random.Random) -> list[ToolGroup]:
    groups, seq = [], 1
    for _ in range(rng.randrange(0, 40)):
        seq += rng.randrange(1, 4)
        # Results mostly follow the call; some arrive much later, some never.
        results = [(seq + rng.choice((1, 2, 3, 60, 200)), f"c{seq}-{k}") for k in range(rng.randrange(0, 4))]
        rng.shuffle(results)
        groups.append(ToolGroup(seq, [f"c{seq}"], results))
    return groups


@pytest.mark.parametrize("seed", range(40))
def test_the_answer_is_the_plain_scans(seed: int) -> None:
    rng = random.Random(seed)
    groups = random_groups(rng)
    for cut in range(0, (groups[-1].seq + 210) if groups else 5):
        assert group_split_by(groups, cut) is plain_scan(groups, cut), cut


def test_a_call_answered_long_after_is_still_found() -> None:
    groups = [ToolGroup(5, ["a"], [(500, "a")]), *(ToolGroup(s, ["x"], [(s + 1, "x")]) for s in range(10, 400, 3))]
    assert group_split_by(groups, 450) is groups[0]
    assert group_split_by(groups, 501) is None


def test_groups_at_or_after_the_cut_and_unanswered_ones_are_not_measured(monkeypatch) -> None:
    measured = []
    original = ToolGroup.last_seq

    def spy(self: ToolGroup) -> int:
        measured.append(self.seq)
        return original.fget(self)  # type: ignore[attr-defined, no-any-return]

    monkeypatch.setattr(toolgroups.ToolGroup, "last_seq", property(spy))
    groups = [ToolGroup(s, ["x"], [] if s % 2 else [(s + 1, "x")]) for s in range(1, 2000, 2)]
    assert group_split_by(groups, 1000) is None
    assert measured == []  # the per-group generator is never run
