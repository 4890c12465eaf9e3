"""Lossless compaction (issue 16): the verified ledger, provenance, the attempt log and
``resummarize``, through the bus on SQLite and PostgreSQL; the LLM through the fake
provider over real HTTP."""

from __future__ import annotations

import pytest

import threading

from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.summary import HEADINGS, PROMPT_VERSION
from context_compaction.infrastructure.demo.scenario import coding_session
from backends import MakeHarness
from fakeprovider import FakeProvider, Reply
from helpers import (
    FAKE_MODEL,
    Harness,
    RecordingSummarizer,
    attempt_count,
    err,
    fingerprint,
    llm_settings,
    ok,
    user,
)
from lossless_builders import SID, attempts, build, compact, llm, turn

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

EMPTY = "\n\n".join(f"## {h}\nNone." for h in HEADINGS)


# ------------------------------------------------------------------ ledger
def test_the_ledger_restores_what_the_llm_summary_dropped(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=EMPTY))  # a summary that kept none of the planted items
    h = llm(make_harness, provider)
    build(h, model=FAKE_MODEL)
    outcome = compact(h)
    assert outcome["status"] == "compacted"
    summary = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]["summary"]
    facts = summary.split("## Exact Facts")[1].split("## ")[0]
    assert "- path: src/app/settings_prod.py (seq 1)" in facts
    assert "- id: PAY-4411 (seq 1)" in facts and "- port: 8443 (seq 1)" in facts
    constraints = summary.split("## Constraints")[1].split("## ")[0]
    assert "You must never push to the release branch directly. (seq 1)" in constraints
    corrections = summary.split("## Recent User Corrections")[1]
    assert "Actually, the staging host listens on port 8443, not on port 8080. (seq 1)" in corrections
    ledger = outcome["ledger"]
    assert ledger["restored"] >= 5 and ledger["in_summary"] == 0
    # (only replaced values left: "Step 3: continue." by "Step 3 done."; ADR 0091 reports them)
    assert all("superseded_by" in d for d in ledger["dropped_items"])
    assert {d["value"] for d in ledger["dropped_items"]} <= {f"Step {n}: continue." for n in range(10)}
    assert ledger["items_total"] == ledger["in_summary"] + ledger["restored"] + ledger["dropped"]
    usage = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert usage["ledger"] == {k: ledger[k] for k in ("items_total", "in_summary", "restored", "dropped", "dropped_before")}
    assert "Ledger" in usage["text"]
    h.close()


def test_the_ledger_is_cumulative_across_checkpoints(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=EMPTY), Reply(text=EMPTY))
    h = llm(make_harness, provider)
    build(h, model=FAKE_MODEL)
    compact(h)
    for n in range(10, 20):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": turn(n)}))
    second = compact(h)
    assert second["status"] == "compacted"
    summary = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][-1]["summary"]
    # The second summary read only the new messages and an empty previous summary: the
    # ledger carried from the first checkpoint brings the items back.
    assert "src/app/settings_prod.py" in summary and "PAY-4411" in summary
    assert second["ledger"]["restored"] >= 5
    h.close()


def test_invalid_citations_are_removed_and_valid_ones_kept(make_harness: MakeHarness, provider) -> None:
    text = EMPTY.replace("## Progress\nNone.", "## Progress\n- Fixed the parser (seq 2–5).\n- Invented (seq 9999).")
    provider.queue(Reply(text=text))
    h = llm(make_harness, provider)
    build(h, model=FAKE_MODEL)
    compact(h)
    cp = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]
    assert "- Fixed the parser (seq 2–5)." in cp["summary"]
    assert "- Invented." in cp["summary"] and "9999" not in cp["summary"]
    system = provider.requests[0].body["messages"][0]["content"]
    assert "(seq A–B)" in system  # the prompt asks for citations
    h.close()


def test_the_extractive_summary_cites_its_sources(make_harness: MakeHarness) -> None:
    h = make_harness("x", summarizer="extractive", context_compaction={"keep_recent_tokens": 2000})
    build(h)
    compact(h)
    summary = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]["summary"]
    bullets = [ln for ln in summary.splitlines() if ln.startswith("- ")]
    assert bullets and all("(seq " in ln for ln in bullets), [ln for ln in bullets if "(seq " not in ln]
    h.close()


