"""The SQL of PostgreSQL's event inserts, written once (ADR 0043, 0053, 0057).

No private eventsourcing name here (those stay in ``internals/``, ADR 0026); psycopg
is imported only when a statement is built, i.e. only when PostgreSQL is configured.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

#: The one-trip append's function (ADR 0057, 0064); a new body gets a new version
#: (v1, ADR 0057, had no session-row update; v2 went on when its update found no row,
#: ADR 0066).
ORDERED_FUNCTION = "ctxc_ordered_insert_v3"
#: The read model's position row (``readmodel.schema.POSITION``; pinned equal by a test).
POSITION_NAME = "read_model"
#: Its lock-free twin (ADR 0066): no events lock, no position (v1 forced the xid
#: first, which the readers' rule no longer needs, and lost its update to a rebuild).
UNLOCKED_FUNCTION = "ctxc_unlocked_insert_v2"
#: What the lock-free function runs where the ordered one takes the events lock.
NO_LOCK = "NULL"
#: Parameter marks of the ordered insert: psycopg's (the eight arrays binary,
#: ``BinaryArray``; the position's name text), and a function body's.
PARAMS = ("%b", "%b", "%b", "%b", "%b", "%b", "%b", "%b", "%s")
DOLLARS = tuple(f"${n}" for n in range(1, 10))
#: The read model's column types (``schema.Table``) as function argument types.
_ARGUMENT_TYPES = {"{INT}": "bigint", "TEXT": "text"}


def unnest_insert(schema: str, table: str, *, id_type: str, params: Sequence[str] = PARAMS[:4]) -> Any:
    """The one INSERT of stored events (or snapshots) of every PostgreSQL write path:
    four plain arrays, the states binary (``columns`` gives them), for the events'
    plain and ordered statements and the snapshots alike (ADR 0043, 0057)."""
    from psycopg.sql import SQL, Identifier

    return SQL(
        "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)"
        " SELECT * FROM unnest({0}::{id_type}[], {1}::bigint[], {2}::text[], {3}::bytea[])"
    ).format(*map(SQL, params), schema=Identifier(schema), table=Identifier(table), id_type=SQL(id_type))


def ordered_insert(insert: Any, id_type: str, rm: str, params: Sequence[str], *, lock_free: bool = False) -> Any:
    """The events (``insert``), their ``rm_messages`` rows joined on originator and
    version to the ids just assigned, and the read model's position moved from
    ``min(id) - 1`` to ``max(id)``, in one statement (ADR 0053); ``1 / 0`` when the
    position was anywhere else. ``params``: the marks of the five other parameters.

    ``lock_free`` (ADR 0066): the position stays (writers commit out of id order), and
    the fifth parameter names the database's lock-free mark instead: ``1 / 0`` when it
    is missing, or when the position is (a schema upgrade dropped it: the read model
    must be rebuilt before an inline projection can be trusted again)."""
    from psycopg.sql import SQL

    pos = (
        " pos AS (SELECT 1 FROM {rm}rm_position AS p WHERE p.name = {4}"
        f" AND EXISTS (SELECT 1 FROM {{rm}}rm_position AS q WHERE q.name = '{POSITION_NAME}'))"
        if lock_free else
        " pos AS (UPDATE {rm}rm_position AS p SET notification_id = b.hi"
        " FROM (SELECT min(notification_id) AS lo, max(notification_id) AS hi FROM ins) AS b"
        " WHERE p.name = {4} AND p.notification_id = b.lo - 1 RETURNING 1)"
    )
    return SQL("WITH ins AS (") + insert + SQL(
        " RETURNING notification_id, originator_id, originator_version),"
        " msg AS (INSERT INTO {rm}rm_messages (session_id, seq, visible, notification_id)"
        " SELECT m.s, m.q, 1, ins.notification_id"
        " FROM unnest({0}::text[], {1}::bigint[], {2}::{id_type}[], {3}::bigint[]) AS m(s, q, o, v)"
        " JOIN ins ON ins.originator_id = m.o AND ins.originator_version = m.v),"
        + pos +
        " SELECT notification_id, 1 / (SELECT count(*) FROM pos) FROM ins ORDER BY notification_id"
    ).format(*map(SQL, params), id_type=SQL(id_type), rm=SQL(rm))


def ordered_function(
    schema: str, events_table: str, id_type: str, rm: str, lock: Any, touch: tuple[str, tuple[str, ...]],
    *, lock_free: bool = False,
) -> tuple[Any, Any]:
    """The events' function, as (the statement that makes it if it is missing, its
    call). In one statement it updates the session's read-model row if given one
    (``touch``: that UPDATE, tables prefixed, ``?`` marks, and its parameters' column
    types, the key last; a NULL key: no update, ADR 0064), takes the events lock
    (``lock``, ADR 0057) and runs ``ordered_insert`` (ADR 0053). ``lock_free``: its
    twin of ADR 0066, which takes no lock there."""
    from psycopg.sql import SQL, Identifier, Literal

    update, types = touch
    marks = [f"${n}" for n in range(len(DOLLARS) + 1, len(DOLLARS) + 1 + len(types))]
    pieces = update.split("?")
    if len(pieces) != len(marks) + 1:
        raise ValueError(f"the touch has {len(pieces) - 1} marks for {len(marks)} types")
    update = "".join(piece + mark for piece, mark in zip(pieces, marks, strict=False)) + pieces[-1]
    function = Identifier(schema, UNLOCKED_FUNCTION if lock_free else ORDERED_FUNCTION)
    if lock_free:
        lock = SQL(NO_LOCK)
    arguments = ", ".join((
        f"{id_type}[]", "bigint[]", "text[]", "bytea[]", "text[]", "bigint[]", f"{id_type}[]", "bigint[]", "text",
        *(_ARGUMENT_TYPES[t] for t in types),
    ))
    # The session row's update finding no row: it waited for that row and the holder
    # deleted it (a rebuild, which writes it again); that statement's snapshot cannot
    # see the new one, the next one's can: once more, then ``1 / 0``'s error, so the
    # caller takes the careful path. Going on would leave the row without this append
    # (review of ADR 0066).
    body = SQL(
        "BEGIN IF {key} IS NOT NULL THEN {update}; IF NOT FOUND THEN {update};"
        " IF NOT FOUND THEN RAISE division_by_zero; END IF; END IF; END IF;"
        " {lock}; RETURN QUERY {insert}; END"
    ).format(
        key=SQL(marks[-1]), update=SQL(update), lock=lock if lock is not None else SQL(""),
        insert=ordered_insert(unnest_insert(schema, events_table, id_type=id_type, params=DOLLARS[:4]),
                              id_type, rm, DOLLARS[4:], lock_free=lock_free),
    )
    create = SQL(
        "CREATE FUNCTION {function}({arguments}) RETURNS TABLE (nid bigint, guard bigint)"
        " LANGUAGE plpgsql AS {body}"
    ).format(function=function, arguments=SQL(arguments), body=Literal(body.as_string()))
    # Made once (a version in its name: a changed body is a new function), by the first
    # append that finds it missing, not at start: a read-only command on a database of
    # an earlier release must create nothing, and a start must not race an append's
    # CREATE FUNCTION (review wave 3).
    make = SQL(
        "DO $ctxc$ BEGIN IF to_regprocedure({signature}) IS NULL THEN EXECUTE {create}; END IF; END $ctxc$"
    ).format(
        signature=Literal(SQL("{function}({arguments})").format(function=function, arguments=SQL(arguments))
                          .as_string()),
        create=Literal(create.as_string()),
    )
    call = SQL("SELECT * FROM {function}({params})").format(
        function=function, params=SQL(", ".join((*PARAMS, *("%s" for _ in marks))))
    )
    return make, call


def columns(stored: Sequence[StoredEvent], id_type: str, encoding: str) -> tuple[BinaryArray, ...]:
    """``unnest_insert``'s four parameters, as binary arrays (``encoding``: the
    connection's, ``text_array``)."""
    return (
        id_array(id_type, [s.originator_id for s in stored], encoding),
        int8_array([s.originator_version for s in stored]),
        text_array([s.topic for s in stored], encoding),
        bytes_array(BYTEA, [s.state for s in stored]),
    )


