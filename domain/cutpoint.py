"""Cut-point planner (spec §9, DESIGN §8): which visible raw messages a checkpoint summarizes.

Pure: takes the visible tail and its per-message token counts, returns a typed plan
or the reason there is nothing to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from .messages import MessageRecord


@dataclass
class TurnSpan:
    """A whole turn: the user input, steering, assistant steps, tool calls and results."""

    start: int  # index into the records
    end: int  # exclusive
    turn_id: str | None
    tokens: int = 0
    complete: bool = False

    def seqs(self, records: Sequence[MessageRecord]) -> list[int]:
        return [r["seq"] for r in records[self.start : self.end]]


def group_turns(records: Sequence[MessageRecord], tokens: Sequence[int]) -> list[TurnSpan]:
    """Group messages into turns: by ``turn_id``; without one, a non-steering user
    message starts a turn (the role state machine of spec §9.1)."""
    turns: list[TurnSpan] = []
    current: TurnSpan | None = None
    for index, record in enumerate(records):
        turn_id = record.get("turn_id")
        if current is None:
            starts = True
        elif turn_id is not None:
            starts = turn_id != current.turn_id
        else:
            starts = record["role"] == "user" and not record.get("steering")
        if starts:
            if current is not None:
                turns.append(current)
            current = TurnSpan(start=index, end=index, turn_id=turn_id)
        assert current is not None
        current.end = index + 1
        current.tokens += tokens[index]
    if current is not None:
        turns.append(current)
    for i, turn in enumerate(turns):
        turn.complete = _is_complete(records[turn.start : turn.end]) or i < len(turns) - 1
    return turns


def _is_complete(messages: Sequence[MessageRecord]) -> bool:
    """A turn ends with an assistant answer that calls no tool and leaves none open."""
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "assistant":
            open_calls |= {c["id"] for c in m.get("tool_calls") or []}
        elif m["role"] == "tool":
            open_calls.discard(m.get("tool_call_id") or "")
    last = messages[-1]
    return last["role"] == "assistant" and not last.get("tool_calls") and not open_calls


class NothingToCompact(Enum):
    """Why a plan has nothing to summarize."""

    NO_OLD_TURN = "no complete turn older than the ones that must be kept"
    BOUNDARY_WOULD_NOT_ADVANCE = "the boundary would not move past the active checkpoint"
    EMPTY = "no visible messages"
    WAITING_CALL = (
        "a tool call is still waiting for its result (a sub-agent, a confirmation): the boundary "
        "cannot pass it until the result is appended (issue 42)"
    )
    SUMMARY_NOT_SMALLER = (
        "the summary block with the checklist it must carry would already be as large as the part it "
        "replaces: wait for more history to compact"
    )


@dataclass
class CutPlan:
    first_retained_seq: int
    summarize: list[MessageRecord]
    kept_turns: int
    kept_tokens: int
    summarized_tokens: int
    split_turn: bool = False
    notes: list[str] = field(default_factory=list)
    waiting_call: tuple[str, int] | None = None
    """(call id, seq) of a call still waiting for its result that held the boundary back
    (issue 42): why a compaction that barely shrinks may be refused."""


def plan_cut(
    records: Sequence[MessageRecord],
    tokens: Sequence[int],
    *,
    keep_tokens: int,
    previous_first_retained: int | None = None,
    allow_turn_split: bool = False,
    keep_newest_turn: bool = True,
) -> CutPlan | NothingToCompact:
    """Choose ``first_retained_seq`` (spec §9.2).

    ``records`` are the visible raw messages from the active checkpoint's boundary on
    (all visible ones without a checkpoint). Walking back from the newest turn, the
    newest complete turn (and anything after it) is always kept; older whole turns
    are kept while they fit in ``keep_tokens``. ``allow_turn_split`` (overflow only)
    lets the cut fall inside a turn too big to fit, at a completed tool-batch boundary.
    ``keep_newest_turn`` false (a window too small for it beside a summary, issue 44):
    the newest complete turn is kept only if it fits in ``keep_tokens`` like any other,
    when a newer, incomplete one is there to keep.
    """
    if not records:
        return NothingToCompact.EMPTY
    turns = group_turns(records, tokens)
    newest_complete = max((i for i, t in enumerate(turns) if t.complete), default=None)
    if newest_complete is None:
        return NothingToCompact.NO_OLD_TURN
    first_kept = newest_complete
    if not keep_newest_turn and newest_complete < len(turns) - 1:
        first_kept += 1
    kept = sum(t.tokens for t in turns[first_kept:])
    while first_kept > 0 and kept + turns[first_kept - 1].tokens <= keep_tokens:
        first_kept -= 1
        kept += turns[first_kept].tokens
    split = False
    cut_index = turns[first_kept].start
    if first_kept == 0 and allow_turn_split and kept > keep_tokens:
        inner = _split_index(records, tokens, turns[0], keep_tokens - sum(t.tokens for t in turns[1:]))
        if inner is not None:
            cut_index, split = inner, True
    if cut_index == 0:
        return NothingToCompact.NO_OLD_TURN
    answered_cut = _respect_tool_groups(records, cut_index, keep_waiting=False)
    cut_index = _respect_tool_groups(records, cut_index)
    # Say so when a waiting call holds the boundary back: else a session whose call is
    # never answered stops compacting without a word (review of issue 42).
    waiting = _waiting_call(records, cut_index) if cut_index < answered_cut else None
    if cut_index == 0:
        return NothingToCompact.WAITING_CALL if waiting else NothingToCompact.NO_OLD_TURN
    first_retained = records[cut_index]["seq"]
    if previous_first_retained is not None and first_retained <= previous_first_retained:
        return NothingToCompact.BOUNDARY_WOULD_NOT_ADVANCE
    kept_turns = len(turns) - first_kept
    return CutPlan(
        first_retained_seq=first_retained,
        summarize=list(records[:cut_index]),
        kept_turns=kept_turns,
        kept_tokens=sum(tokens[cut_index:]),
        summarized_tokens=sum(tokens[:cut_index]),
        waiting_call=waiting,
        split_turn=split,
    )


def _split_index(
    records: Sequence[MessageRecord], tokens: Sequence[int], turn: TurnSpan, room: int
) -> int | None:
    """Inside ``turn``: the earliest assistant step, after a completed tool batch, such
    that the rest of the turn fits in ``room`` (spec §9.2: overflow only)."""
    best: int | None = None
    open_calls: set[str] = set()
    for index in range(turn.start, turn.end):
        record = records[index]
        if (
            index > turn.start
            and record["role"] == "assistant"
            and not open_calls
            and sum(tokens[index : turn.end]) <= room
        ):
            best = index
            break
        if record["role"] == "assistant":
            open_calls |= {c["id"] for c in record.get("tool_calls") or []}
        elif record["role"] == "tool":
            open_calls.discard(record.get("tool_call_id") or "")
    if best is None:
        # Nothing fits: keep at least the last completed step of the turn.
        open_calls = set()
        for index in range(turn.start, turn.end):
            record = records[index]
            if index > turn.start and record["role"] == "assistant" and not open_calls:
                best = index
            if record["role"] == "assistant":
                open_calls |= {c["id"] for c in record.get("tool_calls") or []}
            elif record["role"] == "tool":
                open_calls.discard(record.get("tool_call_id") or "")
    return best


def _respect_tool_groups(records: Sequence[MessageRecord], cut_index: int, keep_waiting: bool = True) -> int:
    """Spec §9.3: move the cut back to the assistant that issued calls answered after it
    (and, ``keep_waiting``, calls not answered yet)."""
    open_at: dict[str, int] = {}
    for index in range(cut_index):
        record = records[index]
        for call in record.get("tool_calls") or []:
            open_at[call["id"]] = index
        if record["role"] == "tool":
            open_at.pop(record.get("tool_call_id") or "", None)
    earliest = cut_index
    for record in records[cut_index:]:
        if record["role"] == "tool":
            at = open_at.pop(record.get("tool_call_id") or "", None)
            if at is not None:
                earliest = min(earliest, at)
    # A call still waiting for its result (a tool, a sub-agent, a human confirmation)
    # stays too: a result arriving after the compaction must find its call (issue 42).
    return min(earliest, *open_at.values()) if open_at and keep_waiting else earliest


def _waiting_call(records: Sequence[MessageRecord], cut_index: int) -> tuple[str, int] | None:
    """The call issued at ``records[cut_index]`` that no record answers, with its seq."""
    answered = {r.get("tool_call_id") for r in records if r["role"] == "tool"}
    for call in records[cut_index].get("tool_calls") or []:
        if call["id"] not in answered:
            return call["id"], records[cut_index]["seq"]
    return None


#: For the partial planner (domain/partial.py, issue 43): the same tool-group rule.
respect_tool_groups = _respect_tool_groups
