"""psycopg_pool beneath its public API: the one place that does (ADR 0067).

psycopg_pool hands out its idle connections oldest first (``popleft`` of the deque its
``_pool`` attribute holds, ``append`` on return), so a process that needs one
connection at a time cycles through all ``pool_size`` of them. Each checkout then
meets a server backend whose caches went cold while the others ran: with eight
writer processes and the default five connections each, the server spent ~20 % more
CPU per append than with one (ADR 0067). ``newest_first`` makes the pool hand out the
most recently returned connection instead, as SQLAlchemy's ``pool_use_lifo`` does;
the others stay open for bursts. ``tests/unit/test_pg_pool.py`` checks the names this
uses still exist and that the pool now reuses one connection.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

log = logging.getLogger(__name__)


class NewestFirst(deque):  # type: ignore[type-arg]
    """The pool's idle connections, taken from the end they were returned to.

    psycopg_pool takes with ``popleft`` (a checkout, and the shrinking of an idle
    pool past ``min_size``) and returns with ``append``; both takes now get the newest.
    Shrinking closes the newest idle connection rather than the oldest: at most one
    per ``max_idle`` period, and only of the overflow connections."""

    __slots__ = ()

    def popleft(self) -> Any:
        return self.pop()


def newest_first(pool: Any) -> bool:
    """Make ``pool`` (a ``psycopg_pool.ConnectionPool``) hand out its newest idle
    connection. Returns False, changing nothing, when the pool is not built as this
    expects (a psycopg_pool release with other internals keeps its own order)."""
    idle, lock = getattr(pool, "_pool", None), getattr(pool, "_lock", None)
    if type(idle) is not deque or lock is None:
        log.warning("connection pool internals changed; idle connections stay oldest first")
        return False
    with lock:  # (its workers add connections under this lock)
        pool._pool = NewestFirst(pool._pool)
    return True
