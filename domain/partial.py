"""Partial compaction (issue 43): summarize only the oldest part of the visible tail.

``compact {up_to_seq}`` summarizes the whole turns that end at or before ``up_to_seq``;
``compact {fraction}`` the longest run of oldest whole turns whose tokens are at most
that share of the visible tail (at least the oldest turn). Either way the newest
complete turn is kept, as by ``plan_cut``, and a cut never splits a tool group.
"""

from __future__ import annotations

from collections.abc import Sequence

from .cutpoint import CutPlan, NothingToCompact, group_turns, respect_tool_groups
from .errors import InvalidCommand
from .messages import MessageRecord


def check_up_to_seq(records: Sequence[MessageRecord], up_to_seq: int, boundary: int | None) -> None:
    """``up_to_seq`` must name a seq of the visible tail ``records``: one already behind
    the active checkpoint's ``boundary`` (or cleared) or past the newest message asks
    for what cannot be done, and is refused rather than answered "nothing to compact"."""
    if not records:
        return
    first, last = records[0]["seq"], records[-1]["seq"]
    if up_to_seq < first:
        where = (f"the active checkpoint already summarizes everything before seq {boundary}"
                 if boundary is not None else f"the visible history starts at seq {first}")
        raise InvalidCommand(f"up_to_seq {up_to_seq} is before the part that can be compacted: {where}",
                             details={"up_to_seq": up_to_seq, "first_seq": first})
    if up_to_seq > last:
        raise InvalidCommand(f"up_to_seq {up_to_seq} is after the newest message (seq {last})",
                             details={"up_to_seq": up_to_seq, "last_seq": last})


def plan_partial_cut(
    records: Sequence[MessageRecord],
    tokens: Sequence[int],
    *,
    up_to_seq: int | None = None,
    fraction: float | None = None,
    previous_first_retained: int | None = None,
) -> CutPlan | NothingToCompact:
    if not records:
        return NothingToCompact.EMPTY
    turns = group_turns(records, tokens)
    newest_complete = max((i for i, t in enumerate(turns) if t.complete), default=None)
    if newest_complete is None or newest_complete == 0:
        return NothingToCompact.NO_OLD_TURN
    total = sum(tokens)
    chosen = 1 if fraction is not None else 0  # a fraction takes at least the oldest turn
    summarized = 0
    for k in range(1, newest_complete + 1):
        summarized += turns[k - 1].tokens
        last_seq = records[turns[k].start - 1]["seq"]
        if up_to_seq is not None and last_seq > up_to_seq:
            break
        if fraction is not None and summarized > fraction * total:
            break
        chosen = k
    if chosen == 0:
        return NothingToCompact.NO_OLD_TURN
    cut_index = respect_tool_groups(records, turns[chosen].start)
    if cut_index == 0:
        return NothingToCompact.NO_OLD_TURN
    first_retained = records[cut_index]["seq"]
    if previous_first_retained is not None and first_retained <= previous_first_retained:
        return NothingToCompact.BOUNDARY_WOULD_NOT_ADVANCE
    return CutPlan(
        first_retained_seq=first_retained,
        summarize=list(records[:cut_index]),
        kept_turns=sum(1 for t in turns if t.start >= cut_index),
        kept_tokens=sum(tokens[cut_index:]),
        summarized_tokens=sum(tokens[:cut_index]),
    )
