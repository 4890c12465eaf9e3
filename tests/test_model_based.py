"""A stateful model test of the whole bus against a simple in-memory reference (issue 5).

Rules: append, compact (the summarizer fails sometimes), clear, rewind, restore. After
every step the invariants of spec §5 hold.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from backends import Databases, postgres_reachable
from context_compaction.application.ports import SummaryResult
from context_compaction.domain.errors import SummaryFailed
from context_compaction.infrastructure.summarizers import ExtractiveSummarizer
from helpers import Harness

SID = "m"


class FlakySummarizer:
    def __init__(self) -> None:
        self.fail = False
        self.inner = ExtractiveSummarizer()

    def summarize(self, request):  # type: ignore[no-untyped-def]
        if self.fail:
            raise SummaryFailed("flaky summarizer failed")
        result = self.inner.summarize(request)
        return SummaryResult(text=result.text[:600], provider_kind="flaky", model="flaky")


class SessionMachine(RuleBasedStateMachine):
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.dbs = Databases(self.backend, Path(self.tmp.name))
        self.summarizer = FlakySummarizer()
        self.h: Harness = self.dbs.harness("model", adapters={"summarizer": self.summarizer},
                                           context_compaction={"keep_recent_tokens": 60, "reserve_tokens": 16384})
        self.ok({"type": "start_session", "session_id": SID, "model": "gpt-4o"})
        self.messages: list[dict] = []  # every appended message, as the raw log must show it
        self.visible: set[int] = set()
        self.generation = 0
        self.first_retained: int | None = None
        self.turn = 0
        self.calls = 0

    def teardown(self) -> None:
        self.dbs.cleanup()
        self.tmp.cleanup()

    def ok(self, command: dict) -> dict:
        envelope = self.h.do(command)
        assert envelope["ok"], (command, envelope)
        return envelope["result"]

    # ----------------------------------------------------------------- rules
    @rule(tools=st.integers(0, 2), words=st.integers(1, 30))
    def append_turn(self, tools: int, words: int) -> None:
        self.turn += 1
        tid = f"t{self.turn}"
        batch = [{"role": "user", "content": f"request {self.turn} " + "word " * words, "turn_id": tid}]
        if tools:
            ids = [f"k{self.calls + i}" for i in range(tools)]
            self.calls += tools
            batch.append({"role": "assistant", "content": None, "turn_id": tid,
                          "tool_calls": [{"id": i, "name": "run", "arguments": "{}"} for i in ids]})
            batch += [{"role": "tool", "tool_call_id": i, "content": "output " * words, "turn_id": tid} for i in ids]
        batch.append({"role": "assistant", "content": f"answer {self.turn}", "turn_id": tid})
        seqs = self.ok({"type": "append_messages", "session_id": SID, "messages": batch})["seqs"]
        assert seqs == list(range(len(self.messages) + 1, len(self.messages) + 1 + len(batch)))
        self.messages += batch
        self.visible |= set(seqs)

    @rule(fail=st.booleans())
    def compact(self, fail: bool) -> None:
        self.summarizer.fail = fail
        envelope = self.h.do({"type": "compact", "session_id": SID})
        event(f"compact: {envelope['error']['code'] if not envelope['ok'] else envelope['result']['status']}")
        if not envelope["ok"]:
            assert envelope["error"]["code"] == "summary_failed"
            return
        outcome = envelope["result"]
        if outcome["status"] == "nothing_to_compact":
            return
        assert not fail
        first = outcome["first_retained_seq"]
        assert first in self.visible
        assert self.first_retained is None or first > self.first_retained
        assert self.messages[first - 1]["role"] == "user"  # a whole-turn boundary
        self.generation += 1
        assert outcome["generation"] == self.generation
        self.first_retained = first

    @rule()
    def clear(self) -> None:
        result = self.ok({"type": "invalidate_history", "session_id": SID, "kind": "clear"})
        self.generation += 1
        assert result["context_generation"] == self.generation
        self.visible.clear()
        self.first_retained = None

    @rule(back=st.integers(0, 12))
    def rewind(self, back: int) -> None:
        to_seq = max(len(self.messages) - back, 0)
        self.ok({"type": "invalidate_history", "session_id": SID, "kind": "rewind", "to_seq": to_seq})
        if to_seq < len(self.messages):
            self.generation += 1
            self.visible = {s for s in self.visible if s <= to_seq}
            self.first_retained = None

    @rule()
    def restore(self) -> None:
        live = self.ok({"type": "get_projection", "session_id": SID})
        self.h.reopen()
        assert self.ok({"type": "get_projection", "session_id": SID}) == live

    # ------------------------------------------------------------ invariants
    @invariant()
    def raw_history_is_the_append_only_log(self) -> None:
        raw = self.ok({"type": "get_history", "session_id": SID, "include_invalidated": True})["messages"]
        assert [m["seq"] for m in raw] == list(range(1, len(self.messages) + 1))
        assert [m["content"] for m in raw] == [m["content"] for m in self.messages]
        assert {m["seq"] for m in raw if not m["invalidated"]} == self.visible

    @invariant()
    def one_checkpoint_and_a_deterministic_projection(self) -> None:
        cps = self.ok({"type": "list_checkpoints", "session_id": SID})["checkpoints"]
        active = [cp for cp in cps if cp["active"]]
        assert len(active) <= 1
        p = self.ok({"type": "get_projection", "session_id": SID})
        assert p["context_generation"] == self.generation
        tail = sorted(s for s in self.visible if self.first_retained is None or s >= self.first_retained)
        if self.first_retained is None:
            assert not active and p["checkpoint_id"] is None
        else:
            assert active and active[0]["first_retained_seq"] == self.first_retained
            assert p["messages"][0]["content"].startswith("[Historical conversation summary")
            assert p["first_raw_seq"] == self.first_retained
        users = [m for m in p["messages"][1 if self.first_retained else 0:] if m["role"] == "user"]
        assert len(users) == sum(1 for s in tail if self.messages[s - 1]["role"] == "user")


SessionMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestSessionMachineSQLite = SessionMachine.TestCase


class PostgresSessionMachine(SessionMachine):
    backend = "postgres"


PostgresSessionMachine.TestCase.settings = settings(
    max_examples=8, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.postgres
class TestSessionMachinePostgres(PostgresSessionMachine.TestCase):  # type: ignore[misc,valid-type]
    def setUp(self) -> None:  # noqa: N802 - unittest API
        problem = postgres_reachable()
        if problem:
            pytest.fail(f"PostgreSQL is not reachable: {problem}", pytrace=False)
