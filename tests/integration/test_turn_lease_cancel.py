"""A ``TurnRunner.run`` cancelled while it takes the lease.

The awaiting task is cancelled (a client went away, a service shuts down) while the
lease's upsert waits for the database (another writer holds it). The upsert still runs
in its thread and takes the lease; nothing may be left holding it: the session must
not stay blocked with ``turn_in_progress`` for the lease's whole period with no turn
running. SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urlparse

import pytest

from backends import POSTGRES_URL, MakeHarness
from fakeprovider import Reply
from turnlease_helpers import SID, harness, history, runner


@contextmanager
def writer_held(url: str, release: threading.Event) -> Iterator[threading.Event]:
    """Another connection holds the write lock the lease's upsert needs until ``release``."""
    held = threading.Event()

    def hold() -> None:
        if url.startswith("sqlite"):
            conn = sqlite3.connect(urlparse(url).path, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
        else:
            import psycopg

            schema = parse_qs(urlparse(url).query)["schema"][0]
            conn = psycopg.connect(POSTGRES_URL)
            conn.execute(f'LOCK TABLE "{schema}".ctxc_turn_leases IN EXCLUSIVE MODE')
        held.set()
        release.wait(30)
        conn.rollback() if not url.startswith("sqlite") else conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        yield held
    finally:
        release.set()
        thread.join(30)


def test_a_run_cancelled_while_taking_the_lease_leaves_no_lease_behind(make_harness: MakeHarness, provider) -> None:
    h = harness(make_harness, provider)
    if h.is_memory:
        pytest.skip("no writer lock to wait for")
    provider.queue(Reply(text="Later answer."))
    release = threading.Event()

    async def main() -> None:
        with writer_held(h.url, release) as held:
            assert held.wait(10)
            task = asyncio.create_task(runner(h.bus).run(SID, "a question"))
            await asyncio.sleep(0.3)  # the upsert is waiting for the writer
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            release.set()
        # The upsert goes on in its thread once the writer is free (milliseconds) and
        # takes the lease after all: it must give it back.
        await asyncio.sleep(1.0)
        assert h.bus.services.leases.holder(SID) is None

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 15
    assert history(h) == []  # the cancelled run appended nothing
    answer = asyncio.run(runner(h.bus).run(SID, "next question"))  # the session is free
    assert answer.answer == "Later answer."
    h.close()
