"""The typed, update-aware fact checklist (issue 44): pure extraction, supersession, the
extractive summarizer's own section, and ``ctxc eval`` end to end."""

from __future__ import annotations

import json

from context_compaction.application.contracts.ports import SummaryRequest
from context_compaction.domain.checklist import checklist_items
from context_compaction.domain.joining import sentences
from context_compaction.domain.ledger import Ledger, extract, priority, verify
from context_compaction.domain.summary import SourceEntry, SummarySource, smallest_window
from context_compaction.infrastructure.summarizers import ExtractiveSummarizer


def said(seq: int, text: str, role: str = "user") -> SourceEntry:
    return SourceEntry(seq=seq, role=role, text=text)


def words(text: str) -> int:
    return len(text.split())


def test_a_value_less_rule_keeps_the_sentence_that_carries_its_value() -> None:
    assert sentences("Budget cap is $500 total. Never exceed without explicit approval.") == [
        "Budget cap is $500 total. Never exceed without explicit approval."
    ]
    [(kind, value, _)] = checklist_items("Budget cap is $500 total. Never exceed without explicit approval.")
    assert kind == "rule" and "$500" in value


def test_prose_kinds_the_old_patterns_had_no_rule_for() -> None:
    kinds = {
        "We went with Redis Streams for the queue backend because it already runs.": "decision",
        "Loop in Priya Raman (release manager) before merging.": "person",
        "The release freeze is on March 14.": "date",
        "The nightly batch runtime is around forty-five minutes.": "amount",
        "Pin httpx to 0.27.2.": "versioned",
        "Please don't use emojis in commit messages.": "preference",
        "Step 3 of 5 done: the schema migration.": "task",
        "Open question: whether archived projects belong in the export.": "question",
    }
    for text, kind in kinds.items():
        assert [k for k, _, _ in checklist_items(text)] == [kind], text
    # (a routine request: at most a low-priority update, never a rule or a correction)
    assert [k for k, _, _ in checklist_items("Use a dataclass instead of the dict in core/cache.py.")] in ([], ["update"])


def test_instead_of_is_not_a_correction() -> None:
    items = extract([said(1, "Use a dataclass instead of the dict in the handler, please.")])
    assert not [i for i in items if i.kind == "correction"]
    assert [i.kind for i in extract([said(2, "No, use port 8443.")]) if i.kind == "correction"] == ["correction"]


def test_a_later_statement_supersedes_and_the_old_one_is_marked_not_current() -> None:
    ledger, _ = Ledger().merge(extract([
        said(2, "We settled on RabbitMQ as the queue backend, since the team knows it well.", "assistant"),
        said(5, "Loop in Priya Raman (on-call reviewer) before merging."),
        said(9, "Change of plan: the queue backend is now NATS JetStream, since it retries out of the box.", "assistant"),
    ]))
    current = {i.value for i in ledger.items}
    assert any("NATS JetStream" in v for v in current) and not any("RabbitMQ" in v for v in current)
    assert any("Priya Raman" in v for v in current)  # (another subject: untouched)
    old = "We settled on RabbitMQ as the queue backend, since the team knows it well."
    text, report = verify(f"## Decisions\n- {old} (seq 2)", ledger, 500, words)
    assert f"(superseded at seq 9) {old}" in text and report.marked_superseded == 1
    assert report.dropped == 0


def test_the_extractive_summary_carries_the_checklist_within_its_limit_in_the_sessions_tokens() -> None:
    entries = [said(n, f"The release freeze is on March {n}. Pin httpx to 0.{n}.2. " + "filler " * 40)
               for n in range(1, 30)]
    ledger, _ = Ledger().merge(extract(entries))
    source = SummarySource(None, entries, len(entries), 0, 0, 1, 29)
    dense = lambda text: len(text) // 2  # noqa: E731 - a counter denser than 2.5 characters a token
    request = SummaryRequest("s", "m", [], source, 300, checklist=tuple(sorted(ledger.items, key=priority)),
                             count_tokens=dense)
    text = ExtractiveSummarizer().summarize(request).text
    assert dense(text) <= 300
    assert "## Fact Checklist" in text and "Pin httpx to 0.29.2." in text