# ------------------------------------------------------------------ binary arrays
# psycopg's pure-Python implementation (what ``pip install psycopg`` gives) dumps a list
# element by element, looking up a dumper for each: ~230 µs of CPU for the nine
# parameters of one 8-message append, a twelfth of its client time. These build
# PostgreSQL's binary array format directly (~40 µs; ADR 0061). Their dumpers are
# registered on each connection that sends them (``binary_arrays_on``), never on
# psycopg's global adapters: a host's own connections are not touched.

INT8, TEXT, BYTEA, UUID_OID = 20, 25, 17, 2950
_ARRAY_OF = {INT8: 1016, TEXT: 1009, BYTEA: 1001, UUID_OID: 2951}
_HEAD = struct.Struct("!iiIii")  # ndim 1, no NULLs, element oid, length, lower bound 1
_EMPTY = struct.Struct("!iiI")  # ndim 0


class BinaryArray(bytes):
    """A one-dimensional array without NULLs in PostgreSQL's binary format."""

    __slots__ = ()
    element_oid = 0


class Int8Array(BinaryArray):
    __slots__ = ()
    element_oid = INT8


class TextArray(BinaryArray):
    __slots__ = ()
    element_oid = TEXT


class ByteaArray(BinaryArray):
    __slots__ = ()
    element_oid = BYTEA


