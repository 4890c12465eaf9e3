"""Review 18: a cut that splits a tool group is refused also when the group was archived
after others with higher seqs (ADR 0051's closed groups; spec §9.3)."""

from __future__ import annotations

from typing import Any

import pytest

from context_compaction.domain.errors import InvalidCommand
from context_compaction.domain.messages import parse_message
from context_compaction.domain.session import Session
from helpers import commit_checkpoint

T = "2024-01-01T00:00:00+00:00"


def turn(n: int) -> list[Any]:
    """user, assistant calling one tool, its result, assistant: 4 messages."""
    return [parse_message(m) for m in (
        {"role": "user", "content": f"step {n}"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{n}", "name": "read", "arguments": "{}"}]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": "x" * 50},
        {"role": "assistant", "content": f"done {n}"},
    )]


def session_with_a_late_archived_group() -> Session:
    """seq 2 calls ``slow``; turns 1-5 (seqs 3-22, groups at 4, 8, ..., 20) are archived by
    the checkpoint at 22 while ``slow`` is open; ``slow`` is answered at 23, so its group
    (2..23) is archived by the next checkpoint, after groups with higher seqs."""
    s = Session.start("s", "m", None, created_at=T)
    s.append_messages([parse_message({"role": "user", "content": "go"}), parse_message(
        {"role": "assistant", "content": None, "tool_calls": [{"id": "slow", "name": "run", "arguments": "{}"}]})],
        command_id=None, created_at=T)
    for n in range(1, 6):
        s.append_messages(turn(n), command_id=None, created_at=T)
    commit_checkpoint(s, 22)
    s.append_messages([parse_message({"role": "tool", "tool_call_id": "slow", "content": "finally"})],
                      command_id=None, created_at=T)
    s.append_messages(turn(6), command_id=None, created_at=T)
    commit_checkpoint(s, 27)
    assert s.archived_upto >= 23 and all(g.seq != 2 for g in s.tool_groups)  # (the group left the live list)
    return s


def test_the_group_is_found_by_its_seq_after_it_was_archived() -> None:
    s = session_with_a_late_archived_group()
    assert s.tool_group_containing(23) is not None and s.tool_group_containing(23).seq == 2


@pytest.mark.parametrize("cut", [3, 10, 14, 22])
def test_a_cut_inside_a_late_archived_group_is_refused_after_reverting_to_raw_history(cut: int) -> None:
    s = session_with_a_late_archived_group()
    s.revert_checkpoint("cp_2", command_id=None, created_at=T)
    s.revert_checkpoint("cp_1", command_id=None, created_at=T)
    assert s.active_checkpoint is None
    with pytest.raises(InvalidCommand, match="tool group that starts at seq 2"):
        commit_checkpoint(s, cut)  # the group 2..23 would be split: call summarized, result kept
