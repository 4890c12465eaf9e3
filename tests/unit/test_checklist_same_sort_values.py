"""ADR 0106: how people state and change facts without the words the cues know — a fact
given as the ground of something else, a later value of the same sort in any wording or
language, a bullet after a stop, a question said to be unanswered, a mixed-case product.

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set); each rule
has a routine or other-subject sentence that must not match."""

from __future__ import annotations

from context_compaction.domain.checklist import anchors, checklist_items
from context_compaction.domain.joining import sentences
from ledger_builders import merged


def test_a_fact_given_as_a_reason_is_about_its_own_subject() -> None:
    said = "I trimmed the importer, which, given that the upload buffer is 64 MB right now, keeps memory flat."
    assert "upload buffer" in anchors(said, "amount")
    ledger = merged(said, "Correcting my figure: the upload buffer is 32 MB, I misread it.")
    assert [i.value for i in ledger.superseded] == [said]


def test_a_reason_after_the_subject_stays_out_of_it() -> None:
    # (the value's clause names the subject first: the reason is still no part of it)
    assert anchors("The export batch is 500 rows, because the API pages at 500.", "amount") == {"export batch"}


def test_a_later_value_of_the_same_sort_flags_the_older_whatever_the_wording() -> None:
    ledger = merged("Rota note: Mara Quist holds the on-call lead role.", "Le nouveau on-call lead, c'est Jonas Berg.")
    old = next(i for i in ledger.items if "Mara Quist" in i.value)
    assert old.doubt is not None and not ledger.superseded  # (flagged, never hidden on this evidence)
    ledger = merged("Agreed in the sync: cache size limit stays under 512 MB.", "AI (ops): cache size limit reset to 256 MB.")
    assert next(i for i in ledger.items if "512 MB" in i.value).doubt is not None and not ledger.superseded


def test_a_value_of_another_sort_flags_nothing() -> None:
    ledger = merged("The cache size limit stays under 512 MB, agreed in the sync.",
                    "The cache size limit review is on Friday.")
    assert all(i.doubt is None for i in ledger.items)


def test_a_bullet_after_a_stop_opens_a_sentence() -> None:
    text = "Could you check why test_login fails in api/app.py? - House rule: logs written as JSON."
    assert sentences(text) == ["Could you check why test_login fails in api/app.py?", "House rule: logs written as JSON."]
    assert sentences("Versions 1.2 - 1.4 are fine.") == ["Versions 1.2 - 1.4 are fine."]


def test_a_question_said_to_be_unanswered_is_kept_with_its_state() -> None:
    (kind, value, a), = checklist_items("q: do exports keep archived rows?? nobody's answered", user=True)
    assert value == "q: do exports keep archived rows?? nobody's answered" and "archived rows" in a
    # (a reply that is talk stays apart)
    assert len(sentences("Do exports keep archived rows? Nobody panic, I'll look.")) == 2


def test_a_mixed_case_product_is_a_named_value() -> None:
    said = "Optamos por GraphQL para o gateway público, já que the clients asked for it."
    assert [k for k, _, _ in checklist_items(said)] == ["statement"]


def test_a_version_named_with_a_word_between_flags_the_older() -> None:
    ledger = merged("AI: keep numpy on 1.26.4 until the spike is through.", "Renovate's PR moving numpy to 2.0.1 is merged.",
                    role="assistant")
    assert next(i for i in ledger.items if i.kind == "versioned" and "1.26.4" in i.value).doubt is not None


def test_a_new_name_after_an_arrow_or_in_another_language_flags_the_old_choice() -> None:
    # (the name after the arrow is the value, not part of the subject)
    assert anchors("DECISION revised: event bus -> Pulsar (cheaper to run)", "decision") == {"event bus"}
    ledger = merged("Status: the ETL work is unblocked, I've gone with Dagster since it is small.",
                    "I walked back the earlier pick: Airflow is our ETL from here on.", role="assistant")
    assert next(i for i in ledger.items if "Dagster" in i.value).doubt is not None


def test_the_same_name_said_again_flags_nothing() -> None:
    ledger = merged("Status: the ETL work is unblocked, I've gone with Dagster since it is small.",
                    "I walked back the earlier worry: Dagster is our ETL from here on.", role="assistant")
    assert all(i.doubt is None for i in ledger.items)


def test_a_setting_given_a_word_value_replaces_the_old_one() -> None:
    ledger = merged("- AI (infra): set QUEUE_MODE to lazy in the Helm chart", "Scratch the earlier QUEUE_MODE, make it eager.")
    assert [i.value for i in ledger.superseded if i.kind == "setting_text"] == [
        "AI (infra): set QUEUE_MODE to lazy in the Helm chart"]


def test_a_version_said_in_a_caseless_script_flags_the_other_version() -> None:
    ledger = merged("I silenced the warning, which shows because we're on httpx 0.26.0 and it deprecates a keyword.",
                    "httpx を 0.27.2 に切り替えました。", role="assistant")
    assert next(i for i in ledger.items if i.kind == "versioned" and "0.26.0" in i.value).doubt is not None
    ledger = merged("httpx を 0.27.2 に切り替えました。", "Lockfile regenerated; httpx resolves to 0.26.0.", role="assistant")
    assert next(i for i in ledger.items if "0.27.2" in i.value and "httpx" in i.value).doubt is not None
    ledger = merged("httpx を 0.27.2 に切り替えました。", "Lockfile regenerated; anyio resolves to 4.4.0.", role="assistant")
    assert all(i.doubt is None for i in ledger.items)


def test_a_word_of_talk_in_common_flags_no_other_subject() -> None:
    # (one acronym of a request in four anchors: two people, two roles)
    ledger = merged("Can you look at why test_totals fails in notifications/email.py? Please cc Ana Lopes on every PR "
                    "touching this; Ana Lopes is the owner of billing.",
                    "Run the suite again, test_pdf_breaks was flaky yesterday. Please cc Joe Park on every PR touching "
                    "this; Joe Park is the release manager.")
    assert all(i.doubt is None for i in ledger.items)


def test_a_size_and_a_duration_are_values_of_two_sorts() -> None:
    ledger = merged("Der max payload liegt aktuell bei etwa eight megabytes.",
                    "Der nightly batch runtime liegt aktuell bei etwa two hours.")
    assert all(i.doubt is None for i in ledger.items)


def test_how_a_choice_is_reported_is_no_subject() -> None:
    # ("I've gone with", like "we've", is talk: two choices reported alike are two subjects)
    ledger = merged("Status: the ETL work is unblocked, I've gone with Dagster since it is small.",
                    "Status: the CI runner work is unblocked, I've gone with Buildkite since it is cheap.", role="assistant")
    assert all(i.doubt is None for i in ledger.items) and not ledger.superseded
