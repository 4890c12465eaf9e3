"""ADR 0103: an answer after a lead-in joins its question, a subject named after the fact
joins its value, and a later version of a package flags the older one.

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set); each
pattern has sentences that must match and routine ones that must not."""

from __future__ import annotations

from functools import partial
import pytest

from context_compaction.domain.checklist import checklist_items
from context_compaction.domain.joining import sentences
from context_compaction.domain.ledger import Ledger, extract
from context_compaction.domain.summary import SourceEntry
from ledger_builders import merged as merged_by


merged = partial(merged_by, role="assistant")


@pytest.mark.parametrize("text", [
    "Which numpy do we ship? Looked at the wheel metadata: 1.26.4.",
    "What's our lint config based on? Checked the repo: ruff defaults.",
    "Who signs off on schema changes? That'd be Ana Lopes.",
    "Who runs the pager this week? It's Jonas Weber.",
    "Q: do exports include deleted rows? A: nobody has decided.",
])
def test_an_answer_after_a_lead_in_joins_its_question(text: str) -> None:
    assert sentences(text) == [text]


@pytest.mark.parametrize("text", [
    "Which file is slow? It's hard to say without a profile.",  # (a lead-in then talk: no answer)
    "Is the cache warm? I checked: nothing there yet.",  # (found nothing: the question stays apart)
    "Can you bump numpy? Checked the wheel: fine.",  # (a request, not a question about a value)
])
def test_a_lead_in_before_talk_is_no_answer(text: str) -> None:
    assert len(sentences(text)) == 2, text


def test_a_version_answer_is_about_the_package_the_question_names() -> None:
    (kind, value, anchors), = checklist_items("Which numpy do we ship? Looked at the wheel metadata: 1.26.4.")
    assert kind == "versioned" and "1.26.4" in value and "numpy" in anchors


@pytest.mark.parametrize("text", [
    "12 workers is the maximum. For the ingest pool, that is.",
    "It tops out at 2 GB. About the upload buffer, I mean.",
])
def test_a_subject_named_after_the_fact_stays_with_its_value(text: str) -> None:
    assert sentences(text) == [text]


def test_a_sentence_that_only_starts_with_for_is_not_an_afterthought() -> None:
    assert len(sentences("12 workers is the maximum. For the ingest pool we use four.")) == 2


def test_a_later_version_of_the_same_package_flags_the_older_one_in_any_wording() -> None:
    ledger = merged("Wir bleiben bei numpy 1.26.4, bis der Test durch ist.", "numpy läuft jetzt auf 2.0.1, bitte neu bauen.")
    old = next(i for i in ledger.items if "1.26.4" in i.value and i.kind == "versioned")
    assert old.doubt == 3  # (flagged, never hidden: the words around a version are loose)
    new = next(i for i in ledger.items if "2.0.1" in i.value and i.kind == "versioned")
    assert new.doubt is None


def test_a_version_restated_beside_another_package_flags_nothing() -> None:
    ledger = merged("numpy runs at 2.0.1 in the image.", "The image pins scipy 1.13.1 and numpy 2.0.1 together.")
    assert all(i.doubt is None for i in ledger.items)


def test_the_remark_bound_is_a_stable_partition_typed_items_then_the_newest_remarks() -> None:
    # (ADR 0103: a partition by position replaced a filter by object identity; the same
    # outcome, pinned here — an item equal to a kept one is kept by its place, not its value)
    from context_compaction.domain.ledger import LedgerItem
    from context_compaction.domain.remarks import MAX_REMARKS, bound

    typed = [LedgerItem("path", f"src/m{n}.py", n, n) for n in range(3)]
    said = [LedgerItem("remark", f"remark number {n} said here", 1000 - n, 1000 - n) for n in range(MAX_REMARKS + 3)]
    twin = LedgerItem("remark", "remark number 0 said here", 1000, 1000)  # (equal to the newest one)
    items = [*typed, said[0], twin, *said[1:]]
    kept, evicted = bound(items)
    assert kept == [*typed, said[0], twin, *said[1:MAX_REMARKS - 1]]
    assert evicted == said[MAX_REMARKS - 1:]
    assert len(kept) - len(typed) == MAX_REMARKS


def test_two_packages_said_alike_flag_nothing() -> None:
    # (the words around a version are talk: "We're on" names no package)
    ledger = merged("We're on numpy 1.26.4 in the image.", "We're on scipy 1.13.1 in the image.")
    assert all(i.doubt is None for i in ledger.items)
    ledger = merged("ok let's go with numpy==1.26.4 then", "ok let's go with scipy==1.13.1 then")
    assert all(i.doubt is None for i in ledger.items)
    # (a word of change does not make two packages one: "actually ... instead")
    ledger = merged("actually let's go with numpy==1.26.4 instead", "actually let's go with scipy==1.13.1 instead")
    assert all(i.doubt is None for i in ledger.items)


