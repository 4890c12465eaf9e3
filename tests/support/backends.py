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


class Databases:
    """Fresh databases for one test: SQLite files, PostgreSQL schemas dropped afterwards,
    or ``memory://`` stores."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
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
                schema = f"ctxc_{RUN_ID}_{uuid.uuid4().hex[:10]}"
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
            drop_schema(schema)


MakeHarness = Callable[..., Harness]
