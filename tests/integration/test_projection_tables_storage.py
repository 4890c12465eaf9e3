"""The declared tables (ADR 0050) as PostgreSQL creates them: the same columns, in the
same order, and the same keys as ``schema.PROJECTED`` (SQLite and memory:
``tests/unit/test_projection_tables.py``)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL
from context_compaction.infrastructure.readmodel.schema import PROJECTED
from helpers import Harness, ok

pytestmark = pytest.mark.postgres


def test_postgres_creates_every_declared_table_with_its_columns_and_key(pg_databases: Any) -> None:
    h: Harness = pg_databases.harness("declared-tables")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    schema = h.url.split("schema=")[1]
    with psycopg.connect(POSTGRES_URL) as conn:
        for table in PROJECTED:
            columns = conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                (schema, table.name),
            ).fetchall()
            # (rm_search's stored tsvector is the engine's, after the declared ones: ADR 0054)
            derived = ("words",) if table.name == "rm_search" else ()
            assert tuple(c[0] for c in columns) == table.column_names + derived, table.name
            key = conn.execute(
                "SELECT a.attname FROM pg_index i"
                " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
                " WHERE i.indrelid = %s::regclass AND i.indisprimary"
                " ORDER BY array_position(i.indkey, a.attnum)",
                (f'"{schema}".{table.name}',),
            ).fetchall()
            assert tuple(k[0] for k in key) == table.key, table.name
