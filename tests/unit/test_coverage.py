"""Every loss reported with no cue word (ADR 0109): a sentence of people's prose with a
value that leaves the context and that the new context no longer states is listed once
in ``dropped_items`` (kind ``unstated``), whatever the summarizer wrote.

The sentences here are this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from typing import Any

from context_compaction.application.compacting.ledgers import VerifiedSummary, verify_summary
from context_compaction.domain.coverage import UNSTATED, Context, said, said_in, values

NONE = "## Progress\nNone."
#: An assistant's choice said with no cue word: the checklist reads no item in it.
CHOICE = "I split the parser into three helpers. Hazelcast for the cache layer; it retries out of the box."
BUCKET = "The reconciliation report lives in s3://finance-reports/recon and rotates weekly."


def words(text: str) -> int:
    return len(text.split())


def msg(seq: int, text: str, role: str = "assistant") -> dict[str, Any]:
    return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}


def compact(previous: VerifiedSummary | None, *covered: dict[str, Any], summary: str = NONE,
            retained: tuple[dict[str, Any], ...] = ()) -> VerifiedSummary:
    return verify_summary(summary, previous=previous.record if previous else None, covered=list(covered),
                          last_seq=covered[-1]["seq"], budget_tokens=0, count=words, retained=retained,
                          previous_summary=previous.text if previous else None)


def unstated(v: VerifiedSummary) -> list[dict[str, Any]]:
    return [d for d in v.record["report"]["dropped_items"] if d["kind"] == UNSTATED]


def counts_hold(v: VerifiedSummary) -> None:
    r = v.record["report"]
    assert r["dropped"] == len(r["dropped_items"]) + r["dropped_before"]
    assert r["items_total"] == r["in_summary"] + r["restored"] + r["dropped"]


def test_values_are_read_without_cue_words() -> None:
    assert values("Hazelcast for the cache layer; it retries out of the box.") == ["hazelcast"]
    assert values("We can spend up to $1,200 on it by the 21st of July.") == ["1200", "21st of july"]  # (digit groups joined, ADR 0114)
    assert values("Pin httpx to 0.27.2, the vendor call is Thursday 4pm with Acme Corp.") == [
        "0.27.2", "thursday", "4", "acme corp"]
    assert values("Log retention is thirty days; ask ops@example.com about MAX_WORKERS.") == [
        "thirty days", "ops@example.com", "max_workers"]
    # (a word alone opening the sentence is a name only when nothing else is a value, and
    # never an English opener: "Traced", "Budget cap is $500" has $500)
    assert values("Traced it to the export.") == []
    assert values("Budget cap is $500 total.") == ["500"]
    assert values("The suite ran twice without a failure.") == []


def test_a_line_states_a_sentence_with_its_values_and_its_words_not_a_number_alone() -> None:
    sentence = said("The staging cluster runs 7 replicas since the outage.", 3)
    assert sentence is not None
    assert Context(["## Checklist\n- staging cluster: 7 replicas (seq 3)"]).states(sentence)
    assert not Context(["## Progress\n- Retried 7 times (seq 9)"]).states(sentence)
    # (a sentence a summary marks superseded is no longer stated as current)
    assert not Context(["- (superseded at seq 9) The staging cluster runs 7 replicas since the outage."]).states(
        sentence)


def test_tool_results_and_code_are_not_statements() -> None:
    assert said_in([(1, "tool", "collected 214 items in 3.2s")]) == []
    code = "Here is the fix:\n```\nMAX_RETRIES = 7\nTIMEOUT_S = 30\n```\n    return total(items, 12)"
    assert said_in([(2, "assistant", code)]) == []
    assert [s.text for s in said_in([(3, "user", "LOG_LEVEL=debug on staging until Friday.")])] == [
        "LOG_LEVEL=debug on staging until Friday."]


def test_an_uncued_choice_that_leaves_is_listed_once_with_its_sentence_and_seq() -> None:
    first = compact(None, msg(1, CHOICE))
    [item] = unstated(first)
    # (quoted with the sentence before and after it in its message: its subject may be there)
    assert item == {"kind": UNSTATED, "value": CHOICE, "seq": 1}
    counts_hold(first)
    later = compact(first, msg(2, "Done."))
    assert unstated(later) == [] and later.record["report"]["dropped_before"] == 0
    counts_hold(later)


def test_what_the_summary_or_the_kept_tail_states_is_not_listed() -> None:
    kept = compact(None, msg(1, BUCKET), summary=f"## Progress\n- {BUCKET} (seq 1)")
    assert unstated(kept) == []
    # (clipped or said in other words, with its value and its subject: stated)
    other = compact(None, msg(1, CHOICE), summary="## Decisions\n- Cache layer: Hazelcast (seq 1)")
    assert unstated(other) == []
    tail = compact(None, msg(1, CHOICE), retained=(msg(2, "Hazelcast stays the cache layer."),))
    assert unstated(tail) == []


def test_a_line_of_the_previous_summary_is_listed_when_a_later_summary_drops_it() -> None:
    first = compact(None, msg(4, BUCKET), summary=f"## Progress\n- {BUCKET} (seq 4)")
    assert unstated(first) == []
    second = compact(first, msg(9, "Done."), summary=NONE)
    assert [(d["value"], d["seq"]) for d in unstated(second)] == [(BUCKET, 4)]
    counts_hold(second)
    # (left: the next compaction has nothing of it to list again)
    assert unstated(compact(second, msg(10, "Done."))) == []


def test_a_fragment_is_listed_with_the_sentence_that_names_its_subject() -> None:
    text = "Could you check the export? Release manager for this cycle. Tomasz Kowal."
    v = compact(None, msg(1, text, role="user"))
    values_listed = [d["value"] for d in v.record["report"]["dropped_items"]]
    assert any("Release manager" in x and "Tomasz Kowal" in x for x in values_listed)


def test_an_item_the_ledger_lists_is_not_listed_twice() -> None:
    v = compact(None, msg(1, "Set MAX_WORKERS=12 in the env file.", role="user"))
    assert [d["kind"] for d in v.record["report"]["dropped_items"]].count(UNSTATED) == 0
    assert any(d["value"] == "MAX_WORKERS=12" for d in v.record["report"]["dropped_items"])


def test_a_degraded_trim_lists_what_it_dropped() -> None:
    # (any summary text is checked: a trim note states none of the turns it drops)
    v = compact(None, msg(1, BUCKET), summary="(12 messages trimmed without a summary)")
    assert [d["value"] for d in unstated(v)] == [BUCKET]


def test_a_one_off_request_is_no_statement_a_standing_instruction_is() -> None:
    asked = said_in([(1, "user", "Could you rerun test_export_resumes in workers/export.py? Please bump it to 3 retries.")])
    assert asked == []
    standing = said_in([(2, "user", "Keep the export under 40 seconds per batch from now on.")])
    assert [s.text for s in standing] == ["Keep the export under 40 seconds per batch from now on."]


def test_an_acknowledgement_is_no_value() -> None:
    # (the review of ADR 0109: "Noted." read as a capitalised name, and every assistant
    # turn opening with it was listed as a loss)
    assert values("Noted.") == [] and values("Understood.") == []
    assert values("Warning, for now.") == ["warning"]  # (a word said alone as an answer still is)
