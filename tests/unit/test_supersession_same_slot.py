"""ADR 0110: a later value of the same type about the same subject phrase marks the
earlier one, whatever the words around it (no change word, the subject anywhere in the
sentence), and two things that only share a word stay two.

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from context_compaction.domain.ledger import Ledger, LedgerItem
from context_compaction.domain.summary import SourceEntry
from context_compaction.domain.marks import mark_superseded, still_stated
from ledger_builders import ledger_of


def merged(*said: tuple[str, str]) -> Ledger:
    return ledger_of(*(SourceEntry(seq=n * 2 + 1, role=role, text=t) for n, (role, t) in enumerate(said)))


def marked(ledger: Ledger, value: str) -> bool:
    """Whether ``value`` is no longer carried as current: replaced, or flagged."""
    return any(i.value == value for i in ledger.superseded) or any(
        i.value == value and i.doubt is not None for i in ledger.items)


def untouched(ledger: Ledger, value: str) -> bool:
    return any(i.value == value and i.doubt is None for i in ledger.items)


def test_a_later_value_of_the_same_type_marks_the_earlier_without_a_change_word() -> None:
    # (the subject far from the value in the first, the second a bare measurement)
    old = ("The export window, which the data team and two of the platform leads haggled over for weeks "
           "before anyone wrote it down, is 40 minutes.")
    ledger = merged(("assistant", old), ("assistant", "Measured again on the new cluster: the export window is 25 minutes."))
    assert marked(ledger, old)


def test_the_subject_said_after_the_value_still_names_it() -> None:
    old = "Per my notes the upload buffer is 64 MB."
    ledger = merged(("assistant", old), ("assistant", "The benchmark settles on 32 MB; that is the upload buffer."))
    assert marked(ledger, old)


def test_a_role_said_in_other_words_marks_the_earlier_holder() -> None:
    old = "Whoever carries the pager this week is Ines Duarte, our incident commander."
    ledger = merged(("user", old), ("user", "Disregard the earlier name for the incident commander; it's Omar Said."))
    assert marked(ledger, old)


def test_every_earlier_holder_is_marked_not_only_the_one_the_anchors_find() -> None:
    first = "The incident commander is Ines Duarte."
    second = "Whoever carries the pager this week is Joel Park, our incident commander."
    ledger = merged(("user", first), ("user", second), ("user", "The incident commander is Omar Said."))
    assert marked(ledger, first) and marked(ledger, second)


def test_a_word_that_qualifies_another_package_is_no_version_of_it() -> None:
    # (review: "Python 3.11.9" was replaced by the client library's version)
    ledger = merged(("user", "We run Python 3.11.9 in CI."), ("assistant", "The Python client library is at 0.27.2."))
    assert untouched(ledger, "We run Python 3.11.9 in CI.") and not ledger.superseded


def test_a_person_of_another_service_sharing_a_role_word_marks_nothing() -> None:
    # (review: the contact of one service flagged by the contact of another)
    ledger = merged(("user", "Priya Raman is the on-call contact for the billing service."),
                    ("user", "For the search service the on-call contact is Marcus Bell."))
    assert untouched(ledger, "Priya Raman is the on-call contact for the billing service.")


def test_two_limits_of_different_things_stay_two() -> None:
    ledger = merged(("user", "Hard rule: the upload size limit is 25 MB."), ("user", "The bundle size limit is 320 KB."))
    assert untouched(ledger, "Hard rule: the upload size limit is 25 MB.")


def test_template_talk_shared_by_two_subjects_marks_nothing() -> None:
    # (only "takes place" in common: two events on two dates)
    ledger = merged(("user", "It was agreed the vendor review takes place on March 3."),
                    ("user", "It was agreed the kickoff meeting takes place on May 9."))
    assert untouched(ledger, "It was agreed the vendor review takes place on March 3.")


def test_another_value_type_marks_nothing() -> None:
    ledger = merged(("assistant", "The export window is 40 minutes."),
                    ("assistant", "The export window review is on Friday 9 May."))
    assert untouched(ledger, "The export window is 40 minutes.")


def test_a_sentence_about_the_pin_marks_a_higher_version() -> None:
    ledger = merged(("assistant", "grpcio is at 1.64.0 in the image."),
                    ("assistant", "The lockfile pin for grpcio is 1.62.2, I checked."))
    assert marked(ledger, "grpcio is at 1.64.0 in the image.")
    # (a lower version somewhere else is no pin: ADR 0106's guard stands)
    ledger = merged(("user", "CI uses node 20.11.1."), ("user", "Locally I have node 18.19.0 but that's irrelevant."))
    assert all(i.doubt is None for i in ledger.items)


def test_a_flagged_sentence_is_flagged_wherever_the_summary_quotes_it() -> None:
    old = "Whoever carries the pager this week is Ines Duarte, our incident commander."
    ledger = Ledger(items=(LedgerItem("person", old, 3, 3, anchors=("incident commander",), doubt=9),))
    summary = f"## Objective\n- Latest request: {old} Please fix the tests. (seq 3)\n\n## Fact Checklist\n" \
              f"- person: {old} (seq 3; possibly superseded at seq 9)"
    text, n = mark_superseded(summary, ledger)
    assert n == 1
    assert f"{old} Please fix the tests. (seq 3) (possibly superseded at seq 9)\n" in text
    assert text.count("possibly superseded") == 2  # (the checklist line is not flagged twice)
    assert mark_superseded(text, ledger)[1] == 0  # (nor the quote, a second time)


def test_a_record_carries_only_the_replaced_values_its_summary_still_states() -> None:
    stated = LedgerItem("amount", "The export window is 40 minutes.", 3, 3, key="seq 9", anchors=("export window",))
    gone = LedgerItem("amount", "The import window is 15 minutes.", 5, 5, key="seq 11", anchors=("import window",))
    fact = LedgerItem("setting", "MAX_WORKERS=8", 5, 5, key="MAX_WORKERS")
    summary = "- (superseded at seq 9) The export window is 40 minutes. (seq 3)\n- MAX_WORKERS=8 (superseded by ...)"
    assert still_stated((stated, gone, fact), summary) == (stated, fact)


def test_a_flagged_sentence_quoted_clipped_is_flagged_at_the_end_of_its_line() -> None:
    old = ("Whoever carries the pager this week is Ines Duarte, our incident commander, and she wants the "
           "runbook links in every alert.")
    ledger = Ledger(items=(LedgerItem("person", old, 3, 3, anchors=("incident commander",), doubt=9),))
    summary = f"## Objective\n- Latest request: {old[:70]}... (seq 3)\n## Progress\n- None."
    text, n = mark_superseded(summary, ledger)
    assert n == 1 and f"{old[:70]}... (seq 3) (possibly superseded at seq 9)\n" in text


def _msg(seq: int, text: str) -> dict:
    return {"seq": seq, "role": "user", "content": text, "tool_calls": [], "steering": False}


def test_a_checkpoint_record_keeps_a_replaced_value_only_while_its_summary_states_it() -> None:
    from context_compaction.application.compacting.ledgers import verify_summary

    def count(text: str) -> int:
        return max(1, len(text) // 4)

    covered = [_msg(1, "The nightly import window is 45 minutes."),
               _msg(2, "ok update: the nightly import window is 70 minutes now.")]
    first = verify_summary("## Progress\n- The nightly import window is 45 minutes. (seq 1)", previous=None,
                           covered=covered, last_seq=2, budget_tokens=500, count=count)
    assert [i["value"] for i in first.record["superseded"]] == ["The nightly import window is 45 minutes."]
    # (the next summary no longer states it: reported where it left, then carried no more)
    again = verify_summary("## Progress\nNone.", previous=first.record, covered=[_msg(3, "Thanks.")],
                           last_seq=3, budget_tokens=500, count=count, previous_summary=first.text)
    assert [d["value"] for d in again.record["report"]["dropped_items"]] == [
        "The nightly import window is 45 minutes."]
    assert again.record["superseded"] == []
    later = verify_summary("## Progress\nNone.", previous=again.record, covered=[_msg(4, "Fine.")],
                           last_seq=4, budget_tokens=500, count=count, previous_summary=again.text)
    assert later.record["report"]["dropped_items"] == [] and "superseded_items" not in later.record["report"]


def test_a_version_of_the_same_package_in_other_words_flags_the_earlier() -> None:
    # (no anchor in common: the package is the subject, one word, wherever it stands)
    old = "The resolver output has orjson landing at 3.10.7."
    ledger = merged(("assistant", old), ("assistant", "Dropping orjson to 3.9.15 in the pin file for the arm images."))
    assert marked(ledger, old)


def test_a_name_in_a_sentence_said_partly_in_a_caseless_script_is_its_value() -> None:
    old = "logging library 最后定了 Loguru，大家都同意。"
    ledger = merged(("assistant", old), ("assistant", "The logging library is Structlog, it writes our JSON."))
    assert marked(ledger, old) and not any(i.value == old for i in ledger.superseded)  # (flagged, never hidden)


def test_one_sentence_shape_about_two_packages_flags_neither() -> None:
    # (the shared phrase is the template's, "release branch"; the packages differ)
    first = "Held at orjson 3.10.7 until the release branch is cut."
    ledger = merged(("assistant", first), ("assistant", "Held at ujson 5.10.0 until the release branch is cut."))
    assert untouched(ledger, first)
