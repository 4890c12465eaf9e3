"""The table operations the projection is written against, and their SQL form (ADR 0050).

``SqlOps`` renders them as SQL on a cursor, ``memory.tables.Tables`` applies them to
dicts. Rows are tuples in the table's column order; a broken key or unique constraint
raises. ``rowcount`` (rows the last operation changed) is read only where a handler
needs it: on a PostgreSQL pipeline (``PipelinedCur``) reading it waits for the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

from ..database import Cur
from .schema import TABLES

Row = tuple[Any, ...]
#: Rows of one multi-row INSERT on a pipeline (a statement binds at most 65,535 parameters).
ROWS_PER_STATEMENT = 400
#: (column, low, high): ``low <= column <= high``.
Between = tuple[str, Any, Any]


class TableOps(Protocol):
    @property
    def rowcount(self) -> int: ...

    def insert(self, table: str, rows: Sequence[Row], *, if_absent: bool = False) -> None:
        """Insert whole rows; ``if_absent``: a row whose key is taken is skipped."""

    def upsert(self, table: str, row: Row, update: tuple[str, ...], when_same: tuple[str, ...]) -> None:
        """Insert ``row``; if its key is taken, set the ``update`` columns from it when
        the stored row agrees on the ``when_same`` columns (else nothing: rowcount 0)."""

    def update(
        self, table: str, where: Mapping[str, Any], *, values: Mapping[str, Any] = {},
        add: Mapping[str, Any] = {}, between: Between | None = None,
    ) -> None:
        """Set ``values`` and increment the ``add`` columns of the rows equal to ``where``
        (and within ``between``)."""

    def delete(self, table: str, where: Mapping[str, Any], *, between: Between | None = None) -> None: ...

    def select_one(self, table: str, columns: tuple[str, ...], where: Mapping[str, Any]) -> Row | None: ...

    def select(self, table: str, columns: tuple[str, ...], where: Mapping[str, Any]) -> list[Row]: ...


class SqlOps:
    """``TableOps`` as SQL on one cursor: the statements the handlers wrote by hand
    before ADR 0050, rendered once per shape (cached) and run with bound parameters."""

    __slots__ = ("cur",)

    def __init__(self, cur: Cur) -> None:
        self.cur = cur

    @property
    def rowcount(self) -> int:
        return self.cur.rowcount

    @property
    def deferred_checks(self) -> bool:
        """Reading ``rowcount`` costs a round trip here (a PostgreSQL pipeline): a handler
        checks with ``expect_one`` instead, which fails the transaction at its COMMIT."""
        return self.cur.deferred_checks

    def expect_one(self, table: str, where: Mapping[str, Any]) -> None:
        self.cur.expect_one(table, dict(where))  # type: ignore[attr-defined]

    def insert(self, table: str, rows: Sequence[Row], *, if_absent: bool = False) -> None:
        if len(rows) == 1:
            self.cur.execute(_insert_sql(table, if_absent), rows[0])
        elif rows and self.cur.deferred_checks:
            # A pipeline: multi-row statements (psycopg's executemany syncs, a round trip).
            for i in range(0, len(rows), ROWS_PER_STATEMENT):
                chunk = rows[i:i + ROWS_PER_STATEMENT]
                self.cur.execute(_insert_sql(table, if_absent, len(chunk)), [x for row in chunk for x in row])
        elif rows:
            self.cur.executemany(_insert_sql(table, if_absent), rows)

    def upsert(self, table: str, row: Row, update: tuple[str, ...], when_same: tuple[str, ...]) -> None:
        self.cur.execute(_upsert_sql(table, update, when_same), row)

    def update(
        self, table: str, where: Mapping[str, Any], *, values: Mapping[str, Any] = {},
        add: Mapping[str, Any] = {}, between: Between | None = None,
    ) -> None:
        sql = _update_sql(table, tuple(values), tuple(add), tuple(where), between[0] if between else None)
        params = (*values.values(), *add.values(), *where.values())
        self.cur.execute(sql, (*params, between[1], between[2]) if between else params)

    def delete(self, table: str, where: Mapping[str, Any], *, between: Between | None = None) -> None:
        sql = _delete_sql(table, tuple(where), between[0] if between else None)
        params = tuple(where.values())
        self.cur.execute(sql, (*params, between[1], between[2]) if between else params)

    def select_one(self, table: str, columns: tuple[str, ...], where: Mapping[str, Any]) -> Row | None:
        return self.cur.execute(_select_sql(table, columns, tuple(where)), tuple(where.values())).fetchone()

    def select(self, table: str, columns: tuple[str, ...], where: Mapping[str, Any]) -> list[Row]:
        return self.cur.execute(_select_sql(table, columns, tuple(where)), tuple(where.values())).fetchall()


def _where(columns: tuple[str, ...], between: str | None) -> str:
    terms = [f"{c} = ?" for c in columns]
    if between is not None:
        terms += [f"{between} >= ?", f"{between} <= ?"]
    return " WHERE " + " AND ".join(terms) if terms else ""


@lru_cache(maxsize=None)
def _insert_sql(table: str, if_absent: bool, rows: int = 1) -> str:
    spec = TABLES[table]
    names = spec.column_names
    values = ", ".join([f"({', '.join('?' * len(names))})"] * rows)
    sql = f"INSERT INTO {{t}}{table} ({', '.join(names)}) VALUES {values}"
    return sql + (f" ON CONFLICT ({', '.join(spec.key)}) DO NOTHING" if if_absent else "")


@lru_cache(maxsize=None)
def _upsert_sql(table: str, update: tuple[str, ...], when_same: tuple[str, ...]) -> str:
    sets = ", ".join(f"{c} = excluded.{c}" for c in update)
    same = " AND ".join(f"{{t}}{table}.{c} = excluded.{c}" for c in when_same)
    return (_insert_sql(table, False) + f" ON CONFLICT ({', '.join(TABLES[table].key)})"
            f" DO UPDATE SET {sets}" + (f" WHERE {same}" if same else ""))


@lru_cache(maxsize=None)
def _update_sql(
    table: str, values: tuple[str, ...], add: tuple[str, ...], where: tuple[str, ...], between: str | None
) -> str:
    sets = [f"{c} = ?" for c in values] + [f"{c} = {c} + ?" for c in add]
    return f"UPDATE {{t}}{table} SET {', '.join(sets)}" + _where(where, between)


@lru_cache(maxsize=None)
def _delete_sql(table: str, where: tuple[str, ...], between: str | None) -> str:
    return f"DELETE FROM {{t}}{table}" + _where(where, between)


@lru_cache(maxsize=None)
def _select_sql(table: str, columns: tuple[str, ...], where: tuple[str, ...]) -> str:
    return f"SELECT {', '.join(columns)} FROM {{t}}{table}" + _where(where, None)
