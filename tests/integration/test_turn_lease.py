"""One running turn per session (issue 15, ADR 0041): the lease store, and a second
``TurnRunner.run`` — in the same process or another bus on the same database — refused
with ``turn_in_progress`` before it appends anything; so is a manual ``compact``. The
OS-process cases are in ``tests/e2e/test_turn_lease_processes.py``. SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
import time

from backends import MakeHarness
from context_compaction.domain.errors import TurnInProgress
from fakeprovider import Reply
from turnlease_helpers import SID, harness, history, runner


def test_the_lease_store_gives_a_session_to_one_owner_until_release_or_expiry(make_harness: MakeHarness, provider) -> None:
    h = harness(make_harness, provider)
    leases = h.bus.services.leases
    assert leases.acquire("s", "A", 30) and not leases.acquire("s", "B", 30)
    assert leases.holder("s") == "A" and leases.acquire("s", "A", 30)  # its own again
    assert leases.renew("s", "A", 30) and not leases.renew("s", "B", 30)
    leases.release("s", "B")  # not B's: nothing happens
    assert leases.holder("s") == "A"
    leases.release("s", "A")
    assert leases.holder("s") is None and leases.acquire("s", "B", 30)
    assert leases.acquire("t", "A", 0.3) and not leases.acquire("t", "B", 30)
    time.sleep(0.5)  # A crashed: its lease runs out
    assert leases.holder("t") is None and leases.acquire("t", "B", 30)
    assert not leases.renew("t", "A", 30) and leases.holder("t") == "B"
    h.close()


def test_a_second_run_on_a_running_session_is_refused_and_appends_nothing(make_harness: MakeHarness, provider) -> None:
    gate = threading.Event()
    provider.queue(Reply(text="First answer.", gate=gate), Reply(text="Second answer."))
    h = harness(make_harness, provider)
    other = h.new_bus()  # another bus on the database: its own process memory

    async def main() -> tuple[object, BaseException | None, object, dict]:
        first = asyncio.create_task(runner(h.bus).run(SID, "first question"))
        async with asyncio.timeout(30):
            while provider.calls == 0:
                await asyncio.sleep(0.005)
        refused = None
        try:
            await runner(h.bus).run(SID, "second question")  # same process
        except TurnInProgress as exc:
            refused = exc
        elsewhere = await asyncio.gather(runner(other).run(SID, "third question"), return_exceptions=True)
        compact = await other.adispatch_json({"type": "compact", "session_id": SID})
        gate.set()
        return await first, refused, elsewhere[0], compact

    first, refused, elsewhere, compact = asyncio.run(main())
    assert first.answer == "First answer."
    assert refused is not None and refused.code == "turn_in_progress"
    assert isinstance(elsewhere, TurnInProgress)
    assert compact["ok"] is False and compact["error"]["code"] == "turn_in_progress"
    assert history(h) == [("user", "first question"), ("assistant", "First answer.")]
    assert h.bus.services.leases.holder(SID) is None  # released at the end
    # serialized: once the turn has finished, the next one runs
    assert asyncio.run(runner(other).run(SID, "second question")).answer == "Second answer."
    assert history(h)[2:] == [("user", "second question"), ("assistant", "Second answer.")]
    h.close()


def test_a_turn_longer_than_its_lease_keeps_the_session_by_renewing(make_harness: MakeHarness, provider) -> None:
    gate = threading.Event()
    provider.queue(Reply(text="Slow answer.", gate=gate))
    h = harness(make_harness, provider)
    other = h.new_bus()

    async def main() -> tuple[object, BaseException | object]:
        first = asyncio.create_task(runner(h.bus, lease_seconds=1.5).run(SID, "slow question"))
        async with asyncio.timeout(30):
            while provider.calls == 0:
                await asyncio.sleep(0.005)
        await asyncio.sleep(4.0)  # 2.7 lease periods: only renewals keep it
        attempt = await asyncio.gather(runner(other).run(SID, "impatient question"), return_exceptions=True)
        gate.set()
        return await first, attempt[0]

    first, attempt = asyncio.run(main())
    assert isinstance(attempt, TurnInProgress)
    assert first.answer == "Slow answer."
    assert history(h) == [("user", "slow question"), ("assistant", "Slow answer.")]
    h.close()
