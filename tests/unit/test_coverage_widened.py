"""The coverage check widened by structure, not by cue words (ADR 0116): a pin or an
assignment said in a person's own message is a statement, a user's sentence with no value
is looked for by its words, and a summary's lines that stand for one message are quoted
together when they leave, so that a loss's entry carries its subject.

The sentences here are this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from typing import Any

from context_compaction.application.compacting.ledgers import VerifiedSummary, verify_summary
from context_compaction.domain.coverage import UNSTATED, said_in

NONE = "## Progress\nNone."


def msg(seq: int, text: str, role: str = "user") -> dict[str, Any]:
    return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}


def compact(previous: VerifiedSummary | None, *covered: dict[str, Any], summary: str = NONE) -> VerifiedSummary:
    return verify_summary(summary, previous=previous.record if previous else None, covered=list(covered),
                          last_seq=covered[-1]["seq"], budget_tokens=0, count=lambda t: len(t.split()),
                          previous_summary=previous.text if previous else None)


def unstated(v: VerifiedSummary) -> list[str]:
    return [d["value"] for d in v.record["report"]["dropped_items"] if d["kind"] == UNSTATED]


def test_a_pin_or_an_assignment_in_a_persons_message_is_a_statement() -> None:
    pins = [
        "Hold ruamel.yaml==0.18.6 until their fix lands.",
        'Our limits: {"burst": 40, "window_s": 10}',
        "cdn_region >= eu-west-3",
    ]
    for text in pins:
        assert [s.text for s in said_in([(1, "assistant", text)])], text
    # (code stays code: a comparison in a condition or an assertion, a call, a pasted test line)
    code = ["if attempts == 4:", "assert len(rows) == 12", "total = compute(rows, 12)",
            "PASSED tests/test_queue.py::test_drain_7 [14%]"]
    for text in code:
        assert said_in([(1, "assistant", text)]) == [], text
    # (fenced blocks still are no statements)
    assert said_in([(2, "assistant", "```\nruamel.yaml==0.18.6\n```")]) == []


def test_a_pin_that_leaves_unstated_is_listed() -> None:
    v = compact(None, msg(1, 'Rate limits for the partner API: {"burst": 40, "window_s": 10}', role="assistant"))
    assert any('"burst": 40' in x for x in unstated(v))


def test_a_users_sentence_without_a_value_is_looked_for_by_its_words() -> None:
    # (the ledger reads a user's wish or remark; a question of theirs only this check does)
    asked = "Why does the nightly export keep stalling after midnight?"
    lost = compact(None, msg(1, asked))
    assert any(asked in x for x in unstated(lost))
    kept = compact(None, msg(1, asked), summary="## Open Questions\n- nightly export stalling after midnight (seq 1)")
    assert unstated(kept) == []
    # (a one-off request is no statement; the assistant's prose without a value is not checked)
    assert unstated(compact(None, msg(1, "Run the whole suite again."))) == []
    assert unstated(compact(None, msg(1, "I tidied the helpers and the tests pass.", role="assistant"))) == []


def test_summary_lines_of_one_message_leave_together() -> None:
    first = compact(None, msg(24, "x"), summary=(
        "## Progress\n- statement: Last week we weighed the options for the Queue backend. (seq 24)\n"
        "- statement: This week: moving to nats, it is already deployed. (seq 24)"))
    second = compact(first, msg(30, "Done."))
    entries = unstated(second)
    assert any("Queue backend" in x and "nats" in x for x in entries), entries


def test_a_nested_bullet_is_prose_an_indented_code_line_is_not() -> None:
    text = ("Limits for the migration:\n    - budget stays under $4,000 per month\n"
            "    - Leila Haddad signs off the cutover\n\n    return total(rows, 12)\n    window = 30")
    read = [s.text for s in said_in([(1, "user", text)])]
    assert "budget stays under $4,000 per month" in read and "Leila Haddad signs off the cutover" in read
    assert not [x for x in read if "rows" in x or "window" in x]


def test_an_answer_quoted_apart_from_its_question_is_not_stated_by_its_own_quote() -> None:
    # (the summary's lines for one message: the question and its answer; the next summary
    # keeps the answer's line only, so the answer no longer says what it answers)
    first = compact(None, msg(40, "x"), summary=(
        "## Checklist\n- question: And the escalation contact for this quarter? (seq 40)\n"
        "- statement: Oona Pellinen, per the rota. (seq 40)"))
    second = compact(first, msg(50, "Done."), summary="## Checklist\n- statement: Oona Pellinen, per the rota. (seq 40)")
    assert any("escalation contact" in x and "Oona Pellinen" in x for x in unstated(second)), unstated(second)
