"""Issue 36 finding 4: a store opened by a role or file that cannot write serves every
query (history, search of what is indexed, projection, replay, the feed, verify) and
refuses writes with a clear ``storage_error`` (ADR 0071). Before, a SELECT-only
PostgreSQL role or a read-only SQLite file failed every command at start ("cannot be
used: permission denied"), ``ctxc history`` and ``ctxc verify`` included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import POSTGRES_URL, drop_schema
from cli_inprocess import run_cli
from context_compaction import Settings, bootstrap
from read_only_queries import QUERIES, WRITES, answers_of


def _fill(url: str) -> None:
    with bootstrap(Settings(database_url=url, summarizer="extractive")) as bus:
        assert bus.dispatch_json({"type": "start_session", "session_id": "S", "model": "gpt-4o"})["ok"]
        assert bus.dispatch_json({"type": "append_messages", "session_id": "S",
                                  "messages": [{"role": "user", "content": "hello kiwi"}]})["ok"]
        # (indexed now: a read-only store searches what is indexed)
        assert bus.dispatch_json({"type": "search_history", "session_id": "S", "query": "kiwi"})["result"]["hits"]


def _check(answers: dict[str, Any]) -> None:
    for query in QUERIES:
        answer = answers[json.dumps(query)]
        assert answer["ok"], (query, answer)
    assert [h["seq"] for h in answers[json.dumps(QUERIES[1])]["result"]["hits"]] == [1]
    assert [m["content"] for m in answers[json.dumps(QUERIES[0])]["result"]["messages"]] == ["hello kiwi"]
    for write in WRITES:
        error = answers[json.dumps(write)]["error"]
        assert error["code"] == "storage_error" and error["details"]["cause"] == "read_only", error
        assert "read-only" in error["message"] and write["type"] in error["message"], error


@pytest.fixture
def readonly_role() -> Iterator[tuple[str, str]]:
    import psycopg

    from backends import postgres_reachable

    if postgres_reachable() is not None:
        pytest.fail("PostgreSQL is not reachable", pytrace=False)
    schema, role = f"ctxc_ro_{uuid.uuid4().hex[:10]}", f"ctxc_ro_{uuid.uuid4().hex[:10]}"
    _fill(f"{POSTGRES_URL}?schema={schema}")
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    host = POSTGRES_URL.split("@", 1)[1]
    try:
        yield f"postgresql://{role}@{host}?schema={schema}", schema
    finally:
        drop_schema(schema)
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


@pytest.mark.postgres
def test_a_select_only_postgres_role_serves_every_query_and_refuses_writes(
    readonly_role: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = readonly_role
    _check(answers_of(url))
    capsys.readouterr()
    assert run_cli(["history", "S", "--db", url]) == 0
    assert "hello kiwi" in capsys.readouterr().out
    assert run_cli(["verify", "--db", url]) == 0, capsys.readouterr()
    assert run_cli(["events", "--db", url]) == 0
    assert '"Started"' in capsys.readouterr().out
    # A command that writes is refused at start, saying why.
    assert run_cli(["compact", "S", "--db", url]) != 0
    err = capsys.readouterr().err
    assert "read-only" in err and "ctxc compact" in err, err


_AS_NOBODY = """
import json, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from context_compaction import Settings, bootstrap
import context_compaction.infrastructure.bootstrap, context_compaction.infrastructure.verify
import read_only_queries as t
from harness import Inspect
with bootstrap(Settings(database_url="memory://warm", summarizer="extractive")) as warm:  # (lazy imports, BPE files)
    warm.dispatch_json({"type": "start_session", "session_id": "S", "model": "gpt-4o"})
    for cmd in t.QUERIES + t.WRITES:
        warm.dispatch_json(cmd)
os.setgid(65534); os.setuid(65534)   # (imported first: the interpreter's files are root's)
answers = t.answers_of(sys.argv[1])
with bootstrap(Settings(database_url=sys.argv[1])) as bus:
    report = Inspect(bus).verify()
print(json.dumps({"answers": answers, "verify_ok": report.ok}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to another user to make the file unwritable to it")
def test_a_read_only_sqlite_file_serves_every_query_and_refuses_writes(tmp_path: Path) -> None:
    # (pytest's tmp_path is private to root: the other user gets a directory it can reach)
    folder = Path(tempfile.mkdtemp(prefix="ctxc-ro-", dir="/tmp"))
    try:
        _read_only_sqlite(folder, tmp_path)
    finally:
        shutil.rmtree(folder)


def _read_only_sqlite(folder: Path, tmp_path: Path) -> None:
    path = folder / "ro.db"
    _fill(f"sqlite:///{path}")
    path.chmod(0o444)
    folder.chmod(0o777)  # (SQLite keeps the -shm beside the file; the file itself stays read-only)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support"),
           "HOME": str(folder)}
    done = subprocess.run([sys.executable, "-c", _AS_NOBODY, f"sqlite:///{path}"], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(folder))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    _check(out["answers"])
    assert out["verify_ok"] is True
