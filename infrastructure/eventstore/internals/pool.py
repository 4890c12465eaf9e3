"""psycopg_pool's idle connections, newest first (ADR 0067; see ``__init__``)."""

from __future__ import annotations

import logging
from collections import deque
from time import monotonic
from typing import Any

log = logging.getLogger("context_compaction.eventstore")


# ------------------------------------------------------------------ psycopg_pool's order
# psycopg_pool hands out its idle connections oldest first (``popleft`` of the deque in
# its ``_pool``, ``append`` on return), so a process needing one connection at a time
# cycled through all ``pool_size`` of them, each append meeting a server backend whose
# caches went cold: ~20 % more server CPU per append at eight writers (ADR 0067).
# ``newest_idle_first`` hands out the most recently returned one instead, as SQLAlchemy's
# ``pool_use_lifo``; the others stay open for bursts (``tests/integration/test_pg_pool.py``).


class NewestFirst(deque):  # type: ignore[type-arg]
    """The pool's idle connections, the newest at the left end.

    psycopg_pool takes with ``popleft`` (a checkout, and the shrinking of an idle pool
    past ``min_size``) and returns with ``append``, which here puts the connection at
    the left: a checkout gets the connection returned last. Its ``check()`` lists the
    deque, clears it and appends from the right end, which keeps this order.

    An idle connection past its ``max_lifetime`` (eventsourcing's
    ``POSTGRES_CONN_MAX_AGE``, an hour) is taken first: the pool only discards expired connections when they come back, and in this
    order a spare might never be taken, so it would outlive the age a host set for
    failover or credential rotation. Taken once, it is closed and replaced on return,
    as in psycopg_pool's own order. Shrinking takes the same end, so it closes an
    expired spare when there is one, else the newest idle connection (at most one per
    ``max_idle`` period, and only of the overflow connections)."""

    __slots__ = ()

    def append(self, conn: Any) -> None:
        self.appendleft(conn)

    def popleft(self) -> Any:
        if len(self) > 1:
            now = monotonic()
            # Any spare, not only the rightmost: a burst returns connections in any
            # order, so a younger one can sit right of an expired one (second review).
            for i in range(len(self) - 1, 0, -1):  # (under the pool's lock; ≤ pool size)
                expire_at = getattr(self[i], "_expire_at", None)
                if expire_at is not None and expire_at <= now:
                    conn = self[i]
                    del self[i]
                    return conn
        return super().popleft()


def newest_idle_first(pool: Any) -> bool:
    """Make ``pool`` (a ``psycopg_pool.ConnectionPool``) hand out its newest idle
    connection. Returns False, changing nothing, when the pool is not built as this
    expects (a psycopg_pool release with other internals keeps its own order)."""
    idle, lock = getattr(pool, "_pool", None), getattr(pool, "_lock", None)
    if isinstance(idle, NewestFirst):
        return True
    if type(idle) is not deque or lock is None:
        log.warning("connection pool internals changed; idle connections stay oldest first")
        return False
    with lock:  # (its workers add connections under this lock)
        pool._pool = NewestFirst(reversed(pool._pool))  # (its newest is at the right)
    return True
