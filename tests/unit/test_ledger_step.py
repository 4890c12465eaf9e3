"""The ledger step of a compaction (application/compacting/ledgers.py, ADR 0031): pure, no storage."""

from __future__ import annotations

from context_compaction.application.compacting.ledgers import LEDGER_FACTOR, ledger_budget, verify_summary


def count(text: str) -> int:
    return max(1, len(text) // 4)


def msg(seq: int, text: str, role: str = "user") -> dict:
    return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}


def test_the_budget_is_a_multiple_of_the_reserve_bounded_by_half_the_room() -> None:
    assert ledger_budget(2048, 90_000) == LEDGER_FACTOR * 2048
    assert ledger_budget(2048, 3000) == 1500
    assert ledger_budget(2048, -50) == 0


def test_items_of_every_covered_message_are_written_back_and_bad_citations_removed() -> None:
    covered = [msg(1, "Config is in src/app/conf.py."), msg(2, "Ticket PAY-7 (seq 2).", "assistant")]
    out = verify_summary("## Progress\n- Did it (seq 1).\n- Made up (seq 40).", previous=None,
                         covered=covered, last_seq=2, budget_tokens=500, count=count)
    assert out.citations_removed == 1 and "(seq 40)" not in out.text and "- Did it (seq 1)." in out.text
    assert "- path: src/app/conf.py (seq 1)" in out.text and "- id: PAY-7 (seq 2)" in out.text
    assert out.report.restored == 2 and out.record["report"]["restored"] == 2
    again = verify_summary("## Progress\nNone.", previous=out.record, covered=[msg(3, "More.")],
                           last_seq=3, budget_tokens=500, count=count)
    assert "src/app/conf.py" in again.text  # cumulative: carried from the previous ledger


def test_a_setting_set_again_in_the_kept_tail_is_marked_superseded_not_restored() -> None:
    covered = [msg(1, "Set MODE_X=fast for now.")]
    out = verify_summary("## Exact Facts\n- MODE_X=fast (seq 1)", previous=None, covered=covered,
                         last_seq=1, budget_tokens=500, count=count,
                         retained=[msg(5, "Change of plan: MODE_X=safe from now on.")])
    assert "MODE_X=fast (superseded by MODE_X=safe at seq 5)" in out.text
    # the tail is not stored (the checklist keeps the sentence beside the setting, issue 44)
    assert [i.value for i in out.ledger.items if i.kind == "setting"] == ["MODE_X=fast"]
