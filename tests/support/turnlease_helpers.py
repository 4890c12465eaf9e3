"""Shared by the turn-lease tests (integration and e2e; not a test module)."""

from __future__ import annotations

from backends import MakeHarness
from context_compaction.application.agent.runner import TurnRunner
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from fakeprovider import FakeProvider
from helpers import FAKE_MODEL, Harness, ok

SID = "lease"


def harness(make_harness: MakeHarness, provider: FakeProvider) -> Harness:
    h = make_harness("lease", summarizer="extractive",
                     models={FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k", "token_limit": 100_000}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    return h


async def no_tools(call: dict) -> str:
    return "unused"


def runner(bus, lease_seconds: float = 30.0) -> TurnRunner:
    return TurnRunner(bus, LiteLLMChatProvider(bus.services.settings, timeout=30), no_tools,
                      lease_seconds=lease_seconds)


def history(h: Harness) -> list[tuple[str, str | None]]:
    return [(m["role"], m["content"]) for m in ok(h.do({"type": "get_history", "session_id": SID}))["messages"]]


def create_lease_table(path: str, barrier, results) -> None:  # noqa: ANN001 - multiprocessing primitives
    """In a process of its own: create (upgrade) the SQLite lease table once, no retry."""
    from eventsourcing.sqlite import SQLiteDatastore

    from context_compaction.infrastructure.database import Database, Dialect
    from context_compaction.infrastructure.turnleases import SqlTurnLeases

    leases = SqlTurnLeases(Database(SQLiteDatastore(path, lock_timeout=5), Dialect("sqlite")))
    barrier.wait()
    try:
        leases.create_table()
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(f"{type(exc).__name__}: {exc}")
