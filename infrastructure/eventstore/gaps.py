"""Reading PostgreSQL's notification log in id order when ids may commit out of order
(ADR 0065 rule 2, ADR 0066).

A writer draws notification ids from the events table's sequence when it inserts and
they become visible when it commits. Under the events lock (eventsourcing's, our
``locked`` ordering) no id is drawn while another writer holds some uncommitted, so the
only holes a reader meets are permanent ones (a rolled-back insert). Without the lock
(``lock_free``) a lower id can commit after a higher one. A reader that returned the
higher one and moved past the hole would never see the lower one: a follower, the
event feed or ``ctxc verify`` would skip an event for good.

The rule, with no new column: a read whose snapshot S0 shows id ``b`` but not a lower
id ``k`` notes ``X = pg_snapshot_xmax(S0)``. ``k`` was drawn before ``b``, ``b``
committed before S0, and every writer has its transaction id before it draws ids (the
lock-free writers force it first), so ``k``'s writer has an xid below ``X``. Once a
later snapshot has ``pg_snapshot_xmin >= X`` that writer has ended: if ``k`` is still
not visible, it rolled back and the hole is passed for good. Until then the read stops
just before the hole; the caller reads on from there next time.

Liveness caveat: xmin is the whole cluster's, so a long transaction anywhere (a
``psql`` left open in a transaction that wrote something) holds readers at a hole
until it ends. It never makes them skip an event.
"""

from __future__ import annotations

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
    # One statement, one snapshot: the rows, how many ids of any topic exist from
    # ``lo`` up to the last row (fewer than the span: a hole), and the snapshot's xmax.
    return (
        f"WITH r AS (SELECT {_COLUMNS} FROM {qualified} WHERE {' AND '.join(where)}"
        " ORDER BY notification_id LIMIT %(limit)s)"
        f" SELECT r.*, (SELECT count(*) FROM {qualified} WHERE notification_id >= %(lo)s"
        " AND notification_id <= (SELECT max(notification_id) FROM r)),"
        " pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
        " FROM r ORDER BY notification_id"
    )


def _holes_sql(qualified: str) -> str:
    # The ids from ``lo`` to ``hi`` that this statement's snapshot does not show.
    return (
        f"SELECT coalesce(array_agg(g ORDER BY g), '{{}}') FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g"
        f" WHERE NOT EXISTS (SELECT 1 FROM {qualified} e WHERE e.notification_id = g)"
    )


_XMIN_SQL = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"


def select_in_order(
    conn: Any,
    qualified: str,
    start: int | None,
    limit: int,
    stop: int | None = None,
    topics: Sequence[str] = (),
    *,
    inclusive_of_start: bool = True,
) -> list[Notification]:
    """eventsourcing's ``select_notifications`` (same arguments and result), except
    that it never returns an id above a hole that a running writer may still fill.

    ``conn``: a psycopg connection in autocommit mode (the recorder's pool gives them
    so), ``qualified``: the events table's quoted, schema-qualified name.
    """
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
            hi, xmax = rows[-1][0], rows[-1][6]
            holes = cur.execute(_holes_sql(qualified), {"lo": lo, "hi": hi}).fetchone()[0]
        if not holes:
            return _as_notes(rows)
        # A later snapshot: are the holes' writers all done, and which holes are left?
        xmin = cur.execute(_XMIN_SQL).fetchone()[0]
        left = cur.execute(_holes_sql(qualified), {"lo": holes[0], "hi": holes[-1]}).fetchone()[0]
    filled = sorted(set(holes) - set(left))
    if xmin >= xmax:
        # Every hole still empty is permanent (rolled back). A hole filled since the
        # rows were read is an event they lack: stop just before it.
        cut = filled[0] if filled else None
    else:
        cut = holes[0]
    return _as_notes([r for r in rows if cut is None or r[0] < cut])


def _tuples(cursor: Any) -> Any:
    from psycopg.rows import tuple_row

    return tuple_row(cursor)


def _as_notes(rows: Sequence[tuple[Any, ...]]) -> list[Notification]:
    return [notification_of(r) for r in rows]
