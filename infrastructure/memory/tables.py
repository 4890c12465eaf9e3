"""The read model's tables as dicts keyed like the SQL tables' primary keys, and the
table operations (``readmodel/ops.py``) the one projection writes them with (ADR 0050).

Tables, columns and keys come from ``readmodel/schema.py``'s ``PROJECTED``. Rows are
tuples in column order (``table_rows`` answers as ``SqlReadModel.table_rows`` does, so a
contract test compares the two backends row for row). Writes inside ``transaction()``
are undone if the block raises: the events and their projection commit together (ADR
0003). A key or unique column set already taken raises eventsourcing's
``IntegrityError``, as the SQL constraints make the driver raise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import IntegrityError

from ..readmodel.ops import Between
from ..readmodel.schema import PROJECTED, Table

Row = tuple[Any, ...]
_MISSING = object()

#: Column order of each projected table.
COLUMNS: dict[str, tuple[str, ...]] = {table.name: table.column_names for table in PROJECTED}
INDEX = {table: {name: i for i, name in enumerate(cols)} for table, cols in COLUMNS.items()}


def _key_of(table: Table) -> Callable[[Row], Any]:
    """A row's dict key: the key column's value, or a tuple of the key columns'."""
    at = [INDEX[table.name][c] for c in table.key]
    if len(at) == 1:
        i = at[0]
        return lambda row: row[i]
    return lambda row: tuple(row[i] for i in at)


_KEYS = {table.name: _key_of(table) for table in PROJECTED}
_UNIQUE = {
    table.name: [[INDEX[table.name][c] for c in cols] for cols in table.unique] for table in PROJECTED
}


