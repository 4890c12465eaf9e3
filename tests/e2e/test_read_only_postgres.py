""""Read-only commands never create a database" on
PostgreSQL too. ``ctxc sessions --db postgresql://...?schema=TYPO`` created the
mistyped schema and 17 tables, as a missing SQLite file once was; it now refuses with
``storage_error`` naming the schema, and creates nothing. A schema of ours still reads."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from backends import POSTGRES_URL, drop_schema
from cli_inprocess import run_cli
from context_compaction import Settings, bootstrap

pytestmark = pytest.mark.postgres


def _schema_exists(schema: str) -> bool:
    with psycopg.connect(POSTGRES_URL, connect_timeout=5) as conn:
        row = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    return row is not None


@pytest.fixture
def schema() -> str:
    name = f"ctxc_rev15_{uuid.uuid4().hex[:10]}"
    yield name
    drop_schema(name)


def test_a_read_only_command_on_a_missing_schema_creates_nothing(
    schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{POSTGRES_URL}?schema={schema}"
    for argv in (["sessions"], ["events"], ["history", "S"]):
        capsys.readouterr()
        assert run_cli([*argv, "--db", url]) == 2  # a missing input (issue 35's exit-code table)
        err = capsys.readouterr().err
        assert err.startswith("error: storage_error: ") and schema in err and "creates none" in err, err
        assert not _schema_exists(schema), argv


def test_a_read_only_command_reads_a_schema_of_ours(schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{POSTGRES_URL}?schema={schema}"
    with bootstrap(Settings(database_url=url, summarizer="extractive")) as bus:
        assert bus.dispatch_json({"type": "start_session", "session_id": "S", "model": "gpt-4o"})["ok"]
    capsys.readouterr()
    assert run_cli(["sessions", "--db", url]) == 0
    assert "S" in capsys.readouterr().out
