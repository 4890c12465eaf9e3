"""Tool-result clearing must never clear a protected tool's
result, also when a provider reuses tool call ids across turns (allowed once the first
call is answered; local models and some gateways emit ``call_0`` every turn)."""

from __future__ import annotations

from typing import Any

from context_compaction.domain.clearing import plan_clearing


def _turn(seq: int, turn_id: str, call_id: str, tool: str, output: str) -> list[dict[str, Any]]:
    return [
        {"seq": seq, "role": "user", "content": f"do {turn_id}", "turn_id": turn_id},
        {"seq": seq + 1, "role": "assistant", "content": None, "turn_id": turn_id,
         "tool_calls": [{"id": call_id, "type": "function",
                         "function": {"name": tool, "arguments": "{}"}}]},
        {"seq": seq + 2, "role": "tool", "tool_call_id": call_id, "content": output, "turn_id": turn_id},
        {"seq": seq + 3, "role": "assistant", "content": "done", "turn_id": turn_id},
    ]


def _plan(records: list[dict[str, Any]], protected: tuple[str, ...]):
    tokens = {m["seq"]: max(len(str(m.get("content") or "")) // 4, 1) for m in records}
    return plan_clearing(records, tokens, keep_recent_tokens=10, protected_tools=protected,
                         count=lambda text: len(text) // 4)


def test_a_reused_call_id_does_not_unprotect_an_older_protected_result() -> None:
    records = [
        *_turn(1, "t1", "call_0", "read_file", "file body " * 400),  # protected
        *_turn(5, "t2", "call_0", "bash", "build log " * 400),  # same id, another tool
        *_turn(9, "t3", "call_1", "bash", "x"),
    ]
    plan = _plan(records, ("read_file",))
    assert 3 not in plan.placeholders, "a protected tool's result was cleared"
    assert 7 in plan.placeholders and "bash output" in plan.placeholders[7]


def test_a_reused_call_id_names_the_tool_that_made_each_result() -> None:
    records = [
        *_turn(1, "t1", "call_0", "grep", "match line " * 400),
        *_turn(5, "t2", "call_0", "read_file", "file body " * 400),  # protected
        *_turn(9, "t3", "call_1", "bash", "x"),
    ]
    plan = _plan(records, ("read_file",))
    assert 7 not in plan.placeholders
    assert "grep output" in plan.placeholders[3]  # not "read_file": the placeholder names the tool