def test_the_smallest_window_is_named_and_a_1000_token_window_can_compact() -> None:
    smallest = smallest_window(lambda text: len(text) // 4 + 1)
    assert 0 < smallest <= 1_000


def test_ctxc_eval_reports_every_kind_and_the_truncation_baseline(capsys) -> None:  # type: ignore[no-untyped-def]
    from context_compaction.infrastructure.cli import main

    assert main(["eval", "--shares", "0.3", "--windows", "", "--sets", "tuning", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    [run] = result["rounds"]
    assert len(run["rounds"]) == 5 and run["summary_failed"] == 0
    last = run["rounds"][-1]
    assert set(last["per_kind"]) >= {"rule", "decision", "person", "date", "amount", "version", "setting",
                                      "preference", "task", "question"}
    assert last["kept"] / last["total"] >= 0.9 > last["truncation_kept"] / last["total"]


def test_the_llm_prompt_carries_the_checklist_as_must_keep() -> None:
    from context_compaction.domain.summary import summary_prompt

    source = SummarySource(None, [], 0, 0, 0, None, None)
    _, user_message = summary_prompt(source, 500, ["- date: The release freeze is on March 14. (seq 3)"])
    assert "<must_keep>" in user_message["content"]
    assert "- date: The release freeze is on March 14. (seq 3)" in user_message["content"]
    _, plain = summary_prompt(source, 500)
    assert "<must_keep>" not in plain["content"]


def test_a_checklist_item_that_does_not_fit_is_reported_with_kind_value_and_seq() -> None:
    ledger, _ = Ledger().merge(extract([
        said(4, "Loop in Priya Raman (release manager) before merging."),
        said(6, "The nightly batch runtime is around forty-five minutes.", "assistant"),
    ]))
    text, report = verify("## Progress\nNone.", ledger, budget_tokens=12, count=words)
    assert report.dropped >= 1 and report.dropped + report.restored == report.items_total
    dropped = {(d["kind"], d["seq"]) for d in report.to_record()["dropped_items"]}
    written = {i for i in ledger.items if i.value in text}
    assert all((i.kind, i.seq) in dropped for i in ledger.items if i not in written)
    assert any("Priya Raman" in d["value"] for d in report.to_record()["dropped_items"]) or "Priya Raman" in text


def test_every_canary_is_kept_by_its_own_sentence_in_every_phrasing_set() -> None:
    """The scorer's self-check: a canary's own text states it (else a 'loss' would be the
    scorer's, not the summarizer's)."""
    from context_compaction.infrastructure.evaluation.canaries import kept
    from context_compaction.infrastructure.evaluation.fresh import FRESH
    from context_compaction.infrastructure.evaluation.heldout import HELD_OUT
    from context_compaction.infrastructure.evaluation.phrasings import TUNING
    from context_compaction.infrastructure.evaluation.sessions import generate
    from context_compaction.infrastructure.evaluation.spoken import SPOKEN

    for phrasings in (TUNING, HELD_OUT, SPOKEN, FRESH):
        for seed in (1, 2, 3, 44):
            session = generate(phrasings, seed, rounds=5, turns_per_round=8, per_kind=1, tool_chars=100)
            assert [c.text for c in session.canaries if not kept(c, c.text)] == []


def test_a_mark_or_flag_on_the_line_above_does_not_unsay_a_canary() -> None:
    """The scorer reads a superseded mark or a doubt flag on the canary's own line only
    (ADR 0091): the line above is about another statement."""
    from context_compaction.infrastructure.evaluation.canaries import Canary, kept

    c = Canary("task", "invoice exporter", ("invoice exporter",), ("done",), "The invoice exporter is done.")
    above = "- decision: The ORM is Peewee. (seq 28; possibly superseded at seq 72)\n"
    assert kept(c, above + "- task: The invoice exporter is done. (seq 8)")
    assert kept(c, "- x: (superseded at seq 5) old plan (seq 3)\n- task: The invoice exporter is done. (seq 8)")
    assert not kept(c, "- task: (superseded at seq 9) The invoice exporter is done. (seq 8)")
