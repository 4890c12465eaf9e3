"""The checklist on everyday forms of statement (ADR 0096): wishes said softly, a question
answered in the next sentence or message, the value said first, work reported done in
any word order, and an update that names its subject in other words.

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set); each
pattern has sentences that must match and routine ones that must not."""

from __future__ import annotations

import time

import pytest

from context_compaction.application.compacting.ledgers import verify_summary
from context_compaction.domain.checklist import checklist_items, classify
from context_compaction.domain.joining import sentences
from context_compaction.domain.ledger import Ledger, LedgerItem, extract
from context_compaction.domain.summary import SourceEntry
from ledger_builders import ledger_of as merged


def said(seq: int, text: str, role: str = "user") -> SourceEntry:
    return SourceEntry(seq=seq, role=role, text=text)


def kinds(text: str) -> list[str]:
    return [k for k, _, _ in checklist_items(text)]


@pytest.mark.parametrize("sentence", [
    "I lean towards Postgres for the event store.",
    "I'm leaning toward trio for the worker pool.",
    "Tabs suit me better than spaces in the Makefile.",
    "Ruff works better for me than flake8 as the linter.",
    "My vote is for Dagster as the scheduler.",
    "Ideally we'd keep the migrations in plain SQL.",
    "If it were up to me, the CLI would use click.",
    "I'm partial to short-lived branches for hotfixes.",
    "I'm not keen on snapshot tests for the renderer.",
    "Personally I'd steer clear of global state in handlers.",
    "pytest over unittest for the new suite, please.",
    "I much prefer squash merges on the main branch.",
    "Please, no trailing whitespace in the templates.",
    "Generated code has no place in the reviewed diff.",
    "The less magic in the config loader, the better.",
    "Could we skip the ORM in the reporting jobs?",
    "I find dataclasses much nicer for the DTOs.",
    "IMO structured logging is the sane choice for the workers.",
    "How about Jinja for the email templates?",
    "Type hints on every public method wherever possible.",
])
def test_a_wish_said_softly_is_a_preference(sentence: str) -> None:
    assert kinds(sentence) == ["preference"], sentence


@pytest.mark.parametrize("sentence", [
    "Can you run the tests again?",
    "Please open a PR for this.",
    "That suits me.",
    "Sounds good, works for me.",
    "I love it, thanks!",
    "It beats me why this fails.",
    "The tower leans towards the river bank in the photo.",
    "The run was faster than yesterday.",
])
def test_routine_talk_is_no_preference(sentence: str) -> None:
    assert "preference" not in kinds(sentence), sentence


def test_a_topic_before_a_wish_stays_with_it() -> None:
    assert sentences("For the config files I'd rather we use TOML.") == ["For the config files I'd rather we use TOML."]
    # (a wish after an unrelated report still opens its own statement, ADR 0091)
    assert len(sentences("the other person moved teams I'd rather keep the old parser")) == 2


@pytest.mark.parametrize("text", [
    "When's the code freeze? March 3, last I heard.",
    "Who owns the payments runbook now? Marta Nowak, according to the rota.",
    "How long do we keep audit logs? 30 days, I believe.",
    "What's the retry ceiling for webhooks? Five, I think.",
    "Which broker are we on? RabbitMQ, since the team knows it.",
    "The schema migration? Done.",
])
def test_an_answer_joins_the_question_that_names_its_subject(text: str) -> None:
    assert sentences(text) == [text]
    assert kinds(text), text


@pytest.mark.parametrize("text", [
    "Is the build green? Sure, I'll look.",
    "Can you check the logs? Thanks.",
    "Should we rerun the suite? Nope.",
])
def test_a_request_or_a_reply_of_talk_is_no_answer(text: str) -> None:
    assert len(sentences(text)) == 2, text


def test_an_answer_joins_only_its_own_short_question_not_a_report_before_it() -> None:
    text = ("ok the search index question is settled, it's OpenSearch; it scales out, and one more thing "
            "Which pandas? 2.2.1, nobody minded.")
    values = [v for _, v, _ in checklist_items(text)]
    assert any("OpenSearch" in v and "2.2.1" not in v for v in values)
    assert "Which pandas? 2.2.1, nobody minded." in values
    # (with no capital to split at, the long sentence is still no question an answer joins)
    values = [v for _, v, _ in checklist_items(text.replace("Which", "which"))]
    assert any("OpenSearch" in v and "2.2.1" not in v for v in values)


def test_an_answer_in_the_next_message_joins_the_question_and_keeps_both_seqs() -> None:
    items = extract([said(4, "Quick one: when is the vendor demo?", "assistant"),
                     said(5, "Thursday 9 January, last I checked.")])
    demo = [i for i in items if "Thursday" in i.value]
    assert [(i.value, i.seq, i.first_seq) for i in demo] == [
        ("Quick one: when is the vendor demo? Thursday 9 January, last I checked.", 5, 4)]
    # (a tool call between them: the answer is about something else)
    items = extract([said(4, "when is the vendor demo?", "assistant"), said(5, "ok", "tool"),
                     said(6, "Thursday 9 January, last I checked.")])
    assert not any("vendor demo" in i.value and "Thursday" in i.value for i in items)


