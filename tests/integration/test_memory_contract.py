"""The memory backend answers as SQLite does (issue 14, ADR 0045).

A stateful test drives the same random command sequences through two buses, one on
``memory://`` and one on an SQLite file, with the same deterministic clock and ids, and
compares after every step: the command's whole answer (or error), every projected
read-model table row for row, and the event feed (every stored event, in order, with
its position). Search hits are compared without their score and order (engine-specific
by contract: comparable within one answer only).

Breakages tried (each made this fail): the memory projector keeping the pins of
invalidated messages; ``MemoryReadModel.messages`` ignoring ``limit``; an invalidation
that skips the messages of a range starting at seq 1; the memory search index (lagging,
ADR 0049) skipping invalidated messages. (A command id of another session
accepted by the projector is not seen here: the handler refuses it from the read model
first; the projector's check is the race guard, ``test_idempotency`` covers it.)
"""

from __future__ import annotations

import itertools
from collections import Counter
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from context_compaction.application.contracts.ports import SummaryResult
from context_compaction.domain.errors import SummaryFailed
from context_compaction.infrastructure.readmodel import PROJECTED_TABLES
from helpers import Harness, memory_url

SESSIONS = ("a", "b")
#: (command type, outcome) → how often, over the whole run: the run must have reached
#: the outcomes that matter (a comparison of two empty sessions proves nothing).
TALLY: Counter[tuple[str, str]] = Counter()
MUST_REACH = {
    ("append_messages", "ok"), ("append_messages", "idempotency_conflict"),
    ("compact", "compacted"), ("compact", "summary_failed"), ("compact", "nothing_to_compact"),
    ("invalidate_history", "ok"), ("pin_messages", "ok"), ("unpin_messages", "ok"),
    ("revert_checkpoint", "ok"), ("delete_session", "ok"), ("prepare_turn", "ok"),
    ("record_usage", "ok"), ("recover_overflow", "ok"), ("search_history", "hits"),
    ("recall_timeline", "hits"), ("start_session", "session_exists"),
}
WORDS = ("alpha", "beta", "gamma", "delta", "Ünïcode", "naïve", "tool-call", "日本語")


class TickClock:
    """Every ``now()`` a millisecond later: both buses see the same times."""

    def __init__(self) -> None:
        self.ticks = itertools.count()

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=next(self.ticks))


class CountingIds:
    def __init__(self) -> None:
        self.n = itertools.count(1)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self.n):06d}"


class FlakySummarizer:
    def __init__(self) -> None:
        self.fail = False
        self.calls = 0

    def summarize(self, request: Any) -> SummaryResult:
        self.calls += 1
        if self.fail:
            raise SummaryFailed("flaky summarizer failed")
        return SummaryResult(text=f"Summary {self.calls}: alpha and beta.", provider_kind="flaky", model="flaky")


def _without_durations(value: Any) -> Any:
    """Measured wall time (an attempt's ``duration_ms``) differs between any two runs."""
    if isinstance(value, dict):
        return {k: _without_durations(v) for k, v in value.items() if k != "duration_ms"}
    if isinstance(value, list):
        return [_without_durations(v) for v in value]
    return value


def _normalized(command: dict[str, Any], envelope: dict[str, Any]) -> dict[str, Any]:
    envelope = _without_durations(envelope)
    if command["type"] == "read_events" and envelope.get("ok"):
        # (``at`` is eventsourcing's own wall-clock timestamp of each event, not our clock)
        events = [{k: v for k, v in e.items() if k != "at"} for e in envelope["result"]["events"]]
        return {**envelope, "result": {**envelope["result"], "events": events}}
    if command["type"] == "search_history" and envelope.get("ok"):
        result = dict(envelope["result"])
        result["hits"] = sorted(({k: v for k, v in hit.items() if k != "score"} for hit in result["hits"]),
                                key=lambda hit: hit["seq"])
        return {**envelope, "result": result}
    return envelope


def _outcome(envelope: dict[str, Any]) -> str:
    if not envelope["ok"]:
        return str(envelope["error"]["code"])
    result = envelope["result"]
    if isinstance(result.get("status"), str):
        return str(result["status"])
    if result.get("hits") or result.get("entries"):
        return "hits"
    return "ok"


class TwinMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.summarizers = [FlakySummarizer(), FlakySummarizer()]
        self.harnesses = [
            Harness(target, adapters={"summarizer": s, "clock": TickClock(), "ids": CountingIds()},
                    summarizer="extractive", snapshot_interval=4,
                    context_compaction={"keep_recent_tokens": 40, "reserve_tokens": 16384})
            for target, s in zip((memory_url(), Path(self.tmp.name) / "twin.db"), self.summarizers)
        ]
        self.turn = 0
        self.calls = 0
        for sid in SESSIONS:  # two sessions with turns to compact from the start
            self.start(sid, "gpt-4o", None)
            for words in (["alpha", "beta"], ["gamma"], ["delta", "naïve"]):
                self.append_turn(sid, 1, words, None, True)

    def teardown(self) -> None:
        for h in self.harnesses:
            h.close()
        self.tmp.cleanup()

    def both(self, command: dict[str, Any]) -> dict[str, Any]:
        memory, sqlite = (_normalized(command, h.do(command)) for h in self.harnesses)
        assert memory == sqlite, (command, memory, sqlite)
        TALLY[(command["type"], _outcome(memory))] += 1
        return memory

    def checkpoint_ids(self, sid: str) -> list[str]:
        envelope = self.harnesses[1].do({"type": "list_checkpoints", "session_id": sid})
        return [c["checkpoint_id"] for c in envelope["result"]["checkpoints"]] if envelope["ok"] else []

    # ----------------------------------------------------------------- rules
    @rule(sid=st.sampled_from(SESSIONS), model=st.sampled_from(["gpt-4o", "gpt-4o-mini"]),
          command_id=st.sampled_from([None, "s1", "x"]))
    def start(self, sid: str, model: str, command_id: str | None) -> None:
        self.both({"type": "start_session", "session_id": sid, "model": model, "command_id": command_id})

    @rule(sid=st.sampled_from(SESSIONS), limit=st.sampled_from([None, 20_000, 64]))
    def configure(self, sid: str, limit: int | None) -> None:
        self.both({"type": "configure_session", "session_id": sid, "agent_token_limit": limit})

    @rule(sid=st.sampled_from(SESSIONS), tools=st.integers(0, 2), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=30),
          command_id=st.sampled_from([None, None, "c1", "c2", "x"]), answered=st.booleans())
    def append_turn(self, sid: str, tools: int, words: list[str], command_id: str | None, answered: bool) -> None:
        self.turn += 1
        tid = f"t{self.turn}"
        text = " ".join(words * 4)
        batch: list[dict[str, Any]] = [{"role": "user", "content": text, "turn_id": tid}]
        if tools:
            ids = [f"k{self.calls + i}" for i in range(tools)]
            self.calls += tools
            batch.append({"role": "assistant", "content": None, "turn_id": tid,
                          "tool_calls": [{"id": i, "name": "grep", "arguments": '{"q": "beta"}'} for i in ids]})
            if answered:
                batch += [{"role": "tool", "tool_call_id": i, "content": "found " + text, "turn_id": tid} for i in ids]
        if answered:
            batch.append({"role": "assistant", "content": f"answer {self.turn} {words[0]}", "turn_id": tid})
        self.both({"type": "append_messages", "session_id": sid, "messages": batch, "command_id": command_id})

    @rule(sid=st.sampled_from(SESSIONS), fail=st.sampled_from([False, False, True]))
    def compact(self, sid: str, fail: bool) -> None:
        for s in self.summarizers:
            s.fail = fail
        self.both({"type": "compact", "session_id": sid})
        self.both({"type": "recall_timeline", "session_id": sid, "query": "ALPHA"})

    @rule(sid=st.sampled_from(SESSIONS), kind=st.sampled_from(["clear", "rewind", "delete"]),
          at=st.integers(0, 40), width=st.integers(1, 4), expand=st.booleans())
    def invalidate(self, sid: str, kind: str, at: int, width: int, expand: bool) -> None:
        command: dict[str, Any] = {"type": "invalidate_history", "session_id": sid, "kind": kind}
        if kind == "rewind":
            command["to_seq"] = at
        elif kind == "delete":
            command.update(seqs=list(range(at + 1, at + 1 + width)), expand_tool_groups=expand)
        self.both(command)

    @rule(sid=st.sampled_from(SESSIONS), at=st.integers(1, 30), width=st.integers(1, 3),
          unpin=st.integers(0, 3))
    def pins(self, sid: str, at: int, width: int, unpin: int) -> None:
        seqs = list(range(at, at + width))
        self.both({"type": "pin_messages", "session_id": sid, "seqs": seqs})
        if unpin:  # some, one or none of them
            self.both({"type": "unpin_messages", "session_id": sid, "seqs": seqs[:unpin]})

    @rule(sid=st.sampled_from(SESSIONS), pick=st.integers(0, 3))
    def revert(self, sid: str, pick: int) -> None:
        ids = self.checkpoint_ids(sid) + ["cp_unknown"]
        self.both({"type": "revert_checkpoint", "session_id": sid, "checkpoint_id": ids[pick % len(ids)]})

    @rule(sid=st.sampled_from(SESSIONS), roll=st.integers(0, 3))
    def delete_session(self, sid: str, roll: int) -> None:
        if roll == 0:  # (rarely: a deleted session refuses every later command)
            self.both({"type": "delete_session", "session_id": sid})

    @rule(sid=st.sampled_from(SESSIONS), prompt_tokens=st.integers(10, 200_000))
    def turn_and_usage(self, sid: str, prompt_tokens: int) -> None:
        prepared = self.both({"type": "prepare_turn", "session_id": sid, "system_prompt": "Be brief."})
        if prepared["ok"]:
            request_id = prepared["result"]["request_id"]
            self.both({"type": "record_usage", "session_id": sid, "request_id": request_id,
                       "prompt_tokens": prompt_tokens})
            self.both({"type": "recover_overflow", "session_id": sid, "request_id": request_id,
                       "error_message": "This model's maximum context length is 8192 tokens. However, "
                                        "your messages resulted in 9000 tokens."})

    @rule(sid=st.sampled_from(SESSIONS), query=st.sampled_from(["alpha", "BETA gamma", "naive", "日本語", "tool-call", "zzz"]),
          include=st.booleans(), limit=st.sampled_from([1, 20]))
    def search(self, sid: str, query: str, include: bool, limit: int) -> None:
        command = {"type": "search_history", "session_id": sid, "query": query,
                   "include_invalidated": include, "limit": 20}
        envelope = self.both(command)
        if envelope["ok"] and limit == 1 and envelope["result"]["hits"]:
            # (the best hit is engine-specific; how many there are is not)
            assert all(len(h.do({**command, "limit": 1})["result"]["hits"]) == 1 for h in self.harnesses)

    @rule(sid=st.sampled_from(SESSIONS), include=st.booleans(), lo=st.sampled_from([None, 3]),
          hi=st.sampled_from([None, 12]), limit=st.sampled_from([None, 2]))
    def queries(self, sid: str, include: bool, lo: int | None, hi: int | None, limit: int | None) -> None:
        self.both({"type": "get_history", "session_id": sid, "include_invalidated": include,
                   "from_seq": lo, "to_seq": hi, "limit": limit})
        for kind in ("get_projection", "get_context_usage", "list_checkpoints", "list_compaction_attempts"):
            self.both({"type": kind, "session_id": sid})
        self.both({"type": "recall_timeline", "session_id": sid, "query": "alpha"})
        self.both({"type": "replay_session", "session_id": sid, "at_version": 3})
        self.both({"type": "list_sessions"})

    # ------------------------------------------------------------ invariants
    @invariant()
    def same_read_model_and_events(self) -> None:
        memory, sqlite = (h.bus.services.read_model for h in self.harnesses)
        for table in PROJECTED_TABLES:
            assert memory.table_rows(table) == sqlite.table_rows(table), table  # type: ignore[attr-defined]
        self.both({"type": "read_events", "after": 0, "limit": 1000})