class UuidArray(BinaryArray):
    __slots__ = ()
    element_oid = UUID_OID


_CLASSES: dict[int, type[BinaryArray]] = {c.element_oid: c for c in (Int8Array, TextArray, ByteaArray, UuidArray)}


def _array_head(oid: int, n: int) -> bytes:
    return _HEAD.pack(1, 0, oid, n, 1) if n else _EMPTY.pack(0, 0, oid)


def int8_array(values: Sequence[int]) -> Int8Array:
    n = len(values)
    return Int8Array(_array_head(INT8, n) + struct.pack(f"!{'iq' * n}", *chain.from_iterable((8, v) for v in values)))


def bytes_array(oid: int, values: Iterable[bytes]) -> BinaryArray:
    items = list(values)
    parts = [_array_head(oid, len(items))]
    for item in items:
        parts.append(len(item).to_bytes(4, "big"))
        parts.append(item)
    return _CLASSES[oid](b"".join(parts))


def text_array(values: Iterable[str], encoding: str) -> TextArray:
    """``encoding``: the connection's client encoding (``conn.info.encoding``), in which
    PostgreSQL reads binary text, as psycopg encodes a ``str`` parameter (review wave 4:
    UTF-8 regardless put ``cafÃ©`` in ``rm_messages`` on a LATIN1 connection)."""
    return bytes_array(TEXT, (v.encode(encoding) for v in values))  # type: ignore[return-value]


def id_array(id_type: str, values: Sequence[Any], encoding: str) -> BinaryArray:
    """Originator ids as the events table stores them (``uuid``, or ``text`` when
    eventsourcing is configured so)."""
    if id_type == "uuid":
        return bytes_array(UUID_OID, (v.bytes if isinstance(v, UUID) else UUID(str(v)).bytes for v in values))
    return text_array((str(v) for v in values), encoding)


_READY: weakref.WeakSet[Any] = weakref.WeakSet()
_DUMPERS: list[tuple[type[BinaryArray], type]] = []


def _dumpers() -> list[tuple[type[BinaryArray], type]]:
    # One dumper class per array type for the process: psycopg's C implementation keeps
    # every class ever registered (``AdaptersMap._optimised``), so a class made per
    # registration grew with every cursor (review wave 4).
    if not _DUMPERS:
        from psycopg.adapt import Dumper
        from psycopg.pq import Format

        def dump(self: Any, obj: Any) -> Any:
            return obj

        _DUMPERS.extend(
            (cls, type(f"{cls.__name__}Dumper", (Dumper,), {"format": Format.BINARY, "oid": _ARRAY_OF[element],
                                                            "dump": dump}))
            for element, cls in _CLASSES.items()
        )
    return _DUMPERS


def binary_arrays_on(conn: Any) -> None:
    """Register the ``BinaryArray`` dumpers on this psycopg connection or cursor (once).
    A cursor copies its connection's adapters when it is made: register on the
    connection before making the cursors that send arrays, or on the cursor itself."""
    if conn in _READY:
        return
    for cls, dumper in _dumpers():
        conn.adapters.register_dumper(cls, dumper)
    _READY.add(conn)