@pytest.mark.parametrize(("first", "then"), [
    ("Ana Lopes is the release manager for now.", "Going forward, send release manager questions to Jonas Weber."),
    ("The audit review is on March 3.", "Going forward, the audit review is on April 9."),
])
def test_going_forward_with_a_new_value_changes_the_old_one(first: str, then: str) -> None:
    # (ADR 0103: "going forward" read as a wish made the change a preference, which
    # replaces no value: the old one stayed current, unflagged)
    ledger = merged(first, then, role="user")
    old = [i for i in ledger.items if i.value == first]
    assert not old or old[0].doubt is not None, ledger.items
    assert any(i.value == then and i.kind != "preference" for i in ledger.items)


def test_going_forward_with_a_wish_and_no_value_is_still_a_preference() -> None:
    from context_compaction.domain.checklist import classify

    assert classify("Going forward, use pathlib for file handling.") == "preference"


@pytest.mark.parametrize("text", [
    "还没决定的事：staging 要不要保留 nightly snapshots？",
    "这个问题还没有答案：do refunds include shipping？",
])
def test_a_sentence_said_in_a_caseless_script_around_english_terms_is_kept_whole(text: str) -> None:
    # (ADR 0103: the English cues read only the terms; the sentence was no item, its loss unreported)
    assert checklist_items(text, user=True) == [("statement", text, frozenset())]


def test_an_english_sentence_with_a_short_caseless_name_is_not_kept_whole() -> None:
    assert checklist_items("Please ask 王小明 about the deploy window tomorrow.", user=True) == []


def test_a_statement_sharing_a_word_with_a_task_does_not_replace_it() -> None:
    # (ADR 0103: "rerun CI" in a task report and "the CI runner" in a decision: the
    # statement took the task's kind and replaced it, then the next task replaced the decision)
    ledger = merged("The export job is sorted now (step 2 of 5), but I'll rerun CI to be sure.",
                    "Buildkite has been selected as the CI runner, because it is cheap.",
                    "The docs update is sorted now (step 3 of 5), but I'll rerun CI to be sure.")
    assert not ledger.superseded
    assert [i.kind for i in ledger.items if "Buildkite" in i.value] == ["statement"]


def test_a_report_on_the_same_work_still_replaces_it() -> None:
    ledger = merged("Step 2 of 5: the export job, half done.", "Step 2 of 5 is done: the export job shipped.")
    assert [i.value for i in ledger.superseded] == ["Step 2 of 5: the export job, half done."]


@pytest.mark.parametrize("question", [
    "Should the nightly export keep soft-deleted accounts?",
    "Does the quote total include the setup fee?",
    "Should we cap retries for the webhook sender?",
])
def test_an_open_question_of_the_assistant_is_an_item(question: str) -> None:
    # (ADR 0103: no cue word, so it was no item; when it left the context nothing said so)
    assert [k for k, _, _ in checklist_items(f"I split the parser into two helpers. {question}")] == ["open_question"]


@pytest.mark.parametrize("question", [
    "Shall I run the suite again?", "Does that help?", "Do you want me to add a test for the empty case?",
    "Anything else?", "Should I push the branch now?", "Sounds good?",
])
def test_an_offer_or_a_check_in_is_no_open_question(question: str) -> None:
    assert checklist_items(question) == []


def test_an_answered_question_is_one_item_with_its_answer() -> None:
    ledger = merged("I split the parser. How long do we keep the audit logs?", role="assistant")
    assert [i.kind for i in ledger.items] == ["open_question"]
    ledger, _ = Ledger().merge(extract([
        SourceEntry(seq=1, role="assistant", text="I split the parser. How long do we keep the audit logs?"),
        SourceEntry(seq=2, role="user", text="30 days, I believe.")]))
    assert [(i.value, i.first_seq) for i in ledger.items] == [("How long do we keep the audit logs? 30 days, I believe.", 1)]


def test_a_question_of_the_user_stays_no_item() -> None:
    # (the user's questions are what the assistant answers next; ADR 0099 leaves them out)
    assert checklist_items("Should the nightly export keep soft-deleted accounts?", user=True) == []