def test_memory_backend_answers_as_sqlite_does() -> None:
    run_state_machine_as_test(
        TwinMachine,
        # No shrinking: a failing sequence of two twin buses takes minutes to shrink; the
        # unshrunk one names the command and both answers.
        settings=settings(max_examples=10, stateful_step_count=30, deadline=None,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          suppress_health_check=[HealthCheck.too_slow]),
    )
    assert not MUST_REACH - set(TALLY), f"never reached: {sorted(MUST_REACH - set(TALLY))}"


def test_a_named_memory_store_survives_a_restart_and_an_unnamed_one_is_private() -> None:
    url = memory_url()
    h = Harness(url, summarizer="extractive")
    h.do({"type": "start_session", "session_id": "r", "model": "gpt-4o"})
    h.do({"type": "append_messages", "session_id": "r", "messages": [{"role": "user", "content": "kept"}]})
    h.reopen()
    history = h.do({"type": "get_history", "session_id": "r"})["result"]["messages"]
    assert [m["content"] for m in history] == ["kept"]
    other = Harness("memory://", summarizer="extractive")
    assert other.do({"type": "get_history", "session_id": "r"})["error"]["code"] == "session_not_found"
    h.close()
    other.close()


@pytest.mark.parametrize("backend_url", ["memory", "sqlite"])
def test_a_stale_decision_conflicts_on_both_backends(backend_url: str, tmp_path: Path) -> None:
    """The EventStore port's contract: a save from a copy another writer moved past
    raises ConcurrencyConflict and stores nothing; the other bus's write stays."""
    from context_compaction.application.contracts.ports import ConcurrencyConflict
    from context_compaction.domain.messages import Message

    url = memory_url() if backend_url == "memory" else str(tmp_path / "c.db")
    h = Harness(url, summarizer="extractive")
    second = h.new_bus()
    h.do({"type": "start_session", "session_id": "c", "model": "gpt-4o"})
    stale = h.bus.services.events.load("c")
    second.dispatch_json({"type": "append_messages", "session_id": "c",
                          "messages": [{"role": "user", "content": "first"}]})
    stale.append_messages([Message(role="user", content="late")], command_id="late", created_at="t")
    with pytest.raises(ConcurrencyConflict):
        h.bus.services.events.save(stale)
    history = h.do({"type": "get_history", "session_id": "c"})["result"]["messages"]
    assert [m["content"] for m in history] == ["first"]
    h.close()