def test_a_small_budget_keeps_constraints_and_corrections_and_reports_every_dropped_fact(
    make_harness: MakeHarness,
) -> None:
    h = make_harness("d", summarizer="extractive", models={"gpt-4o": {"token_limit": 9_000}},
                     context_compaction={"keep_recent_tokens": 1500, "reserve_tokens": 2000})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    values = []
    for n in range(12):
        paths = [f"lib/mod{n}/part_{k}.py" for k in range(25)]
        values += paths
        text = ("You must never delete data/keep_me.db. " if n == 0 else "") + "Touched " + ", ".join(paths) + "."
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": turn(n, text)}))
    outcome = compact(h)
    assert outcome["status"] == "compacted"
    ledger = outcome["ledger"]
    assert ledger["dropped"] > 0 and len(ledger["dropped_items"]) == ledger["dropped"]
    assert {d["kind"] for d in ledger["dropped_items"]} == {"path"}
    assert all(set(d) == {"kind", "value", "seq"} for d in ledger["dropped_items"])
    cp = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]
    assert "You must never delete data/keep_me.db." in cp["summary"]  # the oldest, kept first
    view = "\n".join(m["content"] or "" for m in ok(h.do({"type": "get_projection", "session_id": SID}))["messages"]
                     if isinstance(m.get("content"), str))
    dropped = {d["value"] for d in ledger["dropped_items"]}
    assert all(v in view or v in dropped for v in values)  # every item accounted for
    h.close()


def test_a_checkpoint_without_a_ledger_still_loads_and_compacts(make_harness: MakeHarness) -> None:
    h = make_harness("o", summarizer="extractive", context_compaction={"keep_recent_tokens": 2000})
    build(h)
    events = h.bus.services.events
    session = events.load(SID)
    old = Checkpoint(  # as committed before issue 16: no ledger
        checkpoint_id="cp_old", generation=session.context_generation + 1, parent_checkpoint_id=None,
        summary="## Objective\nOlder summary.", first_retained_seq=17, source_max_seq=session.next_seq - 1,
        trigger_reason="manual", provider_kind="extractive", model="extractive", tokens_before=9000,
        tokens_after=4000, degraded=False, summary_source={}, created_at="2026-01-01T00:00:00Z",
    )
    session.commit_checkpoint(old)
    events.save(session)
    h.reopen()
    cps = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert cps[0]["ledger"] is None
    assert ok(h.do({"type": "get_context_usage", "session_id": SID}))["ledger"] is None
    for n in range(10, 16):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": turn(n)}))
    outcome = compact(h)
    assert outcome["status"] == "compacted" and outcome["ledger"]["items_total"] >= 0
    h.close()


