"""The checklist beyond cue words (ADR 0083): salient sentences, a value kept with its
subject, supersession only on a matching subject, every supersession reported, the
kept tail giving the checklist room, and too small a window refused at configure time.

The sentences here are this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from functools import partial
from context_compaction.domain.budget import keep_with_checklist_room
from context_compaction.domain.checklist import checklist_items, salient
from context_compaction.domain.joining import sentences
from context_compaction.domain.ledger import LedgerItem, LedgerReport
from context_compaction.domain.summary import SourceEntry
from ledger_builders import merged as merged_by
from helpers import Harness, err, fingerprint, ok


def said(seq: int, text: str, role: str = "assistant") -> SourceEntry:
    return SourceEntry(seq=seq, role=role, text=text)


def test_a_sentence_with_a_value_or_a_name_and_a_subject_enters_without_a_cue_word() -> None:
    kinds = {v: k for k, v, _ in checklist_items(
        "The warehouse sync takes 40 minutes on Sundays. Marguerite signs off the vendor invoices. "
        "The importer now reads Parquet. The loop over rows was slow. Could you rerun it?")}
    assert "The warehouse sync takes 40 minutes on Sundays." in kinds
    assert "The importer now reads Parquet." in kinds
    assert "The loop over rows was slow." not in kinds and "Could you rerun it?" not in kinds
    assert salient("We'll keep the legacy exporter until the audit closes.")
    assert not salient("Thanks, 2 done.")  # (a value with no subject of its own)
    # (the ledger's exact facts hold these values on their own: no sentence twice)
    assert not salient("The worker listens on port 20001 now.")
    assert not salient("The runbook is at https://docs.example.com/runbook/2 for reference.")


def test_a_value_without_a_subject_stays_with_the_sentence_that_names_it() -> None:
    assert sentences("Cold start on the lambda? About 900 ms, give or take.") == [
        "Cold start on the lambda? About 900 ms, give or take."]
    assert sentences("Honestly, 14 nodes. That's the shard count we need.") == [
        "Honestly, 14 nodes. That's the shard count we need."]
    # (two sentences that each have a subject stay two)
    assert len(sentences("The shard count is 14. The replica lag is 3 seconds.")) == 2
    # (a digit inside a name is not a value: "S3" is a subject, "It is 2 TB now." its value)
    assert len(sentences("The S3 bucket holds exports. It is 2 TB now.")) == 1
    assert len(sentences("The S3 bucket holds exports. The archive queue holds 2 TB.")) == 2


merged = partial(merged_by, role="assistant", step=1)


def test_a_later_value_of_the_same_subject_supersedes_whatever_kind_each_was_given() -> None:
    ledger = merged("The shard count is 14 nodes.", "Update: the shard count is now 20 nodes.")
    assert [i.value for i in ledger.items if "shard" in i.value] == ["Update: the shard count is now 20 nodes."]
    assert [i.value for i in ledger.superseded] == ["The shard count is 14 nodes."]


def test_a_statement_without_a_value_replaces_no_value() -> None:
    ledger = merged("The export ceiling is 5 GB.", "Never raise the export ceiling without a ticket.")
    assert "The export ceiling is 5 GB." in {i.value for i in ledger.items}


def test_a_change_sharing_only_part_of_a_subject_keeps_both_and_flags_the_older() -> None:
    ledger = merged("The tenant export ceiling is 5 GB.", "The admin export ceiling is now 9 GB.")
    old = next(i for i in ledger.items if "5 GB" in i.value)
    assert "9 GB" in " ".join(i.value for i in ledger.items) and not ledger.superseded
    assert old.doubt == 2 and "possibly superseded at seq 2" in old.line()
    assert LedgerItem.from_record(old.to_record()) == old


def test_every_supersession_is_in_the_report() -> None:
    report = LedgerReport(superseded_items=[LedgerItem("amount", "x is 3 s.", 4, 4, key="seq 9")])
    assert report.to_record()["superseded_items"] == [{"kind": "amount", "value": "x is 3 s.", "seq": 4, "by": "seq 9"}]
    assert "superseded_items" not in LedgerReport().to_record()


def test_the_kept_tail_gives_the_checklist_a_quarter_of_the_threshold() -> None:
    # (8K window: threshold 4,000, summary 2,000: the tail was 2,000 and left nothing)
    assert keep_with_checklist_room(2000, threshold=4000, fixed=200, window=8000) == 800
    assert keep_with_checklist_room(20000, threshold=111616, fixed=500, window=128000) == 20000
    assert keep_with_checklist_room(500, threshold=600, fixed=400, window=1000) == 0


def test_configure_session_refuses_a_window_no_compaction_serves_and_changes_nothing(harness: Harness) -> None:
    ok(harness.do({"type": "start_session", "session_id": "s1", "model": "gpt-4o", "agent_token_limit": 5000}))
    error = err(harness.do({"type": "configure_session", "session_id": "s1", "agent_token_limit": 300}),
                "invalid_command")
    assert error["details"]["window"] == 300 and error["details"]["smallest_window"] > 300
    assert f"{error['details']['smallest_window']:,}" in error["message"]
    r = ok(harness.do({"type": "configure_session", "session_id": "s1", "agent_token_limit": 1000}))
    assert r["agent_token_limit"] == 1000


def test_the_refusal_boundary_is_the_smallest_window_and_a_refusal_records_nothing(harness: Harness) -> None:
    ok(harness.do({"type": "start_session", "session_id": "s1", "model": "gpt-4o", "agent_token_limit": 5000}))
    smallest = err(harness.do({"type": "configure_session", "session_id": "s1", "agent_token_limit": 1}),
                   "invalid_command")["details"]["smallest_window"]
    before = fingerprint(harness.bus)
    error = err(harness.do({"type": "configure_session", "session_id": "s1", "agent_token_limit": smallest - 1}),
                "invalid_command")
    assert error["details"] == {"window": smallest - 1, "smallest_window": smallest}
    # (a model whose counter needs a larger window is refused with the limit the session has)
    err(harness.do({"type": "configure_session", "session_id": "s1", "model": "acme/no-tiktoken-model",
                    "agent_token_limit": smallest}), "invalid_command")
    assert fingerprint(harness.bus) == before
    usage = ok(harness.do({"type": "get_context_usage", "session_id": "s1"}))
    assert usage["model"] == "gpt-4o"
    assert ok(harness.do({"type": "configure_session", "session_id": "s1",
                          "agent_token_limit": smallest}))["agent_token_limit"] == smallest
    assert fingerprint(harness.bus) != before


def test_the_scorer_counts_a_flagged_value_as_kept_and_not_current() -> None:
    from context_compaction.infrastructure.evaluation.canaries import Canary, flagged, kept, stated_as_current

    old = Canary("amount", "cache TTL", ("ttl",), ("15 minutes",), "The cache TTL is 15 minutes.")
    new = Canary("amount", "cache TTL", ("ttl",), ("600 seconds",), "The cache TTL is now 600 seconds.")
    old.superseded_by = new
    line = "- amount: The cache TTL is 15 minutes. (seq 3; possibly superseded at seq 9)"
    assert kept(old, line) and flagged(old, line) and not stated_as_current(old, line)
    plain = "- amount: The cache TTL is 15 minutes. (seq 3)"
    assert kept(old, plain) and not flagged(old, plain) and stated_as_current(old, plain)


def test_a_qualifier_behind_for_or_of_keeps_two_subjects_apart() -> None:
    # (review of issue 44: "for webhooks" stood behind a stop word, so "retry limit" was
    # the whole subject and the email sender's limit replaced the webhooks' current one)
    ledger = merged("The retry limit for webhooks is 5 attempts.",
                    "Actually the retry limit for webhooks is 8 attempts, not 5.",
                    "The retry limit for the email sender is 3 attempts.")
    current = {i.value for i in ledger.items}
    assert "Actually the retry limit for webhooks is 8 attempts, not 5." in current
    assert "The retry limit for the email sender is 3 attempts." in current
    assert [i.value for i in ledger.superseded] == ["The retry limit for webhooks is 5 attempts."]
    ledger = merged("Team Falcon is our release manager for this project.",
                    "Mira Lopez is taking over as release manager starting today.")
    assert [i.value for i in ledger.superseded] == ["Team Falcon is our release manager for this project."]


def test_a_person_named_by_first_name_alone_at_the_start_is_a_person() -> None:
    # (review of issue 44: only a two-word name was a name, and a capital at the start of
    # a sentence was no entity, so "Priyanka owns ..." left the checklist unreported)
    kinds = {v: k for k, v, _ in checklist_items(
        "Priyanka owns the billing service; ask her before touching invoices. "
        "Marguerite signs off the vendor invoices. Everyone owns their tests. Nothing handles retries.")}
    assert kinds.get("Priyanka owns the billing service; ask her before touching invoices.") == "person"
    assert kinds.get("Marguerite signs off the vendor invoices.") == "person"
    assert "Everyone owns their tests." not in kinds and "Nothing handles retries." not in kinds


def test_merging_items_about_unrelated_subjects_tests_no_value_pairwise(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # (review of issue 44: 400 short fact messages took 10 s to compact, most of it the
    # value regexes run on every earlier item for every new one, subjects unrelated)
    from context_compaction.domain import checklist, joining, subjects

    calls = []
    real = checklist._has_value
    for module in (checklist, joining, subjects):  # (extraction's and the merge's value tests)
        monkeypatch.setattr(module, "_has_value", lambda s: calls.append(s) or real(s))
    nouns = ("billing", "search", "export", "import", "ledger", "mailer", "scheduler", "gateway", "uploader", "indexer",
             "crawler", "renderer", "notifier", "archiver", "resolver", "tracker", "sampler", "planner", "builder",
             "linter")
    texts = [f"The {n} owner is unknown." for n in nouns] + [f"The {n} runs 4 replicas." for n in nouns]
    ledger = merged(*texts)
    assert len([i for i in ledger.items if i.value in texts]) == len(texts)
    assert len(calls) < 5 * len(texts)


def test_progress_on_two_numbered_units_is_two_facts() -> None:
    # (review of issue 44: "Done with module 3" superseded "Done with module 2": the
    # number was taken out as a value, leaving one subject for every module)
    ledger = merged("Done with module 2: the helpers moved and the tests passed.",
                    "Done with module 3: the helpers moved and the tests passed.")
    assert not ledger.superseded and len([i for i in ledger.items if "Done with module" in i.value]) == 2
    ledger = merged("Step 3: migrate the invoices table.", "Step 3 is done: the invoices table is migrated.")
    assert [i.value for i in ledger.superseded] == ["Step 3: migrate the invoices table."]


def test_merging_items_that_share_an_anchor_tests_each_value_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # (review of issue 44: "Nobody knows the owner of Queue7." 400 times, each pair sharing
    # "nobody knows", compacted 8x slower than before ADR 0083: values re-tested per pair)
    from context_compaction.domain import checklist, joining, subjects

    calls = []
    real = checklist._has_value
    for module in (checklist, joining, subjects):  # (extraction's and the merge's value tests)
        monkeypatch.setattr(module, "_has_value", lambda s: calls.append(s) or real(s))
    getattr(subjects._carries_value, "cache_clear", lambda: None)()
    texts = [f"Nobody knows the owner of queue_{n}." for n in range(40)]
    ledger = merged(*texts)
    assert len([i for i in ledger.items if i.value in texts]) == len(texts)
    assert len(calls) < 5 * len(texts)


def test_start_session_refuses_a_window_no_compaction_serves_and_records_nothing(harness: Harness) -> None:
    before = fingerprint(harness.bus)
    error = err(harness.do({"type": "start_session", "session_id": "s2", "model": "gpt-4o", "agent_token_limit": 300}),
                "invalid_command")
    assert error["details"]["window"] == 300 and error["details"]["smallest_window"] > 300
    assert fingerprint(harness.bus) == before
    ok(harness.do({"type": "start_session", "session_id": "s2", "model": "gpt-4o", "agent_token_limit": 1000}))
