"""The turn lease on a shared ``memory://NAME`` store.

``memory://NAME`` is shared by every bus of the process that names it — the memory
backend's stand-in for "another process on the same database" (ADR 0045). The lease
(ADR 0041) must be shared with it: a turn running through one bus refuses a second
turn, and a manual ``compact``, through another bus on the same store.
"""

from __future__ import annotations

from context_compaction import Settings, bootstrap
from helpers import memory_url


def _bus(url: str):
    return bootstrap(Settings(database_url=url, summarizer="extractive"))


def test_two_buses_on_one_named_memory_store_share_the_turn_lease() -> None:
    url = memory_url()
    first, second = _bus(url), _bus(url)
    try:
        assert first.services.leases.acquire("s", "turn-A", 30)
        # The same store: the other bus sees the running turn and cannot take it.
        assert second.services.leases.holder("s") == "turn-A"
        assert not second.services.leases.acquire("s", "turn-B", 30)
        first.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o"})
        compact = second.dispatch_json({"type": "compact", "session_id": "s"})
        assert compact["ok"] is False and compact["error"]["code"] == "turn_in_progress", compact
        first.services.leases.release("s", "turn-A")
        assert second.services.leases.acquire("s", "turn-B", 30)
    finally:
        first.close()
        second.close()


def test_an_unnamed_memory_store_has_a_lease_table_of_its_own() -> None:
    first, second = _bus("memory://"), _bus("memory://")
    try:
        assert first.services.leases.acquire("s", "A", 30)
        assert second.services.leases.acquire("s", "B", 30)  # two separate stores
    finally:
        first.close()
        second.close()
