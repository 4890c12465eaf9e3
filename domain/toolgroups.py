"""Tool groups and seq ranges: the typed parts of the Session aggregate's state.

A tool group is an assistant message that called tools plus the results answering it;
a cut (spec §9.3) or a delete must never split one. Invalidated history is kept as
inclusive ``[lo, hi]`` seq ranges.

Snapshots store a group as ``{"seq", "calls", "results": [[seq, call_id], ...]}`` (the
JSON shape of the dataclass): ``groups_from_json`` reads it back, also from snapshots
written before the state was typed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from .errors import InvalidCommand, InvalidMessage
from .messages import Message


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
    # Newest first: the groups are disjoint, and the seqs asked about are mostly recent.
    for group in reversed(groups):
        if group.contains(seq):
            return group
    return None


def group_split_by(groups: Sequence[ToolGroup], first_retained_seq: int) -> ToolGroup | None:
    """The group a cut before ``first_retained_seq`` would split (spec §9.3).

    Every group is still looked at (a call's result may come long after it), but only
    the groups called before the cut and answered at all, and with a C-level ``max``
    instead of the ``last_seq`` generator: a commit at 100k messages looked at 25k
    groups that way, the one part of a compaction that grew with the history (ADR 0052).
    """
    # Groups are in call order (``group_at`` bisects them too).
    before = bisect_left(groups, first_retained_seq, key=_call_seq)
    for group in islice(groups, before):
        results = group.results
        if results and max(results)[0] >= first_retained_seq:
            return group
    return None


def _call_seq(group: ToolGroup) -> int:
    return group.seq


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


def split_closed(
    groups: Sequence[ToolGroup], open_calls: dict[str, int], horizon: int
) -> tuple[list[ToolGroup], list[ToolGroup]]:
    """(kept, closed): ``closed`` are the groups that end before ``horizon`` with no
    open call (no result can join them any more), in order; ``kept`` the others."""
    open_seqs = set(open_calls.values())
    kept: list[ToolGroup] = []
    closed: list[ToolGroup] = []
    for group in groups:
        done = group.last_seq < horizon and group.seq not in open_seqs
        (closed if done else kept).append(group)
    return kept, closed


def check_tool_chain(messages: Sequence[Message], open_calls: dict[str, int], next_seq: int) -> None:
    """A call id must not be open already; a tool result must answer an open call of
    the session (the ones before, or earlier in ``messages``). Raises ``InvalidMessage``."""
    still_open = dict(open_calls)
    seq = next_seq
    for index, message in enumerate(messages):
        if message.role == "assistant":
            for call in message.tool_calls:
                if call.id in still_open:
                    raise InvalidMessage(
                        f"message {index}: tool call id {call.id!r} is already open "
                        f"(issued at seq {still_open[call.id]} and not yet answered)"
                    )
                still_open[call.id] = seq
        elif message.role == "tool":
            if message.tool_call_id not in still_open:
                raise InvalidMessage(
                    f"message {index}: tool result answers no open tool call "
                    f"{message.tool_call_id!r} of this session"
                )
            del still_open[message.tool_call_id]
        seq += 1


def delete_ranges(
    seqs: Sequence[int] | None,
    find: Callable[[int], ToolGroup | None],
    is_visible: Callable[[int], bool],
    expand_tool_groups: bool,
) -> list[list[int]]:
    """The ranges a delete of ``seqs`` excludes: whole tool groups only (spec §9.3),
    widened to them with ``expand_tool_groups``, else refused."""
    if not seqs:
        raise InvalidCommand("delete needs a non-empty list of seqs")
    wanted = set(seqs)
    for seq in sorted(wanted):
        if not is_visible(seq):
            raise InvalidCommand(f"seq {seq} is not a visible message of this session")
    for seq in sorted(wanted):
        group = find(seq)
        if group is None:
            continue
        members = {m for m in group.members() if is_visible(m)}
        missing = members - wanted
        if missing and not expand_tool_groups:
            raise InvalidMessage(
                f"deleting seq {seq} would orphan its tool group; delete seqs "
                f"{sorted(members)} together or pass expand_tool_groups=true",
                details={"tool_group_seqs": sorted(members)},
            )
        wanted |= members
    return seqs_to_ranges(sorted(wanted))


def invalidation_ranges(
    kind: str,
    max_seq: int,
    to_seq: int | None,
    seqs: Sequence[int] | None,
    find: Callable[[int], ToolGroup | None],
    is_visible: Callable[[int], bool],
    expand_tool_groups: bool,
) -> list[list[int]] | None:
    """The ranges an invalidation excludes (spec §6.3, §12.3); None for a rewind that
    excludes nothing (not a change of history)."""
    if kind == "clear":
        return [[1, max_seq]] if max_seq >= 1 else []
    if kind == "rewind":
        if to_seq is None:
            raise InvalidCommand("rewind needs to_seq (keep seq <= to_seq)")
        if to_seq < 0:
            raise InvalidCommand("to_seq must be >= 0")
        return None if to_seq >= max_seq else [[to_seq + 1, max_seq]]
    if kind == "delete":
        return delete_ranges(seqs, find, is_visible, expand_tool_groups)
    raise InvalidCommand(f"unknown invalidation kind {kind!r}")


def split_group_seq(
    live: Sequence[ToolGroup], first_retained_seq: int, archived_upto: int,
    archived: Callable[[], Sequence[ToolGroup]],
) -> int | None:
    """The seq of the group a cut before ``first_retained_seq`` would split: the live
    groups, and the archived ones only when the cut is not past all of them."""
    group = group_split_by(live, first_retained_seq)
    if group is None and first_retained_seq <= archived_upto:
        group = group_split_by(archived(), first_retained_seq)
    return None if group is None else group.seq


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
