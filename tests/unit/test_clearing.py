"""Tool-result clearing, planned and applied (issue 17, stage 1): pure, no storage."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compaction.domain.clearing import ClearingPlan, apply_clearing, plan_clearing
from context_compaction.domain.projection import repair_tool_chains


def words(text: str) -> int:
    return len(text.split())


def rec(seq: int, role: str, content: Any = "", turn: str | None = None, **extra: Any) -> dict[str, Any]:
    base = {"seq": seq, "role": role, "content": content, "reasoning": None, "tool_calls": [],
            "tool_call_id": None, "name": None, "turn_id": turn, "steering": False,
            "provider_state": None, "created_at": "2026-01-01T00:00:00Z", "visible": True}
    base.update(extra)
    return base


def turn(start: int, n: int, tool: str, size: int) -> list[dict[str, Any]]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": "{}"}}
    return [
        rec(start, "user", f"step {n}", f"t{n}"),
        rec(start + 1, "assistant", None, f"t{n}", tool_calls=[call]),
        rec(start + 2, "tool", "line of output " * size, f"t{n}", tool_call_id=f"c{n}"),
        rec(start + 3, "assistant", f"done {n}", f"t{n}"),
    ]


def session(turns: int, tool: str = "bash", size: int = 200) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(turns):
        out += turn(1 + 4 * n, n, "read_secrets" if n == 1 else tool, size)
    return out


def counts(records: list[dict[str, Any]]) -> dict[int, int]:
    return {m["seq"]: words(m["content"] or "") + 4 for m in records}


def test_old_results_are_cleared_the_newest_turn_keep_window_and_protected_tools_never() -> None:
    records = session(6)
    tokens = counts(records)
    plan = plan_clearing(records, tokens, keep_recent_tokens=1300, protected_tools={"read_secrets"}, count=words)
    # turn 5 is the newest, turn 4 is inside the keep window, turn 1 is protected.
    assert plan.seqs == [3, 11, 15]
    assert plan.tokens_freed == sum(tokens[s] - words(plan.placeholders[s]) for s in plan.seqs) > 0
    text = plan.placeholders[11]
    assert "bash output of 3,000 characters" in text and "seq 11" in text and "recalled" in text


def test_applying_keeps_every_tool_group_valid_and_only_changes_content() -> None:
    records = session(5)
    plan = plan_clearing(records, counts(records), keep_recent_tokens=0, count=words)
    cleared = apply_clearing(records, plan.placeholders)
    assert [m["seq"] for m in cleared] == [m["seq"] for m in records]
    for before, after in zip(records, cleared):
        if before["seq"] in plan.placeholders:
            assert {k: v for k, v in after.items() if k != "content"} == {k: v for k, v in before.items() if k != "content"}
        else:
            assert after is before
    repaired, notes = repair_tool_chains(cleared)
    assert notes == [] and len(repaired) == len(cleared)
    assert records[2]["content"].startswith("line of output")  # the stored record is untouched


def test_small_results_and_already_cleared_ones_are_left_alone() -> None:
    records = session(4, size=3)
    assert not plan_clearing(records, counts(records), keep_recent_tokens=0, count=words)
    records = session(4)
    first = plan_clearing(records, counts(records), keep_recent_tokens=0, count=words)
    again = plan_clearing(records, counts(records), keep_recent_tokens=0, cleared=first.seqs, count=words)
    assert again == ClearingPlan({}, 0)


def test_the_placeholder_is_a_function_of_the_stored_message() -> None:
    records = session(4)
    a = plan_clearing(records, counts(records), keep_recent_tokens=0, count=words)
    b = plan_clearing([dict(m) for m in records], counts(records), keep_recent_tokens=0, count=words)
    assert a == b and a


@settings(max_examples=50, deadline=None)
@given(turns=st.integers(1, 8), keep=st.integers(0, 3000), size=st.integers(0, 400))
def test_never_the_newest_turn_never_inside_the_keep_window(turns: int, keep: int, size: int) -> None:
    records = session(turns, size=size)
    tokens = counts(records)
    plan = plan_clearing(records, tokens, keep_recent_tokens=keep, protected_tools={"read_secrets"}, count=words)
    newest = records[-4]["seq"]
    for seq in plan.seqs:
        assert seq < newest
        assert sum(t for s, t in tokens.items() if s >= seq) > keep
        assert next(m for m in records if m["seq"] == seq)["role"] == "tool"
    assert plan.tokens_freed >= 0
