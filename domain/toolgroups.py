"""Tool groups and seq ranges: the typed parts of the Session aggregate's state.

A tool group is an assistant message that called tools plus the results answering it;
a cut (spec §9.3) or a delete must never split one. Invalidated history is kept as
inclusive ``[lo, hi]`` seq ranges.

Snapshots store a group as ``{"seq", "calls", "results": [[seq, call_id], ...]}`` (the
JSON shape of the dataclass): ``groups_from_json`` reads it back, also from snapshots
written before the state was typed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class ToolGroup:
    seq: int
    """The assistant message that made the calls."""
    calls: list[str]
    results: list[tuple[int, str]]
    """(seq, call id) of each result so far, in seq order."""

    @property
    def last_seq(self) -> int:
        return max((seq for seq, _ in self.results), default=self.seq)

    def members(self) -> set[int]:
        return {self.seq, *(seq for seq, _ in self.results)}

    def contains(self, seq: int) -> bool:
        return self.seq == seq or any(result_seq == seq for result_seq, _ in self.results)


def groups_from_json(value: Any) -> list[ToolGroup]:
    """Groups from a snapshot's JSON (dicts), or the typed list itself."""
    if value and type(value[0]) is ToolGroup:
        return value  # type: ignore[no-any-return]
    return [
        ToolGroup(g["seq"], list(g["calls"]), [(r[0], r[1]) for r in g["results"]]) for g in value
    ]


def group_containing(groups: Sequence[ToolGroup], seq: int) -> ToolGroup | None:
    for group in groups:
        if group.contains(seq):
            return group
    return None


def group_split_by(groups: Sequence[ToolGroup], first_retained_seq: int) -> ToolGroup | None:
    """The group a cut before ``first_retained_seq`` would split (spec §9.3)."""
    for group in groups:
        if group.seq < first_retained_seq <= group.last_seq:
            return group
    return None


def group_at(groups: Sequence[ToolGroup], assistant_seq: int) -> ToolGroup | None:
    if groups and groups[-1].seq == assistant_seq:
        return groups[-1]  # results mostly answer the latest call
    i = bisect_right(groups, assistant_seq, key=lambda g: g.seq) - 1
    if i >= 0 and groups[i].seq == assistant_seq:
        return groups[i]
    return None


def visible_groups(
    groups: Sequence[ToolGroup], open_calls: dict[str, int], is_visible: Callable[[int], bool]
) -> tuple[list[ToolGroup], dict[str, int]]:
    """Groups and open calls after an invalidation: groups whose call is hidden go,
    hidden results leave their group and reopen their call."""
    still_open = {c: s for c, s in open_calls.items() if is_visible(s)}
    kept_groups = []
    for group in groups:
        if not is_visible(group.seq):
            continue
        kept, reopened = [], []
        for result in group.results:
            (kept if is_visible(result[0]) else reopened).append(result)
        group.results = kept
        for _, call_id in reopened:
            still_open.setdefault(call_id, group.seq)
        kept_groups.append(group)
    return kept_groups, still_open


# ------------------------------------------------------------------ seq ranges
def merge_ranges(ranges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Sort and merge inclusive ``[lo, hi]`` ranges, joining adjacent ones."""
    out: list[list[int]] = []
    for lo, hi in sorted((int(r[0]), int(r[1])) for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def seqs_to_ranges(seqs: Sequence[int]) -> list[list[int]]:
    return merge_ranges([[s, s] for s in seqs])


def in_ranges(ranges: Sequence[Sequence[int]], seq: int) -> bool:
    i = bisect_right(ranges, seq, key=lambda r: r[0]) - 1
    return i >= 0 and ranges[i][0] <= seq <= ranges[i][1]
