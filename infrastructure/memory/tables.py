"""The read model's tables as dicts keyed like the SQL tables' primary keys.

Rows are tuples in the SQL tables' column order (``table_rows`` answers as
``SqlReadModel.table_rows`` does, so a contract test compares the two backends row for
row). Writes go through ``put``/``delete`` inside ``transaction()``, which undoes them
all if the block raises: the events and their projection commit together (ADR 0003).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..readmodel.schema import PROJECTED_TABLES

Row = tuple[Any, ...]
_MISSING = object()

#: Column order of each projected table (``readmodel/schema.py``'s CREATE statements).
COLUMNS: dict[str, tuple[str, ...]] = {
    "rm_sessions": (
        "session_id", "aggregate_id", "model", "agent_token_limit", "version", "next_seq",
        "context_generation", "active_checkpoint_id", "message_count", "invalidated_count",
        "checkpoint_count", "deleted", "created_at", "updated_at", "learned_windows",
        "cleared_count",
    ),
    "rm_messages": ("session_id", "seq", "visible", "notification_id"),
    "rm_commands": ("command_id", "session_id", "kind", "first_seq", "last_seq"),
    "rm_checkpoints": (
        "checkpoint_id", "session_id", "generation", "parent_checkpoint_id", "summary",
        "first_retained_seq", "source_max_seq", "trigger_reason", "provider_kind", "model",
        "tokens_before", "tokens_after", "degraded", "summary_source", "created_at",
        "version", "ledger", "provider_state",
    ),
    "rm_invalidations": (
        "session_id", "version", "kind", "ranges", "excluded", "reason", "generation", "created_at",
    ),
    "rm_imports": (
        "session_id", "version", "source", "imported_messages", "skipped_messages",
        "legacy_seq_upto", "last_compressed_message_at", "created_at",
    ),
    "rm_cleared": ("session_id", "seq", "placeholder", "version"),
    "rm_search": ("session_id", "seq", "role", "turn_id", "body"),
    "rm_pins": ("session_id", "seq"),
    "rm_reverts": (
        "checkpoint_id", "session_id", "version", "now_active", "generation", "command_id",
        "created_at",
    ),
}
assert set(COLUMNS) == set(PROJECTED_TABLES)
INDEX = {table: {name: i for i, name in enumerate(cols)} for table, cols in COLUMNS.items()}


class Tables:
    """Projected tables (``data[table][key] = row``) plus, per session, the stored
    state of each message (``bodies``: what SQL joins from the events table)."""

    def __init__(self) -> None:
        self.data: dict[str, dict[Any, Row]] = {table: {} for table in COLUMNS}
        self.bodies: dict[tuple[str, int], bytes] = {}
        #: rm_search_marks: per session, the highest seq searches indexed (ADR 0049).
        self.search_marks: dict[str, int] = {}
        self._undo: list[tuple[dict[Any, Any], Any, Any]] | None = None

    def clear(self) -> None:
        for rows in self.data.values():
            rows.clear()
        self.bodies.clear()
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

    def update(self, table: str, key: Any, **values: Any) -> None:
        row = list(self.data[table][key])
        index = INDEX[table]
        for name, value in values.items():
            row[index[name]] = value
        self.put(table, key, tuple(row))

    def delete(self, table: str, key: Any) -> bool:
        rows = self.data[table]
        if key not in rows:
            return False
        self._remember(rows, key)
        del rows[key]
        return True

    def put_body(self, key: tuple[str, int], state: bytes) -> None:
        self._remember(self.bodies, key)
        self.bodies[key] = state

    def rows(self, table: str) -> list[Row]:
        """Every row in primary-key order (as ``SqlReadModel.table_rows``)."""
        return [row for _, row in sorted(self.data[table].items())]
