"""The break-it review of ADR 0110: pasted tool lines replaced one another and flooded the
loss report, and a same-slot replacement without anchors stayed unmarked where the
summary quoted it.

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from context_compaction.domain.checklist import checklist_items
from context_compaction.domain.ledger import Ledger
from context_compaction.domain.summary import SourceEntry
from context_compaction.domain.marks import mark_superseded
from ledger_builders import ledger_of

PASTED = "Done. Output:\n" + "\n".join(f"PASSED tests/test_x.py::test_{k} [{k}%]" for k in range(40))


def merged(*said: tuple[int, str, str]) -> Ledger:
    return ledger_of(*(SourceEntry(seq=seq, role=role, text=t) for seq, role, t in said))


def test_pasted_test_runner_lines_are_no_checklist_statements() -> None:
    assert [v for _, v, _ in checklist_items(PASTED) if "PASSED" in v] == []


def test_pasted_lines_replace_nothing_and_nothing_of_them_is_superseded() -> None:
    ledger = merged((3, "assistant", PASTED), (5, "assistant", PASTED.replace("[", "(")))
    assert not [i for i in ledger.superseded if "PASSED" in i.value]


def test_two_lines_of_one_message_with_no_change_word_are_both_current() -> None:
    text = "Staging keeps 14 daily backups of the ledger database. Production keeps 30 daily backups of the ledger database."
    ledger = merged((7, "assistant", text))
    assert not [i for i in ledger.superseded if i.seq == 7]


def test_a_change_said_within_one_message_still_replaces() -> None:
    text = "The ledger export runs at 02:00 UTC. Actually, the ledger export runs at 03:30 UTC."
    ledger = merged((7, "assistant", text))
    assert [i.value for i in ledger.superseded] == ["The ledger export runs at 02:00 UTC."]


def test_a_same_slot_replacement_is_marked_wherever_the_summary_quotes_it() -> None:
    ledger = merged((1, "user", "The release is on March 3."), (3, "user", "The release is on April 9."))
    (old,) = ledger.superseded
    summary = "## Objective\n- The release is on March 3. (seq 1)\n- Latest request: The release is on April 9. (seq 3)"
    text, marks = mark_superseded(summary, ledger)
    assert marks == 1 and "(superseded at seq 3) The release is on March 3." in text
