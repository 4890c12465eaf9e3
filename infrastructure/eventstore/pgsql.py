"""The SQL of PostgreSQL's event inserts, written once (ADR 0043, 0053, 0057).

No private eventsourcing name here (those stay in ``internals.py``, ADR 0026); psycopg
is imported only when a statement is built, i.e. only when PostgreSQL is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent

#: The one-trip append's function (ADR 0057); a new body gets a new version.
ORDERED_FUNCTION = "ctxc_ordered_insert_v1"
#: Parameter marks: psycopg's (the states binary), and a function body's.
PARAMS = ("%s", "%s", "%s", "%b", "%s", "%s", "%s", "%s", "%s")
DOLLARS = tuple(f"${n}" for n in range(1, 10))


def unnest_insert(schema: str, table: str, *, id_type: str, params: Sequence[str] = PARAMS[:4]) -> Any:
    """The one INSERT of stored events (or snapshots) of every PostgreSQL write path:
    four plain arrays, the states binary (``columns`` gives them), for the events'
    plain and ordered statements and the snapshots alike (ADR 0043, 0057)."""
    from psycopg.sql import SQL, Identifier

    return SQL(
        "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)"
        " SELECT * FROM unnest({0}::{id_type}[], {1}::bigint[], {2}::text[], {3}::bytea[])"
    ).format(*map(SQL, params), schema=Identifier(schema), table=Identifier(table), id_type=SQL(id_type))


def ordered_insert(insert: Any, id_type: str, rm: str, params: Sequence[str]) -> Any:
    """The events (``insert``), their ``rm_messages`` rows joined on originator and
    version to the ids just assigned, and the read model's position moved from
    ``min(id) - 1`` to ``max(id)``, in one statement (ADR 0053); ``1 / 0`` when the
    position was anywhere else. ``params``: the marks of the five other parameters."""
    from psycopg.sql import SQL

    return SQL("WITH ins AS (") + insert + SQL(
        " RETURNING notification_id, originator_id, originator_version),"
        " msg AS (INSERT INTO {rm}rm_messages (session_id, seq, visible, notification_id)"
        " SELECT m.s, m.q, 1, ins.notification_id"
        " FROM unnest({0}::text[], {1}::bigint[], {2}::{id_type}[], {3}::bigint[]) AS m(s, q, o, v)"
        " JOIN ins ON ins.originator_id = m.o AND ins.originator_version = m.v),"
        " pos AS (UPDATE {rm}rm_position AS p SET notification_id = b.hi"
        " FROM (SELECT min(notification_id) AS lo, max(notification_id) AS hi FROM ins) AS b"
        " WHERE p.name = {4} AND p.notification_id = b.lo - 1 RETURNING 1)"
        " SELECT notification_id, 1 / (SELECT count(*) FROM pos) FROM ins ORDER BY notification_id"
    ).format(*map(SQL, params), id_type=SQL(id_type), rm=SQL(rm))


def columns(stored: Sequence[StoredEvent]) -> tuple[list[Any], list[int], list[str], list[bytes]]:
    """``unnest_insert``'s four parameters."""
    return (
        [s.originator_id for s in stored],
        [s.originator_version for s in stored],
        [s.topic for s in stored],
        [s.state for s in stored],
    )