class Tables:
    """Projected tables (``data[table][key] = row``) plus the stored state of each
    message event by notification id (``bodies``: what SQL joins from the events
    table; not part of the projection, so ``clear`` keeps them)."""

    def __init__(self) -> None:
        self.data: dict[str, dict[Any, Row]] = {table: {} for table in COLUMNS}
        self.bodies: dict[int, bytes] = {}
        #: rm_search_marks: per session, the highest seq searches indexed (ADR 0049).
        self.search_marks: dict[str, int] = {}
        self._undo: list[tuple[dict[Any, Any], Any, Any]] | None = None
        self.rowcount = 0

    def clear(self) -> None:
        for rows in self.data.values():
            rows.clear()
        self.search_marks.clear()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        assert self._undo is None, "transactions do not nest"
        self._undo = []
        try:
            yield
        except BaseException:
            for table, key, old in reversed(self._undo):
                if old is _MISSING:
                    table.pop(key, None)
                else:
                    table[key] = old
            raise
        finally:
            self._undo = None

    def _remember(self, table: dict[Any, Any], key: Any) -> None:
        if self._undo is not None:
            self._undo.append((table, key, table.get(key, _MISSING)))

    def get(self, table: str, key: Any) -> Row | None:
        return self.data[table].get(key)

    def put(self, table: str, key: Any, row: Row) -> None:
        rows = self.data[table]
        self._remember(rows, key)
        rows[key] = row

    def put_body(self, notification_id: int, state: bytes) -> None:
        self._remember(self.bodies, notification_id)
        self.bodies[notification_id] = state

    def rows(self, table: str) -> list[Row]:
        """Every row in primary-key order (as ``SqlReadModel.table_rows``)."""
        return [row for _, row in sorted(self.data[table].items())]

    # ------------------------------------------- TableOps (readmodel/ops.py)
    def insert(self, table: str, rows: Sequence[Row], *, if_absent: bool = False) -> None:
        stored = self.data[table]
        key_of = _KEYS[table]
        width = len(COLUMNS[table])
        added = 0
        for row in rows:
            assert len(row) == width, f"{table} rows have {width} columns"
            key = key_of(row)
            if key in stored:
                if if_absent:
                    continue
                raise IntegrityError(f"{table}: key already taken")  # (the SQL primary key)
            self._check_unique(table, row)
            self.put(table, key, tuple(row))
            added += 1
        self.rowcount = added

    def _check_unique(self, table: str, row: Row, *, besides: Any = _MISSING) -> None:
        """SQL's UNIQUE: a clash with another row (not ``besides``, the row's own old
        key); NULLs never clash."""
        key_of = _KEYS[table]
        for at in _UNIQUE[table]:
            wanted = [row[i] for i in at]
            if None in wanted:
                continue
            if any([other[i] for i in at] == wanted and key_of(other) != besides
                   for other in self.data[table].values()):
                raise IntegrityError(f"{table}: unique columns already taken")

    def upsert(self, table: str, row: Row, update: tuple[str, ...], when_same: tuple[str, ...]) -> None:
        stored = self.data[table].get(_KEYS[table](row))
        if stored is None:
            self.insert(table, [row])
            return
        index = INDEX[table]
        if any(stored[index[c]] != row[index[c]] for c in when_same):
            self.rowcount = 0
            return
        self.update_row(table, stored, {c: row[index[c]] for c in update}, {})
        self.rowcount = 1

    def update(
        self, table: str, where: Mapping[str, Any], *, values: Mapping[str, Any] = {},
        add: Mapping[str, Any] = {}, between: Between | None = None,
    ) -> None:
        changed = 0
        for row in self._matching(table, where, between):
            self.update_row(table, row, values, add)
            changed += 1
        self.rowcount = changed

    def update_row(self, table: str, row: Row, values: Mapping[str, Any], add: Mapping[str, Any]) -> None:
        """As SQL's UPDATE: ``NULL + n`` stays NULL, a changed key moves the row, a
        taken key or unique value is refused."""
        index = INDEX[table]
        new = list(row)
        for name, value in values.items():
            new[index[name]] = value
        for name, value in add.items():
            at = index[name]
            new[at] = None if new[at] is None or value is None else new[at] + value
        key_of = _KEYS[table]
        old_key, new_key = key_of(row), key_of(new)
        if _UNIQUE[table]:
            self._check_unique(table, new, besides=old_key)
        if new_key != old_key:
            if new_key in self.data[table]:
                raise IntegrityError(f"{table}: key already taken")
            self._remember(self.data[table], old_key)
            del self.data[table][old_key]
        self.put(table, new_key, tuple(new))

    def delete(self, table: str, where: Mapping[str, Any], *, between: Between | None = None) -> None:
        key_of = _KEYS[table]
        gone = [key_of(row) for row in self._matching(table, where, between)]
        for key in gone:
            self._remember(self.data[table], key)
            del self.data[table][key]
        self.rowcount = len(gone)

    def select_one(self, table: str, columns: tuple[str, ...], where: Mapping[str, Any]) -> Row | None:
        rows = self.select(table, columns, where)
        return rows[0] if rows else None

    def select(self, table: str, columns: tuple[str, ...], where: Mapping[str, Any]) -> list[Row]:
        index = INDEX[table]
        return [tuple(row[index[c]] for c in columns) for row in self._matching(table, where, None)]

    def _matching(self, table: str, where: Mapping[str, Any], between: Between | None) -> list[Row]:
        """The rows equal to ``where`` (within ``between``): by key when ``where`` is
        exactly the key, else by a scan (the projection scans only on events that are
        rare next to appends: invalidations, unknown aggregates)."""
        spec_key = _KEY_COLUMNS[table]
        if between is None and tuple(where) == spec_key:
            key = tuple(where.values())
            row = self.data[table].get(key[0] if len(key) == 1 else key)
            return [row] if row is not None else []
        if any(v is None for v in where.values()):
            return []  # (SQL: ``column = NULL`` matches no row)
        index = INDEX[table]
        tests = [(index[c], v) for c, v in where.items()]
        rows = [r for r in self.data[table].values() if all(r[i] == v for i, v in tests)]
        if between is not None:
            i, lo, hi = index[between[0]], between[1], between[2]
            rows = [r for r in rows if lo <= r[i] <= hi]
        return rows


_KEY_COLUMNS = {table.name: table.key for table in PROJECTED}
