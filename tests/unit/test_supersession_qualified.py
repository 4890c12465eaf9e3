"""Review of ADR 0110 (amended): two statements whose subjects differ by a qualifier (an
environment, an app, a file, another main clause) are two subjects, whichever rule
matched them, and a value said again is no change of it. A current value replaced is a
silent loss (it is in ``superseded_items``, never in ``dropped_items``).

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from context_compaction.domain.ledger import Ledger, LedgerItem
from context_compaction.domain.marks import mark_superseded
from ledger_builders import merged


def current(ledger: Ledger, value: str) -> bool:
    """``value`` is carried as current: an item, not replaced, not flagged."""
    return any(i.value == value and i.doubt is None for i in ledger.items) and not any(
        i.value == value for i in ledger.superseded)


def replaced(ledger: Ledger, value: str) -> bool:
    return any(i.value == value for i in ledger.superseded)


def test_two_environments_are_two_subjects() -> None:
    old = "The canary cluster's session key expires every 12 hours."
    new = "The primary cluster's session key expires every 48 hours."
    ledger = merged(old, new)
    assert current(ledger, old) and current(ledger, new)


def test_two_environments_of_one_setting_are_two_subjects() -> None:
    old = "The staging queue retention period is 7 days."
    new = "The production queue retention period is 30 days."
    ledger = merged(old, new)
    assert current(ledger, old) and current(ledger, new)


def test_two_apps_of_one_limit_are_two_subjects() -> None:
    old = "The request body limit for the mobile client is 300 KB."
    new = "The request body limit for the desktop client is 2 MB."
    ledger = merged(old, new)
    assert current(ledger, old) and current(ledger, new)


def test_the_same_environment_said_again_still_replaces() -> None:
    old = "The staging queue retention period is 7 days."
    new = "The staging queue retention period is 14 days."
    ledger = merged(old, new)
    assert replaced(ledger, old) and current(ledger, new)


def test_one_setting_in_two_files_is_two_subjects() -> None:
    old = "Set POOL_SIZE to 20 in deploy/eu.yaml."
    new = "Set POOL_SIZE to 5 in deploy/us.yaml."
    ledger = merged(old, new)
    assert current(ledger, old) and current(ledger, new)


def test_one_setting_in_one_file_changed_still_replaces() -> None:
    old = "Set POOL_SIZE to 20 in deploy/eu.yaml."
    new = "Set POOL_SIZE to 40 in deploy/eu.yaml."
    ledger = merged(old, new)
    assert replaced(ledger, old) and current(ledger, new)


def test_a_measurement_given_as_the_reason_of_another_decision_replaces_nothing() -> None:
    old = "We shard the index because the query p95 is 900 ms."
    new = "We prefetch the thumbnails because the query p95 is 60 ms for cached pages."
    ledger = merged(old, new)
    assert current(ledger, old) and current(ledger, new)


def test_a_sentence_said_again_with_a_tag_before_it_is_no_change() -> None:
    old = "Step 2 of 4 done: the schema migration."
    ledger = merged(old, f"[log] {old}")
    assert not ledger.superseded and not any(i.doubt is not None for i in ledger.items)
    assert any(i.value == f"[log] {old}" for i in ledger.items)  # (one kept: the newest)
    assert not any(i.value == old for i in ledger.items)


def test_a_role_said_again_with_a_tag_before_it_is_no_change() -> None:
    old = "Mei Lin owns the payments service going forward."
    ledger = merged(old, f"[ref:12] {old}")
    assert not ledger.superseded and not any(i.doubt is not None for i in ledger.items)


def test_a_replaced_value_quoted_inside_a_current_one_is_not_marked_there() -> None:
    old = "Step 2 of 4 done: the schema migration."
    new = f"[log] {old} Step 3 of 4 next."
    ledger = Ledger(items=(LedgerItem("task", new, 9, 9, anchors=("step 3 of 4",)),),
                    superseded=(LedgerItem("task", old, 3, 3, key="seq 9", anchors=("step 2 of 4",)),))
    summary = f"## Objective\n- {old} (seq 3)\n\n## Fact Checklist\n- task: {new} (seq 9)"
    text, n = mark_superseded(summary, ledger)
    assert n == 1 and f"- task: {new} (seq 9)" in text


def test_a_value_said_again_behind_a_label_is_no_change() -> None:
    old = "The on-call lead is Mei Lin."
    ledger = merged(old, "Reminder: the on-call lead is Mei Lin.")
    assert not ledger.superseded and not any(i.doubt is not None for i in ledger.items)


def test_a_value_said_again_in_other_words_marks_nothing() -> None:
    old = "The on-call lead is Mei Lin."
    new = "Mei Lin stays the on-call lead for the quarter."
    ledger = merged(old, new)
    assert current(ledger, old) and current(ledger, new)


def test_a_value_said_again_as_no_longer_so_still_replaces() -> None:
    old = "The on-call lead is Mei Lin."
    new = "The on-call lead is no longer Mei Lin."
    ledger = merged(old, new)
    assert not current(ledger, old)


def test_a_possessive_qualifier_makes_two_subjects() -> None:
    for old, new in [("Canary's session key expires every 12 hours.", "Primary's session key expires every 48 hours.")]:
        ledger = merged(old, new)
        assert current(ledger, old) and current(ledger, new), old


def test_a_scope_opening_or_closing_the_sentence_makes_two_subjects() -> None:
    for old, new in [("For staging, the API key rotates every 30 days.", "For production, the API key rotates every 90 days."),
                     ("Set POOL_SIZE to 20 for prod.", "Set POOL_SIZE to 5 for staging.")]:
        ledger = merged(old, new)
        assert current(ledger, old) and current(ledger, new), old
    ledger = merged("Set POOL_SIZE to 20 for prod.", "Set POOL_SIZE to 40 for prod.")
    assert replaced(ledger, "Set POOL_SIZE to 20 for prod.")


def test_a_verb_opening_the_sentence_qualifies_nothing() -> None:
    ledger = merged("Pin pydantic==2.7.4 for now.", "Bumped pydantic to 2.8.2 in the lockfile.")
    assert not current(ledger, "Pin pydantic==2.7.4 for now.")


def test_one_place_changed_still_replaces() -> None:
    old = "Canary's session key expires every 12 hours."
    new = "Canary's session key now expires every 6 hours."
    ledger = merged(old, new)
    assert replaced(ledger, old) and current(ledger, new)


def test_a_sentence_quoted_whole_in_a_later_one_is_no_change() -> None:
    old = "Mei Lin owns the payments service going forward."
    for new in (f"> {old}", f"(from the standup) {old}", f"Status: {old[:-1]}, per the notes."):
        ledger = merged(old, new)
        assert not ledger.superseded and [i.value for i in ledger.items] == [new], new


def test_a_sentence_quoted_whole_as_no_longer_so_still_replaces() -> None:
    old = "Mei Lin owns the payments service going forward."
    ledger = merged(old, f"It is no longer the case that {old[0].lower()}{old[1:]}")
    assert not current(ledger, old)
