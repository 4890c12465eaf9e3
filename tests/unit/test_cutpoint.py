"""Spec §20.2: cut points keep whole turns, never split tool groups, stop at keep."""

from __future__ import annotations

from context_compaction.domain.cutpoint import CutPlan, NothingToCompact, group_turns, plan_cut


def rec(seq: int, role: str, turn: str | None = None, *, calls=(), call_id=None, steering=False, content="x"):
    return {
        "seq": seq, "role": role, "content": content, "reasoning": None,
        "tool_calls": [{"id": c, "name": "f", "arguments": "{}"} for c in calls],
        "tool_call_id": call_id, "name": None, "turn_id": turn, "steering": steering,
        "provider_state": None, "created_at": "", "visible": True,
    }


def turn(start: int, name: str, *, tools: int = 0, steering_at: int | None = None) -> list[dict]:
    out = [rec(start, "user", name)]
    seq = start + 1
    if tools:
        ids = [f"{name}-c{i}" for i in range(tools)]
        out.append(rec(seq, "assistant", name, calls=ids, content=None))
        seq += 1
        for i, cid in enumerate(ids):
            out.append(rec(seq, "tool", name, call_id=cid))
            seq += 1
            if steering_at == i:
                out.append(rec(seq, "user", name, steering=True))
                seq += 1
    out.append(rec(seq, "assistant", name))
    return out


def plan(records, per_message=10, keep=30, previous=None, split=False):
    return plan_cut(records, [per_message] * len(records), keep_tokens=keep,
                    previous_first_retained=previous, allow_turn_split=split)


def test_whole_turns_are_kept_from_the_tail_up_to_keep() -> None:
    records = turn(1, "a") + turn(3, "b") + turn(5, "c") + turn(7, "d")  # 2 messages each
    p = plan(records, keep=60)  # 20 tokens per turn: d + c + b fit, a does not
    assert isinstance(p, CutPlan)
    assert p.first_retained_seq == 3 and p.kept_turns == 3
    assert [r["seq"] for r in p.summarize] == [1, 2]
    p = plan(records, keep=59)  # never more than keep beyond the mandatory newest turn
    assert isinstance(p, CutPlan) and p.first_retained_seq == 5 and p.kept_tokens == 40


def test_the_newest_complete_turn_is_kept_even_when_it_exceeds_keep() -> None:
    records = turn(1, "a") + turn(3, "b", tools=3)
    p = plan(records, keep=5)
    assert isinstance(p, CutPlan)
    assert p.first_retained_seq == 3 and p.kept_turns == 1


def test_an_in_progress_turn_is_kept_together_with_the_newest_complete_one() -> None:
    records = turn(1, "a") + turn(3, "b") + [rec(5, "user", "c")]
    p = plan(records, keep=1)
    assert isinstance(p, CutPlan)
    assert p.first_retained_seq == 3 and p.kept_turns == 2


def test_steering_stays_with_its_turn_and_parallel_calls_are_never_split() -> None:
    records = turn(1, "a") + turn(3, "b", tools=3, steering_at=0) + turn(10, "c")
    turns = group_turns(records, [1] * len(records))
    assert [(t.start, t.end) for t in turns] == [(0, 2), (2, 9), (9, 11)]
    seen = set()
    for keep in range(0, 200, 5):
        p = plan(records, keep=keep)
        if isinstance(p, CutPlan):
            seen.add(p.first_retained_seq)
    assert seen == {3, 10}  # only turn starts; never inside b's calls, results or steering


def test_legacy_messages_without_turn_id_are_grouped_by_role() -> None:
    records = [
        rec(1, "user"), rec(2, "assistant", calls=["x"], content=None), rec(3, "tool", call_id="x"),
        rec(4, "user", steering=True), rec(5, "assistant"),
        rec(6, "user"), rec(7, "assistant"),
    ]
    turns = group_turns(records, [1] * 7)
    assert [(t.start, t.end) for t in turns] == [(0, 5), (5, 7)]
    p = plan(records, keep=2)
    assert isinstance(p, CutPlan) and p.first_retained_seq == 6


def test_a_cut_never_orphans_a_tool_result_of_a_mislabelled_turn() -> None:
    # The tool result carries another turn's id; the cut moves back to its call.
    records = [rec(1, "user", "a"), rec(2, "assistant", "a", calls=["k"], content=None),
               rec(3, "tool", "b", call_id="k"), rec(4, "assistant", "b"), rec(5, "user", "c"),
               rec(6, "assistant", "c")]
    p = plan(records, keep=25)
    assert isinstance(p, CutPlan)
    assert p.first_retained_seq == 2 or p.first_retained_seq >= 5


def test_repeated_compaction_summarizes_only_the_new_middle_range() -> None:
    tail = turn(11, "e") + turn(13, "f") + turn(15, "g")  # records from the old boundary on
    p = plan(tail, keep=40, previous=11)
    assert isinstance(p, CutPlan)
    assert [r["seq"] for r in p.summarize] == [11, 12]
    assert p.first_retained_seq == 13


def test_no_new_compactable_range_is_a_no_op() -> None:
    assert plan(turn(1, "a")) is NothingToCompact.NO_OLD_TURN
    assert plan([]) is NothingToCompact.EMPTY
    assert plan([rec(1, "user", "a")]) is NothingToCompact.NO_OLD_TURN
    assert plan(turn(1, "a") + turn(3, "b"), keep=1000) is NothingToCompact.NO_OLD_TURN


def test_only_overflow_may_split_a_turn_at_a_completed_tool_batch() -> None:
    big = [rec(1, "user", "a"),
           rec(2, "assistant", "a", calls=["p", "q"], content=None), rec(3, "tool", "a", call_id="p"),
           rec(4, "tool", "a", call_id="q"),
           rec(5, "assistant", "a", calls=["r"], content=None), rec(6, "tool", "a", call_id="r"),
           rec(7, "assistant", "a")]
    assert plan(big, keep=30) is NothingToCompact.NO_OLD_TURN
    p = plan(big, keep=30, split=True)
    assert isinstance(p, CutPlan) and p.split_turn
    assert p.first_retained_seq == 5  # after the completed batch {p, q}; r stays with its call
    p = plan(big, keep=1, split=True)  # nothing fits: keep the last completed step
    assert isinstance(p, CutPlan) and p.first_retained_seq == 7


def test_a_call_still_waiting_for_its_result_is_named_when_it_holds_the_boundary_back() -> None:
    # review of issue 42: a call never answered stops compaction; the plan says why
    waiting = [rec(1, "assistant", "w", calls=["w-1"], content=None)]
    rest = turn(2, "a") + turn(4, "b") + turn(6, "c")
    assert plan(waiting + rest, keep=20) is NothingToCompact.WAITING_CALL
    held = plan([rec(0, "user", "w")] + waiting + rest, keep=20)
    assert isinstance(held, CutPlan) and held.first_retained_seq == 1
    assert held.waiting_call == ("w-1", 1)
    assert plan(rest, keep=20).waiting_call is None  # (nothing held back)
