"""ADR 0114: the general mechanisms behind a never-tuned set's misses, and the review's
findings on ADRs 0109 and 0110. Every sentence here is this module's own (not any
``ctxc eval`` phrasing set)."""

from __future__ import annotations

from context_compaction.domain import coverage
from context_compaction.domain.checklist import classify
from context_compaction.domain.joining import sentences
from context_compaction.domain.ledger import LedgerItem, present
from ledger_builders import doubted, merged, replaced


# ------------------------------------------------------------------ where a sentence ends
def test_a_task_box_after_a_stop_opens_a_sentence() -> None:
    said = sentences("The cache warms in ten seconds. - [x] Verify the retry budget: four attempts on the edge node")
    assert said == ["The cache warms in ten seconds.", "[x] Verify the retry budget: four attempts on the edge node"]


def test_an_emoji_code_after_a_stop_opens_a_sentence_and_one_before_a_capital_closes_one() -> None:
    assert len(sentences("Deploy went fine. :wrench: infra ask: QUEUE_DEPTH should read 200 :pray:")) == 2
    assert sentences(":chart: cold start measured at 3 seconds :sparkles: I also pruned the fixtures.") == [
        ":chart: cold start measured at 3 seconds :sparkles:", "I also pruned the fixtures."]


def test_a_capital_of_another_cased_script_after_a_stop_opens_a_sentence() -> None:
    assert len(sentences("The suite is green again. Мы выбрали Postgres для очереди.")) == 2


def test_an_opener_after_a_closing_backtick_opens_a_sentence() -> None:
    assert len(sentences('deploy.toml says `owner = "Lena Park"` Please trim the handler.')) == 2


def test_please_note_is_no_wish() -> None:
    assert classify("please note that the on-call for payments has moved to Lena Park.") != "preference"


# ------------------------------------------------------------------ which value is current
def test_a_new_value_said_in_a_report_of_work_flags_the_old_one() -> None:
    old = "The session lifetime is 90 minutes."
    ledger = merged(old, "Retested after the index landed; the session lifetime is done at forty minutes.")
    assert doubted(ledger, old)


def test_a_new_choice_said_as_a_wish_flags_the_old_choice() -> None:
    old = "Second thoughts on the event bus: I'm going with Kafka after all."
    ledger = merged(old, "Ripping out the first pick for the event bus in favour of Pulsar; it scales better.")
    assert doubted(ledger, old)


def test_a_quoted_name_is_a_value_a_later_choice_replaces() -> None:
    old = 'I noted it in deps.toml as `event bus = "Kafka"`, because ops knows it.'
    ledger = merged(old, "Second thoughts on the event bus: I'm going with Pulsar after all.")
    assert replaced(ledger, old)


def test_a_capital_opening_the_clause_after_a_label_is_the_subject_not_a_name() -> None:
    old = "The vendor audit slides to April 2; legal needs a week."
    ledger = merged(old, "Invite re-sent: Vendor audit, August 27, room 3.")
    assert doubted(ledger, old)


def test_one_template_for_two_packages_replaces_nothing() -> None:
    ledger = merged("Ran `pip install 'numpy==1.26.4'` in the container.",
                    "Ran `pip install 'scipy==1.13.0'` in the container.")
    assert not [i for i in ledger.superseded if i.kind == "versioned"]


def test_a_manifest_line_states_a_package_version() -> None:
    assert classify('deps note: `orjson = "3.10.7"` under [deps], pinned by me.') == "versioned"


def test_a_name_with_no_subject_of_its_own_joins_the_topic_before_it() -> None:
    said = sentences("We benchmarked the options for the message broker. Going with Kafka, since it is simplest.")
    assert len(said) == 1
    assert len(sentences("The deploy pipeline is green. The importer now reads Parquet.")) == 2


# ------------------------------------------------------------------ the review's findings
def test_a_person_named_in_lower_case_after_a_role_is_a_value() -> None:
    assert coverage.values("the approver for the payments service is roisin.") == ["roisin"]
    assert coverage.values("The approver is away.") == [] and coverage.values("The approver is happy with it.") == []


def test_a_lone_fragment_is_stated_by_its_own_quote_not_by_a_like_sentence_of_another_message() -> None:
    (fragment,) = [s for s in coverage.said_in([(4, "user", "When did the login redirect bug get fixed?"),
                                                (5, "assistant", "Fixed on March 1.")]) if s.seq == 5]
    assert not coverage.Context(["- The export crash? Fixed on March 1."]).states(fragment)
    assert coverage.Context(["- task: Fixed on March 1. (seq 5)"]).states(fragment)
    assert coverage.Context(["- The login redirect bug: fixed on March 1."]).states(fragment)


def test_two_files_settings_are_two_settings() -> None:
    ledger = merged("Set MAX_WORKERS=8 in config/prod.toml.", "Set MAX_WORKERS=2 in config/staging.toml.")
    assert {i.value for i in ledger.items if i.kind == "setting"} == {"MAX_WORKERS=8", "MAX_WORKERS=2"}
    ledger = merged("Set MAX_WORKERS=8 in config/prod.toml.", "Set MAX_WORKERS=12 in config/prod.toml.")
    assert {i.value for i in ledger.items if i.kind == "setting"} == {"MAX_WORKERS=12"}


def test_a_place_closing_a_clause_mid_sentence_is_a_scope() -> None:
    ledger = merged("The worker count is 8 in prod; the queue drains faster that way.",
                    "The worker count is 2 in staging; the queue drains faster that way.")
    assert not ledger.superseded


def test_formatting_and_digit_groups_are_no_part_of_a_stated_value() -> None:
    assert present("- constraint: Budget cap is $500 total. (seq 1)", LedgerItem("constraint", "Budget cap is **$500** total.", 1, 1))
    assert present("We import 12000 rows a night.", LedgerItem("statement", "We import 12,000 rows a night.", 1, 1))
    (s,) = coverage.said_in([(3, "user", "We import 12,000 rows a night from the warehouse.")])
    assert coverage.Context(["- We import **12000** rows a night from the warehouse."]).states(s)


def test_a_setting_said_with_its_file_is_marked_when_one_said_without_a_file_replaces_it() -> None:
    from context_compaction.domain.marks import mark_superseded

    ledger = merged("Put this in .env.production: MAX_WORKERS=12 (agreed)", "Ops overruled it: MAX_WORKERS=16.")
    text, marks = mark_superseded("- setting: MAX_WORKERS=12 (seq 1)", ledger)
    assert marks == 1 and "superseded by MAX_WORKERS=16" in text


def test_a_file_in_the_next_sentence_of_the_line_is_no_scope_of_a_setting() -> None:
    ledger = merged("Ops agreed: RETRY_LIMIT=5. Make sure the linter passes on core/retry.py.",
                    "Ran `kubectl set env deploy/worker RETRY_LIMIT=3` on all clusters.")
    assert {i.value for i in ledger.items if i.kind == "setting"} == {"RETRY_LIMIT=3"}
