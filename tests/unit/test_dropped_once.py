"""Each loss listed once, by the compaction where it leaves, for every kind (ADR 0107).

Before: a typed item that did not fit was in ``dropped_items`` of every later checkpoint
while the ledger carried it (ADR 0099 stopped this for remarks only)."""

from __future__ import annotations

from typing import Any

from context_compaction.application.compacting.ledgers import VerifiedSummary, verify_summary
from context_compaction.application.turn.usage import _before, _coverage
from backends import MakeHarness
from helpers import ok

PATH = "src/billing/invoice_rules.py"
NONE = "## Progress\nNone."


def words(text: str) -> int:
    return len(text.split())


def msg(seq: int, text: str, role: str = "assistant") -> dict[str, Any]:
    return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}


def compact(previous: VerifiedSummary | None, seq: int, text: str, *, summary: str = NONE,
            budget: int = 0) -> VerifiedSummary:
    return verify_summary(summary, previous=previous.record if previous else None, covered=[msg(seq, text)],
                          last_seq=seq, budget_tokens=budget, count=words,
                          previous_summary=previous.text if previous else None)


def listed(v: VerifiedSummary) -> list[str]:
    return [i.value for i in v.report.dropped_items]


def counts_hold(v: VerifiedSummary) -> None:
    r = v.record["report"]
    assert r["dropped"] == len(r["dropped_items"]) + r["dropped_before"]
    assert r["items_total"] == r["in_summary"] + r["restored"] + r["dropped"]


def test_a_typed_item_that_does_not_fit_is_listed_by_the_compaction_where_it_leaves_only() -> None:
    first = compact(None, 1, f"The rules are in {PATH}.")
    assert listed(first) == [PATH] and first.report.dropped == 1
    second = compact(first, 2, "Done.")
    third = compact(second, 3, "Done.")
    for later in (second, third):
        assert PATH not in listed(later)
        # (still carried and still dropped: counted, not listed again)
        assert PATH in [i["value"] for i in later.record["items"]]
        assert later.report.dropped == 1 and later.record["report"]["dropped_before"] == 1
        counts_hold(later)
    counts_hold(first)


def test_an_item_written_back_or_said_again_that_leaves_again_is_listed_again() -> None:
    first = compact(None, 1, f"The rules are in {PATH}.")
    restored = compact(first, 2, "Done.", budget=100)
    assert restored.report.restored == 1 and listed(restored) == [] and restored.report.dropped == 0
    gone = compact(restored, 3, "Done.")
    assert listed(gone) == [PATH] and gone.record["report"]["dropped_before"] == 0
    # (said again in the covered range: in the context again until this compaction)
    again = compact(gone, 4, f"Edited {PATH}.")
    assert listed(again) == [PATH]
    quiet = compact(again, 5, "Done.")
    assert listed(quiet) == [] and quiet.report.dropped == 1
    # (stated by a summary, then left out by the next one)
    stated = compact(quiet, 6, "Done.", summary=f"## Progress\nRules in {PATH}.")
    assert stated.report.in_summary == 1 and stated.report.dropped == 0
    assert listed(compact(stated, 7, "Done.")) == [PATH]
    for v in (first, restored, gone, again, quiet, stated):
        counts_hold(v)


def test_a_checkpoint_written_before_lists_nothing_again_and_reads_as_before() -> None:
    first = compact(None, 1, f"The rules are in {PATH}.")
    # (a record as written before ADR 0107: no dropped_before, no unstated positions, and
    # its report lists every item it leaves unstated)
    report = {k: v for k, v in first.record["report"].items() if k != "dropped_before"}
    record = {k: v for k, v in first.record.items() if k not in ("report", "unstated")}
    old = VerifiedSummary(first.text, first.ledger, first.report, 0, {**record, "report": report})
    assert _coverage(report) == {"items_total": 1, "in_summary": 0, "restored": 0, "dropped": 1,
                                 "dropped_before": 0}
    assert _before(_coverage(report) or {}) == ""
    after = compact(old, 2, "Done.")
    assert listed(after) == [] and after.record["report"]["dropped_before"] == 1
    assert _before(_coverage(after.record["report"]) or {}) == " (1 of them listed by an earlier checkpoint)"
    counts_hold(after)


def test_a_value_the_kept_tail_replaced_is_listed_when_it_leaves() -> None:
    # The first summary states neither the old value nor its mark: the old value leaves the
    # context with the first compaction, which lists it (issue 44 review "P3": before, the
    # one that covered the change did, a compaction late).
    old = {"APP_PORT=8080", "Set APP_PORT=8080 in the env file."}
    first = verify_summary(NONE, previous=None, covered=[msg(1, "Set APP_PORT=8080 in the env file.")], last_seq=1,
                           budget_tokens=0, count=words, retained=[msg(2, "Now APP_PORT=9090 in the env file.")])
    assert old <= set(listed(first))
    counts_hold(first)
    later = compact(first, 2, "Now APP_PORT=9090 in the env file.")
    assert not old & set(listed(later)) and later.record["report"]["dropped_before"] >= len(old)
    counts_hold(later)


def test_a_session_lists_each_typed_loss_once_and_every_count_holds(make_harness: MakeHarness) -> None:
    h = make_harness("w", summarizer="extractive", models={"gpt-4o": {"token_limit": 1_000}})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for n in range(24):  # (each path said once: a second listing would be a repeat)
        for message in ({"role": "user", "content": f"Look at the parser module number {n} today please."},
                        {"role": "assistant", "content": f"Edited src/parser/stage_{n}/rules_{n}.py and its test."}):
            ok(h.do({"type": "append_messages", "session_id": "s", "messages": [message]}))
            h.do({"type": "prepare_turn", "session_id": "s"})
    checkpoints = ok(h.do({"type": "list_checkpoints", "session_id": "s"}))["checkpoints"]
    reports = [cp["ledger"] for cp in checkpoints if cp.get("ledger")]
    assert len(reports) >= 3
    paths = [d["value"] for r in reports for d in r["dropped_items"] if d["kind"] == "path"]
    assert paths and len(paths) == len(set(paths))
    assert any(r["dropped_before"] for r in reports)
    for r in reports:
        assert r["dropped"] == len(r["dropped_items"]) + r["dropped_before"]
        assert r["items_total"] == r["in_summary"] + r["restored"] + r["dropped"]
    # (the inspector says what left where; a record without dropped_before still renders)
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from context_compaction.infrastructure.inspector import mount

    app = FastAPI()
    mount(app, h.bus, None)
    web = TestClient(app)
    assert "left here)" in web.get("/ui/session?id=s").text
    later = next(cp for cp in checkpoints if (cp.get("ledger") or {}).get("dropped_before"))
    page = web.get(f"/ui/checkpoint?id=s&cp={later['checkpoint_id']}").text
    assert f"{len(later['ledger']['dropped_items'])} left in this compaction, " \
           f"{later['ledger']['dropped_before']} listed by an earlier checkpoint" in page
    h.close()