def test_an_open_question_the_summary_leaves_out_is_reported_once_and_not_carried_after() -> None:
    # (ADR 0103: like a remark; a typed item left out is reported at every compaction, which
    # an assistant asking now and then would turn into thousands of report entries)
    from context_compaction.application.compacting.ledgers import verify_summary

    def msg(seq: int, text: str, role: str = "assistant") -> dict:
        return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}

    def words(text: str) -> int:
        return len(text.split())

    asked = "Should the nightly export keep soft-deleted accounts?"
    first = verify_summary("## Progress\nNone.", previous=None, covered=[msg(1, f"I split the parser. {asked}")],
                           last_seq=1, budget_tokens=0, count=words)
    assert [(i.kind, i.value) for i in first.report.dropped_items] == [("open_question", asked)]
    assert asked not in [i["value"] for i in first.record.get("items", [])]
    again = verify_summary("## Progress\nNone.", previous=first.record, covered=[msg(2, "Fine.", "user")],
                           last_seq=2, budget_tokens=0, count=words)
    assert again.report.dropped == 0


def test_a_ledger_carries_the_newest_open_questions_and_evicts_the_older_reported() -> None:
    from context_compaction.domain.remarks import MAX_OPEN_QUESTIONS

    names = [a + b for a in ("al", "be", "co", "de", "el") for b in ("pha", "ta", "ro", "ma", "xo")]
    entries = [SourceEntry(seq=n + 1, role="assistant", text=f"Should the {name} export keep archived rows?")
               for n, name in enumerate(names[:MAX_OPEN_QUESTIONS + 4])]
    ledger, evicted = Ledger().merge(extract(entries))
    carried = [i for i in ledger.items if i.kind == "open_question"]
    assert len(carried) == MAX_OPEN_QUESTIONS and min(i.seq for i in carried) == 5
    assert sorted(i.seq for i in evicted) == [1, 2, 3, 4]


def test_a_sentence_in_a_caseless_script_after_an_english_one_is_its_own() -> None:
    # (ADR 0103: no capital after the stop, so the splitter glued it to the English sentence
    # before it, whose cues then decided the kind and the subject of both)
    text = "Run the linter again, it was noisy. 部署窗口定在 Tuesday，不要改。"
    assert sentences(text) == ["Run the linter again, it was noisy.", "部署窗口定在 Tuesday，不要改。"]
    assert checklist_items("queue backend 最后定了 RabbitMQ，理由是 the team knows it。") == [
        ("statement", "queue backend 最后定了 RabbitMQ，理由是 the team knows it。", frozenset())]


def test_a_named_choice_going_forward_flags_the_earlier_choice() -> None:
    ledger = merged("After a week of trials the build runner is going to be Drone, since it is cheap.",
                    "We dropped that pick, Buildkite is the build runner going forward, since it is faster.")
    # (the change's whole subject is the old one's: replaced, and reported where it leaves)
    assert [i.value for i in ledger.superseded if "Drone" in i.value]
    ledger = merged("After two rounds of trials the CI runner is going to be Drone, since it is cheap.",
                    "We ditched the earlier pick, Buildkite is the CI runner going forward, since it is faster.")
    old = next(i for i in ledger.items if "Drone" in i.value)
    assert old.doubt is not None  # (only part of the subject shared: flagged, not hidden)


@pytest.mark.parametrize(("task", "report"), [
    ("Still to do: rotate the API keys.", "The API keys were rotated this morning."),
    ("Remaining: ship the exporter fix.", "We shipped the exporter fix to staging."),
])
def test_a_report_in_the_tasks_own_verb_closes_it(task: str, report: str) -> None:
    # (review of ADR 0103: a statement replaces a task only as a report on it; the task's
    # own verb in the past is one, though no done word is said)
    ledger = merged(task, report)
    assert not any(i.value == task for i in ledger.items), [i.value for i in ledger.items]
    assert any(i.value.startswith(task[:20]) for i in ledger.superseded)


def test_a_statement_sharing_a_word_still_leaves_the_task_open() -> None:
    ledger = merged("Still to do: rerun CI after the backfill.", "GitHub Actions is the CI runner.")
    assert any("rerun CI" in i.value for i in ledger.items)


def test_an_older_version_said_later_flags_only_with_a_change() -> None:
    ledger = merged("CI uses node 20.11.1.", "Locally I have node 18.19.0 but that's irrelevant.")
    assert all(i.doubt is None for i in ledger.items)
    ledger = merged("CI uses node 20.11.1.", "We rolled node back to 18.19.0 in CI.")
    old = [i for i in ledger.items if i.value == "CI uses node 20.11.1."]
    assert (old and old[0].doubt is not None) or any(i.value == "CI uses node 20.11.1." for i in ledger.superseded)