@pytest.mark.parametrize("sentence, kind", [
    ("$2,400 is what procurement approved for licences.", "amount"),
    ("Thursday works for the demo.", "date"),
    ("40 GB is plenty for the cache volume.", "amount"),
    ("5.0.8 of redis-py is what we ship.", "versioned"),
    ("For httpx, 0.27.2 is the version we ship.", "versioned"),
    ("Please don't bump boto3 past 1.34.90.", "versioned"),
    ("1.34.90 is the boto3 version we ship, please don't bump it.", "versioned"),
    ("Which redis-py? 5.0.8, nobody objected.", "versioned"),
])
def test_a_value_said_first_keeps_its_subject(sentence: str, kind: str) -> None:
    [(found, value, anchors)] = checklist_items(sentence)
    assert (found, value) == (kind, sentence) and anchors


@pytest.mark.parametrize("sentence", [
    "Got the backfill script done this morning.",
    "The feature flag rollout has landed.",
    "Landed the audit log export yesterday.",
    "docs update complete, moving on to the load test",
    "Crossed the load test off the list.",
    "the docs update is finally done",
])
def test_work_reported_done_in_any_word_order_is_a_task(sentence: str) -> None:
    assert kinds(sentence)[:1] == ["task"], sentence


@pytest.mark.parametrize("sentence", [
    "Let me know when you're done.",
    "Once the tests are done, push the branch.",
    "When you've finished, ping me.",
    "Is the migration done?",
    "Done with src/mod30.py on port 8030.",  # (about a path alone: the ledger's exact facts keep it)
])
def test_a_condition_or_a_question_about_work_is_no_task(sentence: str) -> None:
    assert "task" not in kinds(sentence), sentence


def test_two_tasks_reported_alike_are_two_tasks() -> None:
    ledger = merged(said(1, "Ticked another one off: the rate limiter."),
                    said(2, "Ticked another one off: the export job."))
    assert not ledger.superseded


def test_a_condition_shared_by_two_limits_does_not_make_them_one() -> None:
    ledger = merged(said(1, "The upload limit is 25 MB unless finance signs off.", "assistant"),
                    said(2, "The bundle size limit is 180 KB unless finance signs off.", "assistant"))
    assert not ledger.superseded


@pytest.mark.parametrize("first, update", [
    ("Thursday works for the demo.", "The demo moved to Friday."),
    ("When's the freeze? March 3, last I heard.", "The freeze slipped to March 10."),
    ("Uploads are capped at 25 MB.", "The upload limit is now 50 MB."),
    ("Priya Raman is the security contact until further notice.",
     "Aiko Tanaka replaces Priya Raman as the security contact."),
])
def test_an_update_in_other_words_supersedes_the_old_value(first: str, update: str) -> None:
    ledger = merged(said(1, first, "assistant"), said(2, update, "assistant"))
    assert [i.value for i in ledger.superseded if i.kind != "constraint"] == [first]
    assert update in {i.value for i in ledger.items}


@pytest.mark.parametrize("first, other", [
    ("The upload size limit is 25 MB.", "The bundle size limit is 180 KB."),  # (two limits)
    ("The demo is on Friday.", "The demo script takes 3 minutes."),  # (a date, a duration)
    ("The release freeze is March 3.", "The release party is March 10."),  # (two events)
    ("The demo is on Friday.", "The demo environment needs to be ready by Thursday."),  # (more, no change word)
])
def test_a_different_subject_or_value_type_supersedes_nothing(first: str, other: str) -> None:
    assert not merged(said(1, first, "assistant"), said(2, other, "assistant")).superseded


def test_a_replaced_rephrased_value_that_leaves_the_context_is_reported() -> None:
    covered = [{"seq": 1, "role": "user", "content": "Thursday works for the demo.", "tool_calls": [], "steering": False},
               {"seq": 2, "role": "user", "content": "The demo moved to Friday.", "tool_calls": [], "steering": False}]
    out = verify_summary("## Progress\nNone.", previous=None, covered=covered, last_seq=2, budget_tokens=500,
                         count=lambda t: max(1, len(t) // 4))
    assert [(d["value"], d["seq"], d.get("superseded_by")) for d in out.record["report"]["dropped_items"]] == [
        ("Thursday works for the demo.", 1, 2)]


def test_text_in_another_language_is_kept_whole_and_never_replaced_by_a_guess() -> None:
    text = "发布冻结日期是三月三日。"
    assert checklist_items(text) == [("statement", text, frozenset())]
    ledger = merged(said(1, text), said(2, "The freeze moved to March 10."))
    assert text in {i.value for i in ledger.items} and not ledger.superseded
    assert classify("Die Demo ist am Freitag.") is None or checklist_items("Die Demo ist am Freitag.")[0][1] == (
        "Die Demo ist am Freitag.")


def test_the_new_forms_keep_extraction_deterministic_and_fast() -> None:
    text = " ".join(["I lean towards Postgres for the event store.", "When's the freeze? March 3, last I heard.",
                     "Got the backfill script done this morning.", "Thursday works for the demo."] * 50)
    first = checklist_items(text)
    started = time.perf_counter()
    again = checklist_items(text)
    assert again == first
    assert time.perf_counter() - started < 1.0
    items = [LedgerItem("date", f"The demo {n} is on Friday.", n, n, anchors=(f"demo {n}",)) for n in range(300)]
    started = time.perf_counter()
    Ledger().merge(items)
    assert time.perf_counter() - started < 3.0
