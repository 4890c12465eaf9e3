"""The two storage backends every contract test runs against (issue 5), and the
memory backend the handler unit tests run on (ADR 0045)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import Harness, memory_url

POSTGRES_URL = os.environ.get("CTXC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
RUN_ID = uuid.uuid4().hex[:8]


def postgres_reachable() -> str | None:
    """None when PostgreSQL answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return None
    except Exception as exc:  # noqa: BLE001 - reported to the test run
        return f"{type(exc).__name__}: {exc}"


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


#: The structure of a schema, as far as a test could have changed it: tables and their
#: columns, indexes, constraints, triggers, functions, privileges and storage options.
_FINGERPRINT = """
SELECT 'col', c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod)
       || ':' || a.attnotnull || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE n.nspname = %(s)s AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL SELECT 'rel', c.relname || ':' || c.relkind::text || ':' || coalesce(c.relacl::text, '')
       || ':' || coalesce(c.reloptions::text, '')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s
UNION ALL SELECT 'idx', indexdef FROM pg_indexes WHERE schemaname = %(s)s
UNION ALL SELECT 'con', conname || ':' || pg_get_constraintdef(co.oid)
  FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace WHERE n.nspname = %(s)s
UNION ALL SELECT 'trg', t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s
UNION ALL SELECT 'fn', p.proname || ':' || md5(p.prosrc) FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(s)s
UNION ALL SELECT 'nsp', coalesce(nspacl::text, '') FROM pg_namespace WHERE nspname = %(s)s
"""


class SchemaPool:
    """PostgreSQL schemas of this process, emptied after a test and handed to the next.

    A schema the library creates costs a test about 0.1 s (19 tables with their indexes);
    emptying one costs 3 ms. A schema goes back to the pool only when its structure is
    still the one a fresh ``bootstrap`` builds (a test that altered, granted or added
    anything gets its schema dropped) and only its rows the library writes at creation
    are left in it: what the next test sees is what a new schema would show."""

    def __init__(self) -> None:
        self.free: list[str] = []
        self.pristine: tuple[frozenset[tuple[str, str]], dict[str, list[tuple]]] | None = None

    @staticmethod
    def _read(conn: Any, schema: str) -> tuple[frozenset[tuple[str, str]], dict[str, list[tuple]]]:
        shape = frozenset(conn.execute(_FINGERPRINT, {"s": schema}).fetchall())
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        rows = {t: conn.execute(f'SELECT * FROM "{schema}"."{t}"').fetchall() for t in tables}
        return shape, {t: r for t, r in rows.items() if r}

    def _reference(self) -> tuple[frozenset[tuple[str, str]], dict[str, list[tuple]]]:
        if self.pristine is None:
            import psycopg

            from context_compaction import Settings, bootstrap

            schema = f"ctxc_{RUN_ID}_{uuid.uuid4().hex[:10]}"
            bootstrap(Settings(database_url=f"{POSTGRES_URL}?schema={schema}")).close()
            with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as conn:
                self.pristine = self._read(conn, schema)
            self.free.append(schema)
        return self.pristine

    def take(self) -> str:
        if not self.free:
            self._reference()
        return self.free.pop() if self.free else f"ctxc_{RUN_ID}_{uuid.uuid4().hex[:10]}"

    def give_back(self, schema: str) -> None:
        import psycopg

        try:
            shape, rows = self._reference()
            with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as conn:
                if frozenset(conn.execute(_FINGERPRINT, {"s": schema}).fetchall()) != shape:
                    raise LookupError("changed")
                with conn.transaction():
                    conn.execute("SET LOCAL lock_timeout = '2s'")
                    for table, in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s",
                                               (schema,)).fetchall():
                        conn.execute(f'DELETE FROM "{schema}"."{table}"')
                    for table, kept in rows.items():
                        marks = ", ".join(["%s"] * len(kept[0]))
                        conn.cursor().executemany(f'INSERT INTO "{schema}"."{table}" VALUES ({marks})', kept)
                    for seq, in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = %s",
                                             (schema,)).fetchall():
                        conn.execute(f'ALTER SEQUENCE "{schema}"."{seq}" RESTART')
                    if self._read(conn, schema) != (shape, rows):
                        raise LookupError("not emptied")
        except Exception:  # noqa: BLE001 - a schema that cannot be emptied is dropped instead
            drop_schema(schema)
            return
        self.free.append(schema)

    def close(self) -> None:
        while self.free:
            drop_schema(self.free.pop())


POOL = SchemaPool()


class Databases:
    """Fresh databases for one test: SQLite files, PostgreSQL schemas dropped afterwards,
    or ``memory://`` stores."""

    def __init__(self, kind: str, tmp_path: Path, *, recycle: bool = True) -> None:
        self.kind = kind
        #: PostgreSQL schemas from and back to ``POOL`` (False for tests that break the
        #: store on purpose: they get schemas of their own, dropped afterwards)
        self.recycle = recycle
        self.tmp_path = tmp_path
        self.urls: dict[str, str] = {}
        self.harnesses: list[Harness] = []
        self.schemas: list[str] = []

    def url(self, name: str = "main") -> str:
        if name not in self.urls:
            if self.kind == "memory":
                self.urls[name] = memory_url()
            elif self.kind == "sqlite":
                self.urls[name] = f"sqlite:///{self.tmp_path / name}.db"
            else:
                schema = POOL.take() if self.recycle else f"ctxc_{RUN_ID}_{uuid.uuid4().hex[:10]}"
                self.schemas.append(schema)
                self.urls[name] = f"{POSTGRES_URL}?schema={schema}"
        return self.urls[name]

    def harness(self, name: str = "main", **settings: Any) -> Harness:
        settings.setdefault("summarizer", "extractive")
        h = Harness(self.url(name), **settings)
        self.harnesses.append(h)
        return h

    def cleanup(self) -> None:
        for h in self.harnesses:
            h.close()
        for schema in self.schemas:
            POOL.give_back(schema) if self.recycle else drop_schema(schema)


MakeHarness = Callable[..., Harness]
