"""Reading PostgreSQL's notification log in id order when ids may commit out of order
(ADR 0065 rule 2, ADR 0066).

A writer draws notification ids from the events table's sequence when it inserts and
they become visible when it commits. Under the events lock (eventsourcing's, our
``locked`` ordering) no id is drawn while another writer holds some uncommitted, so the
only holes a reader meets are permanent ones (a rolled-back insert). Without the lock
(``lock_free``) a lower id can commit after a higher one. A reader that returned the
higher one and moved past the hole would never see the lower one: a follower, the
event feed or ``ctxc verify`` would skip an event for good.

The rule, with no new column. A read whose snapshot S0 shows id ``b`` but not a lower
id ``k`` has met a hole. ``k`` was drawn by an INSERT into the events table, whose
ROW EXCLUSIVE lock its transaction took before drawing and keeps to its end. So if
that writer still runs after S0, it is among the transactions holding that lock at any
later moment T0. The first read to meet the hole notes those (``_writers_sql``, by
virtual transaction id; ``Holes``); once none of them holds the lock any more (polled
for a few milliseconds, about one append, then asked again by later reads), the
hole's writer has ended, and a snapshot taken after that answer (the next statement)
shows whether it was filled: still empty, it was rolled back and is passed for good;
filled since, it is an event the rows of S0 lack, so the read stops just before it.
While a noted writer still runs, the read stops before the hole; the caller reads on
from there next time. Writers that began after the hole was first seen never hold it.

(The cluster's ``pg_snapshot_xmin`` cannot decide this: a snapshot's xmax is one past
the latest *completed* xid, so ``k``'s writer may hold an xid above S0's xmax, and an
xmin past that xmax does not mean it has ended. It would also make every unrelated
long transaction hold readers back.) Only writers of events running when the hole
was first seen hold it; no way makes a reader skip an event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import Notification

from ..readmodel.projector import notification_of

_COLUMNS = "notification_id, originator_id, originator_version, topic, state"


def _rows_sql(qualified: str, *, stop: bool, topics: bool) -> str:
    where = ["notification_id >= %(lo)s"]
    if stop:
        where.append("notification_id <= %(stop)s")
    if topics:
        where.append("topic = ANY(%(topics)s)")
    # One statement, one snapshot: the rows, and how many ids of any topic exist from
    # ``lo`` up to the last row (fewer than the span: a hole).
    return (
        f"WITH r AS (SELECT {_COLUMNS} FROM {qualified} WHERE {' AND '.join(where)}"
        " ORDER BY notification_id LIMIT %(limit)s)"
        f" SELECT r.*, (SELECT count(*) FROM {qualified} WHERE notification_id >= %(lo)s"
        " AND notification_id <= (SELECT max(notification_id) FROM r))"
        " FROM r ORDER BY notification_id"
    )


def _holes_sql(qualified: str) -> str:
    # The ids from ``lo`` to ``hi`` that this statement's snapshot does not show.
    return (
        f"SELECT coalesce(array_agg(g ORDER BY g), '{{}}') FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g"
        f" WHERE NOT EXISTS (SELECT 1 FROM {qualified} e WHERE e.notification_id = g)"
    )


def _writers_sql(qualified: str, *, among: bool = False) -> str:
    """The other transactions (their virtual ids, ``pg_locks.virtualtransaction``) that
    hold the events table's ROW EXCLUSIVE lock now; ``among``: only those of
    ``%(writers)s``. An id is drawn by an INSERT into that table, which takes the lock
    before it draws and keeps it to the transaction's end (a prepared one's too, until
    its COMMIT PREPARED), with or without an xid yet, whatever its savepoints: so the
    writer of a hole seen earlier is among these if it still runs. ``pg_locks`` needs no
    privilege (``pg_stat_activity`` hides other roles' transactions) and shows the
    fast-path locks this one usually is."""
    return (
        "SELECT coalesce(array_agg(DISTINCT virtualtransaction), '{}') FROM pg_locks"
        f" WHERE locktype = 'relation' AND relation = '{qualified}'::regclass AND mode = 'RowExclusiveLock'"
        " AND pid IS DISTINCT FROM pg_backend_pid()"
        + (" AND virtualtransaction = ANY(%(writers)s)" if among else "")
    )
#: How long a read that met holes waits for their writers to end, polling: about one
#: append. Longer, it stops before the first hole still open; the next read asks
#: only about the writers noted for that hole then (``Holes``), so writers that begin
#: later never hold it.
WAIT_POLLS, POLL_S = 4, 0.0025


class Holes:
    """The writers that may have drawn each hole a reader has met and not yet passed:
    those running when it was first seen (a later look needs only them to have ended).
    One per recorder, shared by its readers' threads; bounded (the oldest go first)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.writers: dict[int, frozenset[str]] = {}
        self._lock = threading.Lock()

    def known(self, hole: int) -> bool:
        return hole in self.writers

    def note(self, hole: int, writers: frozenset[str]) -> frozenset[str]:
        with self._lock:
            known = self.writers.get(hole)
            if known is not None:
                return known
            if len(self.writers) >= self.limit:
                del self.writers[next(iter(self.writers))]
            self.writers[hole] = writers
            return writers

    def passed(self, hole: int) -> None:
        with self._lock:
            self.writers.pop(hole, None)


def select_in_order(
    conn: Any,
    qualified: str,
    start: int | None,
    limit: int,
    stop: int | None = None,
    topics: Sequence[str] = (),
    *,
    inclusive_of_start: bool = True,
    holes_seen: Holes | None = None,
) -> list[Notification]:
    """eventsourcing's ``select_notifications`` (same arguments and result), except
    that it never returns an id above a hole that a running writer may still fill.

    ``conn``: a psycopg connection in autocommit mode (the recorder's pool gives them
    so), ``qualified``: the events table's quoted, schema-qualified name,
    ``holes_seen``: what earlier reads noted of the holes they met.
    """
    seen = holes_seen if holes_seen is not None else Holes()
    if start is None:
        lo = 1  # (bigserial: the first id is 1)
    else:
        lo = start if inclusive_of_start else start + 1
    params: dict[str, Any] = {"lo": lo, "limit": limit}
    if stop is not None:
        params["stop"] = stop
    if topics:
        params["topics"] = list(topics)
    rows_sql = _rows_sql(qualified, stop=stop is not None, topics=bool(topics))
    with conn.cursor(row_factory=_tuples) as cur:
        rows = cur.execute(rows_sql, params, prepare=True).fetchall()
        if not rows or rows[-1][5] == rows[-1][0] - lo + 1:
            return _as_notes(rows)
        # Holes below the last row: which ones, in one snapshot with the rows.
        with conn.transaction():
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = cur.execute(rows_sql, params, prepare=True).fetchall()
            if not rows:
                return []
            hi = rows[-1][0]
            holes = cur.execute(_holes_sql(qualified), {"lo": lo, "hi": hi}).fetchone()[0]
        if not holes:
            return _as_notes(rows)
        # Whose may each hole be? Its writer, if it still runs, is among the events'
        # writers running now, or among those noted when an earlier read first met it.
        now: frozenset[str] | None = None
        writers: dict[int, frozenset[str]] = {}
        for hole in holes:
            if not seen.known(hole) and now is None:
                now = frozenset(cur.execute(_writers_sql(qualified)).fetchone()[0])
            writers[hole] = seen.note(hole, now if now is not None else frozenset())
        running = frozenset().union(*writers.values())
        polls = 0
        while running:
            running = frozenset(cur.execute(_writers_sql(qualified, among=True), {"writers": list(running)}).fetchone()[0])
            if not running or polls == WAIT_POLLS:
                break
            polls += 1
            time.sleep(POLL_S)
        # A snapshot taken after that answer (the next statement): which holes are left?
        left = set(cur.execute(_holes_sql(qualified), {"lo": holes[0], "hi": holes[-1]}).fetchone()[0])
    cut = None
    for hole in holes:
        if hole not in left:
            seen.passed(hole)  # filled since the rows were read: they lack it
            cut = hole
            break
        if writers[hole] & running:
            cut = hole  # its writer may still run
            break
        seen.passed(hole)  # rolled back: passed for good
    return _as_notes([r for r in rows if cut is None or r[0] < cut])


def _tuples(cursor: Any) -> Any:
    from psycopg.rows import tuple_row

    return tuple_row(cursor)


def _as_notes(rows: Sequence[tuple[Any, ...]]) -> list[Notification]:
    return [notification_of(r) for r in rows]
