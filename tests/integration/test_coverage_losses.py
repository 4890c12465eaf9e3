"""A planted fact no checklist kind reads, said once and compacted away, is listed in a
checkpoint's ``dropped_items`` by the compaction where it leaves (ADR 0109), once, and
``recall_history`` finds it by the words of that entry. On SQLite and PostgreSQL: the
report is stored with the checkpoint's ledger."""

from __future__ import annotations

import json

from context_compaction import run_recall
from context_compaction.domain.coverage import UNSTATED
from backends import MakeHarness
from helpers import ok

SID = "s"
#: Said by the assistant with no cue word: the checklist reads no item in it (no URL,
#: path, version, amount or decision word to its extractors).
FACT = "The reconciliation report lives in s3://finance-reports/recon and rotates weekly."


def test_an_unextracted_fact_that_leaves_is_listed_once_and_recall_finds_it(make_harness: MakeHarness) -> None:
    h = make_harness("w", summarizer="extractive", models={"gpt-4o": {"token_limit": 2_000}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    turns = [("Where do the finance reports end up?", FACT)] + [
        (f"Look at the parser module number {n} today please.", f"Parser stage {n} is tidied up and its test is green.")
        for n in range(30)]
    for user, answer in turns:
        for message in ({"role": "user", "content": user}, {"role": "assistant", "content": answer}):
            ok(h.do({"type": "append_messages", "session_id": SID, "messages": [message]}))
            h.do({"type": "prepare_turn", "session_id": SID})
    checkpoints = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    listed = [d for cp in checkpoints for d in (cp.get("ledger") or {}).get("dropped_items") or ()
              if "s3://finance-reports/recon" in d["value"]]
    assert len(listed) == 1, listed
    [entry] = listed
    assert entry["kind"] == UNSTATED and entry["value"] == FACT
    for cp in checkpoints:
        report = cp.get("ledger") or {}
        if report:
            assert report["dropped"] == len(report["dropped_items"]) + report["dropped_before"]
    # (the entry names enough to find the message again, by its words and by its seq)
    hits = json.loads(run_recall(h.bus, SID, {"query": "reconciliation report finance-reports"}))["hits"]
    assert entry["seq"] in [hit["seq"] for hit in hits]
    [message] = json.loads(run_recall(h.bus, SID, {"from_seq": entry["seq"], "to_seq": entry["seq"]}))["messages"]
    assert message["content"] == FACT


def _drive(h, turns: int = 30) -> list[dict]:  # type: ignore[no-untyped-def]
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    pairs = [("Where do the finance reports end up?", FACT)] + [
        (f"Look at the parser module number {n} today please.", f"Parser stage {n} is tidied up and its test is green.")
        for n in range(turns)]
    for user, answer in pairs:
        for message in ({"role": "user", "content": user}, {"role": "assistant", "content": answer}):
            ok(h.do({"type": "append_messages", "session_id": SID, "messages": [message]}))
            h.do({"type": "prepare_turn", "session_id": SID})
    return ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]


def test_any_summarizer_is_checked_a_dropped_fact_listed_a_restated_one_not(make_harness: MakeHarness) -> None:
    from helpers import RecordingSummarizer

    # (a plugged-in summarizer, as an LLM would be: its result is checked, not its kind)
    forgets = make_harness("forgets", adapters={"summarizer": RecordingSummarizer(text="## Progress\n- Parser work.")},
                           models={"gpt-4o": {"token_limit": 2_000}})
    listed = [d for cp in _drive(forgets) for d in (cp.get("ledger") or {}).get("dropped_items") or ()
              if d["kind"] == UNSTATED and "s3://finance-reports/recon" in d["value"]]
    assert [d["value"] for d in listed] == [FACT]
    restates = make_harness("restates", adapters={"summarizer": RecordingSummarizer(
        text="## Progress\n- Reconciliation report: s3://finance-reports/recon, rotated weekly.")},
        models={"gpt-4o": {"token_limit": 2_000}})
    kept = [d for cp in _drive(restates) for d in (cp.get("ledger") or {}).get("dropped_items") or ()
            if "s3://finance-reports/recon" in d["value"]]
    assert kept == []


def test_resummarize_reports_what_the_commit_reported_for_the_same_summary(make_harness: MakeHarness) -> None:
    # Before: resummarize checked without the kept tail, and listed sentences the tail
    # still stated ("Fixed on March N."): 83 entries where the commit listed 55.
    h = make_harness("w", summarizer="extractive",
                     context_compaction={"keep_recent_tokens": 200, "reserve_tokens": 2_000})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    pad = " I read the code around it and nothing else has to change today." * 4
    messages = []
    for n in range(60):
        messages += [{"role": "user", "content": f"Why does case_{n} fail on CI? It fails 3 of 10 runs since a{n}f.{pad}"},
                     {"role": "assistant", "content": f"The failure is in src/app/mod{n}.py line {n * 3}: the fixture "
                                                      f"leaks. Fixed on March {n % 28 + 1}.{pad}"}]
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": messages}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        {"role": "user", "content": "next"}, {"role": "assistant", "content": "ok"}]}))
    committed = ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": 60}))
    again = ok(h.do({"type": "resummarize", "session_id": SID, "checkpoint_id": committed["checkpoint_id"]}))
    assert again["summary"] == again["committed_summary"]
    assert sorted((d["kind"], d["seq"]) for d in again["ledger"]["dropped_items"]) == \
        sorted((d["kind"], d["seq"]) for d in committed["ledger"]["dropped_items"])
