"""ADR 0114 amended (2026-12-05): a break-it review of 0114's own rules. Every sentence
here is this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

import re
import signal

from context_compaction.domain import coverage
from context_compaction.domain.cues import _AMOUNT, _RATE
from context_compaction.domain.joining import sentences
from context_compaction.domain.marks import mark_superseded
from ledger_builders import current, merged, replaced


# ------------------------------------------------------------------ a setting's file
def test_a_path_the_sentence_mentions_on_the_way_is_no_file_of_the_setting() -> None:
    assert replaced(merged("POOL_CAP=6 in deploy/api.toml.", "POOL_CAP=9 now; the why is in notes/pool.md."), "POOL_CAP=6")
    assert replaced(merged("TIMEOUT_S=4 in svc.py", "TIMEOUT_S=7; the stack trace ended in vendor/net/conn.py."),
                    "TIMEOUT_S=4")
    assert replaced(merged("POOL_CAP=6 in deploy/api.toml.", "Bump POOL_CAP to 9; I also edited web/app.py."),
                    "POOL_CAP=6")


def test_a_leading_dot_slash_names_the_same_file() -> None:
    assert replaced(merged("POOL_CAP=6 in deploy/api.toml.", "POOL_CAP=9 in ./deploy/api.toml today."), "POOL_CAP=6")


def test_a_setting_said_for_another_file_stays_another_setting() -> None:
    ledger = merged("POOL_CAP=6 in deploy/api.toml.", "POOL_CAP=9 in deploy/worker.toml.")
    assert current(ledger, "POOL_CAP=6") is not None and current(ledger, "POOL_CAP=9") is not None


def test_one_value_in_two_files_is_two_items_each_replaced_in_its_own_file() -> None:
    ledger = merged("Set POOL_CAP=5 in deploy/api.toml; the queue backs up.",
                    "Set POOL_CAP=11 in deploy/cron.toml; the reports lag.",
                    "Set POOL_CAP=5 in deploy/cron.toml; the reports lag.",
                    "Set POOL_CAP=3 in deploy/api.toml; the queue drains.")
    now = {(i.value, i.key) for i in ledger.items if i.kind == "setting"}
    assert now == {("POOL_CAP=5", "POOL_CAP in deploy/cron.toml"), ("POOL_CAP=3", "POOL_CAP in deploy/api.toml")}


def test_a_value_replaced_in_one_file_is_not_marked_on_the_line_of_another_file() -> None:
    ledger = merged("Set POOL_CAP=5 in deploy/api.toml.", "Set POOL_CAP=5 in deploy/cron.toml.",
                    "Set POOL_CAP=3 in deploy/api.toml.")
    text, _ = mark_superseded("- POOL_CAP=5 in deploy/cron.toml (seq 3)\n- POOL_CAP=5 in deploy/api.toml (seq 1)", ledger)
    cron, api = text.splitlines()
    assert "superseded" not in cron and "superseded" in api


# ------------------------------------------------------------------ scope, joining, flags
def test_talk_closing_a_clause_mid_sentence_is_no_place() -> None:
    assert replaced(merged("The ship date is May 4 on paper; sales pushes.", "The ship date is May 11 in reality; docs lag."),
                    "The ship date is May 4 on paper; sales pushes.")
    assert replaced(merged("The p99 latency is 420 ms on average; fine.", "Update: the p99 latency is 250 ms in aggregate; better."),
                    "The p99 latency is 420 ms on average; fine.")


def test_an_environment_closing_a_clause_mid_sentence_is_still_a_scope() -> None:
    ledger = merged("The pool size is 8 in prod; traffic is high.", "The pool size is 2 in staging; it idles.")
    assert current(ledger, "The pool size is 8 in prod; traffic is high.") is not None


def test_a_name_in_a_note_that_chooses_nothing_does_not_join_the_topic_before_it() -> None:
    old = "The release captain is Tomasz Wilk."
    assert current(merged(old, "I skimmed the release captain handbook. Coffee with Ingrid ran over."), old) is not None
    assert len(sentences("We audited the release captain rota. Thanks to Ingrid for the notes.")) == 2


def test_a_report_repeating_the_value_or_of_another_subject_flags_nothing() -> None:
    old = "The session lifetime is 900 seconds."
    assert current(merged(old, "Done: wrote up the session lifetime of 900 seconds and the 60 seconds before it."),
                   old).doubt is None
    old = "The API read timeout is 30 seconds."
    assert current(merged(old, "I'd prefer the API landing page to render in under 2 seconds."), old).doubt is None


# ------------------------------------------------------------------ plain values
def _losses(sentence: str, line: str) -> int:
    said = coverage.said_in([(3, "user", sentence)])
    return len(coverage.losses(said, coverage.Context([line]), coverage.Context([])))


def test_underscores_inside_a_path_are_part_of_it() -> None:
    assert _losses("The worker entry is jobs/__main__.py, not run.py.", "- The worker entry is jobs/main.py, not run.py. (seq 9)")
    assert not _losses("The worker entry is jobs/__main__.py, not run.py.",
                       "- The worker entry is **jobs/__main__.py**, not run.py. (seq 9)")


def test_a_pair_of_ports_is_no_grouped_number() -> None:
    assert _losses("Open ports 22,443 on the bastion.", "- Open ports 22443 on the bastion. (seq 9)")
    assert not _losses("The grant is $12,000 this year.", "- The grant is $12000 this year. (seq 9)")


# ------------------------------------------------------------------ linear amounts
def _alarm(_sig: int, _frame: object) -> None:
    raise TimeoutError("an amount pattern backtracked")


def test_a_long_row_of_grouped_numbers_is_read_in_bounded_time() -> None:
    row = "The row reads " + ",".join(["123"] * 12_000) + " today."
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)  # (a guard, not a timing: the quadratic pattern took minutes on a tenth of this)
    try:
        assert not list(_AMOUNT.finditer(row)) and not list(_RATE.finditer(row))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_amounts_read_as_before_on_everyday_text() -> None:
    text = "It took 1,250 ms, then 3.5 GB and $4,000; 12 requests per second, 40 users each, 10,000 rows."
    assert [m.group(0) for m in _AMOUNT.finditer(text)] == [
        "1,250 ms", "3.5 GB", "$4,000", "12 requests", "40 users", "10,000 rows"]
    assert re.search(r"12 requests per second", _RATE.search(text).group(0))


# ------------------------------------------------------------------ quotes, abbreviations, roles
def test_a_quoted_word_that_is_printed_not_chosen_is_no_name() -> None:
    old = "The deploy bot is Jenkins."
    ledger = merged(old, 'The deploy bot posted "Finished" after six minutes.')
    assert current(ledger, old) is not None and current(ledger, old).doubt is None


def test_an_abbreviation_before_a_capital_of_another_script_ends_no_sentence() -> None:
    for said in ("Die Leitung hat Dr. Ümit Aksoy.", "Куратор проекта — г. Соколов.", "Zuständig ist d. h. Ömer."):
        assert sentences(said) == [said]


def test_an_emoji_code_mid_sentence_before_a_capital_ends_no_sentence() -> None:
    said = "Fill in the :clipboard: Standup form and mark :white_check_mark: Shipped when done."
    assert sentences(said) == [said]
    assert len(sentences("Numbers are in :tada: I added the chart too.")) == 2


def test_a_word_of_talk_after_a_role_is_no_person() -> None:
    for said in ("The lead is vague.", "The manager is strict.", "The admin is slow today.", "The contact is slack.",
                 "The assignee is blank."):
        assert coverage.values(said) == [], said
    assert coverage.values("The approver is wiebke.") == ["wiebke"]
    assert coverage.values("The lead for payments is joaquim.") == ["joaquim"]


# ------------------------------------------------------------------ low
def test_a_blank_line_before_a_kind_labelled_line_keeps_the_citations_aligned() -> None:
    said = coverage.said_in([(3, "user", "Is the nightly export green?"), (5, "assistant", "Green since June 2.")])
    ctx = coverage.Context(["## Fact Checklist\n- task: Green since June 2. (seq 5)", "Later:\n\n- todo: tidy the export"])
    # (the answer, kept word for word on its cited line; the question is read by its words
    # since ADR 0116, and no line here holds them)
    assert [loss.seq for loss in coverage.losses(said, ctx, coverage.Context([]))] == [3]


def test_favourite_and_favored_are_preference_cues() -> None:
    from context_compaction.domain.checklist import classify
    assert classify("My favourite formatter is black, keep it.") == "preference"
    assert classify("The favored layout is one module per feature.") == "preference"


def test_the_sentence_that_set_a_replaced_value_is_replaced_with_it() -> None:
    ledger = merged("Set POOL_CAP=5 in deploy/api.toml; the ingest jobs pile up.",
                    "Set POOL_CAP=5 in deploy/cron.toml; the cache jobs pile up.",
                    "Set POOL_CAP=3 in deploy/api.toml; the billing jobs pile up.")
    assert replaced(ledger, "Set POOL_CAP=5 in deploy/api.toml; the ingest jobs pile up.")
    assert current(ledger, "Set POOL_CAP=5 in deploy/cron.toml; the cache jobs pile up.") is not None