# ------------------------------------------------------------ attempt log
def test_every_outcome_is_on_record_and_never_moves_the_session(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer(fail=True)
    h = make_harness("a", adapters={"summarizer": spy}, summarizer="extractive",
                     context_compaction={"keep_recent_tokens": 2000})
    build(h, turns=1)
    assert compact(h)["status"] == "nothing_to_compact"
    for n in range(1, 10):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": turn(n)}))
    before, logged = fingerprint(h.bus), attempt_count(h.bus)
    err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert fingerprint(h.bus) == before  # the session and its read model did not move
    assert attempt_count(h.bus) == logged + 1
    spy.fail = False
    outcome = compact(h)
    log = attempts(h)
    assert [a["outcome"] for a in log] == ["compacted", "summary_failed", "nothing_to_compact"]
    done, failed, nothing = log
    assert done["reason"] == "manual" and done["stage"] == "summarized" and done["error_code"] is None
    assert done["summarizer"] == "extractive" and done["model"] == "gpt-4o"
    assert done["prompt_version"] == PROMPT_VERSION and done["duration_ms"] >= 0
    assert (done["tokens_before"], done["tokens_after"]) == (outcome["tokens_before"], outcome["tokens_after"])
    assert done["ledger"] == outcome["ledger"]
    assert failed["error_code"] == "summary_failed" and failed["ledger"] is None
    assert failed["tokens_after"] == failed["tokens_before"] > 0
    assert nothing["stage"] is None and nothing["error_code"] is None and nothing["nothing_reason"]
    assert set(done) == {"attempt_id", "at", "reason", "outcome", "stage", "summarizer", "model",
                         "prompt_version", "duration_ms", "tokens_before", "tokens_after", "ledger",
                         "error_code", "summary_usage", "summary_cost_usd", "net",
                         "candidate_id", "checkpoint_id", "nothing_reason"}  # (summary_usage..candidate_id: issue 43)
    assert done["checkpoint_id"] == outcome["checkpoint_id"] and failed["checkpoint_id"] is None
    assert [a["attempt_id"] for a in attempts(h, limit=2)] == [done["attempt_id"], failed["attempt_id"]]
    assert len({a["attempt_id"] for a in log}) == 3
    h.reopen()
    assert attempts(h) == log  # durable
    err(h.do({"type": "list_compaction_attempts", "session_id": "nope"}), "session_not_found")
    h.close()


def test_a_stale_candidate_is_on_record(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer()
    spy.release = threading.Event()
    h = make_harness("st", adapters={"summarizer": spy}, summarizer="extractive",
                     context_compaction={"keep_recent_tokens": 2000})
    build(h)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(h.do({"type": "compact", "session_id": SID})))
    worker.start()
    assert spy.entered.wait(10)
    assert h.new_bus().dispatch_json({"type": "invalidate_history", "session_id": SID, "kind": "clear"})["ok"]
    spy.release.set()
    worker.join(20)
    assert result["error"]["code"] == "stale_candidate"
    (attempt,) = attempts(h)
    assert attempt["outcome"] == "stale_candidate" and attempt["error_code"] == "stale_candidate"
    h.close()


def test_auto_failures_and_a_degraded_trim_are_on_record(make_harness: MakeHarness, provider) -> None:
    h = make_harness("dg", **llm_settings(provider.base_url, token_limit=9_000),
                     context_compaction={"keep_recent_tokens": 2000})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for t in coding_session(8, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("Next.", turn_id="next")]}))
    ok(h.do({"type": "configure_session", "session_id": SID, "model": FAKE_MODEL}))
    provider.queue(Reply(status=500))
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    assert request["compaction"]["degraded"] is True
    log = attempts(h)
    assert [(a["outcome"], a["reason"]) for a in log] == [("degraded", "overflow"), ("summary_failed", "auto")]
    assert log[0]["stage"] == "degraded" and log[0]["summarizer"] == "deterministic"
    assert log[1]["summarizer"] == "llm" and log[1]["model"] == FAKE_MODEL
    h.close()


def test_a_log_that_cannot_be_written_never_fails_the_compaction(make_harness: MakeHarness, caplog) -> None:
    class Broken:
        def record(self, session_id, attempt):
            raise RuntimeError("disk on fire")

        def attempts(self, session_id, limit=None):
            return []

    h = make_harness("b", adapters={"attempts": Broken()}, summarizer="extractive",
                     context_compaction={"keep_recent_tokens": 2000})
    build(h)
    assert compact(h)["status"] == "compacted"
    assert "compaction attempt not recorded" in caplog.text
    h.close()


# ------------------------------------------------------------ resummarize
def test_resummarize_rebuilds_the_source_and_commits_nothing(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=EMPTY))
    h = llm(make_harness, provider)
    build(h, model=FAKE_MODEL)
    outcome = compact(h)
    for n in range(10, 14):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": turn(n)}))
    before, logged = fingerprint(h.bus), attempt_count(h.bus)
    first_request = provider.requests[0].body["messages"][1]["content"]
    provider.queue(Reply(text=EMPTY.replace("## Objective\nNone.", "## Objective\nA better summary.")))
    again = ok(h.do({"type": "resummarize", "session_id": SID, "checkpoint_id": outcome["checkpoint_id"]}))
    assert provider.requests[1].body["messages"][1]["content"] == first_request  # the exact source
    assert "A better summary." in again["summary"] and "src/app/settings_prod.py" in again["summary"]
    assert again["ledger"]["restored"] == outcome["ledger"]["restored"]
    assert again["tokens"] > 0 and again["committed_summary"] != again["summary"]
    local = ok(h.do({"type": "resummarize", "session_id": SID, "checkpoint_id": outcome["checkpoint_id"],
                     "summarizer": "extractive"}))
    assert local["summarizer"] == "extractive" and "src/app/settings_prod.py" in local["summary"]
    assert fingerprint(h.bus) == before and attempt_count(h.bus) == logged  # nothing written
    err(h.do({"type": "resummarize", "session_id": SID, "checkpoint_id": "cp_nope"}), "invalid_command")
    err(h.do({"type": "resummarize", "session_id": SID, "checkpoint_id": outcome["checkpoint_id"],
              "summarizer": "nope"}), "invalid_command")
    assert fingerprint(h.bus) == before
    h.close()
