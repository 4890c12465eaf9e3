"""The must-keep ledger's presence check.

A fact counts as "in the summary" only where the summary states that exact value, not
where it is part of a longer token: port 80 is not stated by ``PORT=8080``, ticket
#12 not by #123, version 1.2.3 not by 1.2.30. Counted as present, such an item was
neither written back nor reported dropped — lost silently.
"""

from __future__ import annotations

import pytest

from context_compaction.domain.ledger import Ledger, LedgerItem, present, verify


def item(kind: str, value: str, seq: int = 3) -> LedgerItem:
    return LedgerItem(kind, value, seq, seq)


@pytest.mark.parametrize(
    ("kind", "value", "summary"),
    [
        ("port", "80", "The proxy uses PORT=8080."),
        ("port", "443", "Served on localhost:4433."),
        ("id", "#12", "Fixed in #123."),
        ("id", "AB-12", "Ticket AB-123 is open."),
        ("version", "1.2.3", "Pinned to 1.2.30 now."),
        ("version", "1.2.3", "Pinned to 11.2.3 now."),
        ("path", "app/main.py", "Edited src/app/main.py."),
        ("url", "https://example.com/a", "See https://example.com/a/b for it."),
        ("setting", "MODE=dev", "MODE=devel is set."),
        ("commit", "abc1234", "Reverted abc12345f."),
    ],
)
def test_a_value_inside_a_longer_token_is_not_present(kind: str, value: str, summary: str) -> None:
    assert not present(summary, item(kind, value))


@pytest.mark.parametrize(
    ("kind", "value", "summary"),
    [
        ("port", "80", "It listens on port 80."),
        ("port", "8080", "Open http://localhost:8080/ now."),
        ("id", "#12", "Fixed in #12, done."),
        ("version", "1.2.3", "Pinned to 1.2.3."),
        ("path", "src/app/main.py", "- Edited `src/app/main.py` (seq 4)"),
        ("url", "https://example.com/a", "See https://example.com/a."),
        ("setting", "MODE=dev", "(MODE=dev)"),
        ("error", "ValueError: bad input", "Saw ValueError: bad input!"),
    ],
)
def test_a_value_standing_on_its_own_is_present(kind: str, value: str, summary: str) -> None:
    assert present(summary, item(kind, value))


def test_a_fact_only_inside_a_longer_value_is_written_back_not_lost() -> None:
    ledger = Ledger((item("port", "80", 2), item("setting", "PORT=8080", 5)))
    text, report = verify("## Exact Facts\n- PORT=8080 (seq 5)", ledger, 1_000, lambda s: len(s.split()))
    assert "- port: 80 (seq 2)" in text
    assert (report.in_summary, report.restored, report.dropped) == (1, 1, 0)


def test_items_evicted_by_the_bound_count_in_items_total_so_the_report_adds_up() -> None:
    from context_compaction.application.compacting.ledgers import verify_summary
    from context_compaction.domain.ledger import MAX_ITEMS

    previous = Ledger(tuple(item("path", f"old/f{n}.py", n) for n in range(1, MAX_ITEMS + 1))).to_record()
    covered = [{"seq": 700, "role": "user", "content": "Now edit new/a.py and new/b.py.", "visible": True}]
    verified = verify_summary("## Goal\nGo on.", previous=previous, covered=covered, last_seq=700,
                              budget_tokens=50, count=lambda s: len(s.split()))
    report = verified.report
    assert report.dropped > 0 and len(verified.ledger.items) == MAX_ITEMS
    evicted = {"old/f1.py", "old/f2.py"}
    assert evicted <= {i.value for i in report.dropped_items}
    assert report.items_total == report.in_summary + report.restored + report.dropped


@pytest.mark.parametrize(
    "citation",
    ["(seq 3, 90)", "(seqs 3, 90)", "(Seq 90)", "(SEQ 90)", "(seqs 3–4, 80–85)", "(seq 3; 90)", "(seq #90)",
     "(seqs 3 and 90)", "(seq 3-4,90)", "(seq 9,999)", "(seq  90)", "(seq 90–3)"],
)
def test_every_form_of_a_citation_is_checked_not_only_the_canonical_one(citation: str) -> None:
    from context_compaction.domain.provenance import clean_citations

    cleaned, kept, removed = clean_citations(f"- Did it {citation}.", 1, 50)
    assert (cleaned, kept, removed) == ("- Did it.", 0, 1)


@pytest.mark.parametrize("citation", ["(seq 3)", "(seq 3–4)", "(seqs 3, 5)", "(Seq 3 to 50)", "(seqs 3-4, 7)"])
def test_a_valid_citation_in_any_form_is_kept(citation: str) -> None:
    from context_compaction.domain.provenance import clean_citations

    text = f"- Did it {citation}."
    assert clean_citations(text, 1, 50) == (text, 1, 0)


@pytest.mark.parametrize("budget", [0, 3, 7, 10, 14, 20, 40])
def test_what_the_ledger_writes_back_never_exceeds_its_budget(budget: int) -> None:
    def count(text: str) -> int:
        return len(text.split())

    ledger = Ledger((item("correction", "Use port 8443, not 8080.", 1), item("constraint", "Never push to main.", 2),
                     item("path", "src/a.py", 3), item("id", "PAY-1", 4)))
    summary = "## Goal\nGo on."
    text, report = verify(summary, ledger, budget, count)
    assert count(text) - count(summary) <= budget
    assert report.items_total == report.in_summary + report.restored + report.dropped


@pytest.mark.parametrize("budget", range(0, 40, 3))
def test_an_item_stated_by_a_restored_line_is_never_reported_dropped(budget: int) -> None:
    ledger = Ledger((item("correction", "Actually, use cfg/final.toml instead.", 20), item("path", "cfg/final.toml", 20),
                     item("path", "cfg/other.toml", 5)))
    text, report = verify("", ledger, budget, lambda s: len(s.split()))
    for dropped in report.dropped_items:
        assert not present(text, dropped)
    for kept in set(ledger.items) - set(report.dropped_items):
        assert present(text, kept)
    assert report.items_total == report.in_summary + report.restored + report.dropped
