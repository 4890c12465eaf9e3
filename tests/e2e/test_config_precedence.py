"""One order of settings for every entry point (issue 35, finding 1; ADR 0069): options
(or keyword arguments), then the settings file, then ``CTXC_*`` variables, then the
defaults. Each test gives a file and a variable that disagree and checks which store
the data reached: the file's, never the variable's nor ``./ctxc.db``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from backends import POSTGRES_URL
from helpers import serving
from context_compaction.application.contracts.settings import Settings
from context_compaction.infrastructure.eventstore import SessionsApplication

CTXC = str(Path(sys.executable).with_name("ctxc"))
TOKEN = "precedence-token-0123456789abcdef"
START = json.dumps({"type": "start_session", "session_id": "s1", "model": "gpt-4o"})


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("CTXC_") or k.upper().startswith("CTXC_TEST_")}
    return {**env, **extra}


def _write(path: Path, data: dict[str, object]) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_from_file_the_file_wins_over_the_variable_and_keywords_over_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXC_DATABASE_URL", "sqlite:///from-env.db")
    monkeypatch.setenv("CTXC_SUMMARIZER", "extractive")
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__RESERVE_TOKENS", "111")
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__KEEP_RECENT_TOKENS", "222")
    path = _write(tmp_path / "s.json", {"database_url": "sqlite:///from-file.db",
                                        "context_compaction": {"reserve_tokens": 333}})
    s = Settings.from_file(path)
    assert s.database_url == f"sqlite:///{tmp_path / 'from-file.db'}"  # (relative to the file)
    assert s.summarizer == "extractive"  # the file does not set it: the variable applies
    # sections merge field by field: the file's field, the variable's sibling
    assert (s.context_compaction.reserve_tokens, s.context_compaction.keep_recent_tokens) == (333, 222)
    s = Settings.from_file(path, database_url="sqlite:///from-code.db")
    assert s.database_url == "sqlite:///from-code.db"
    # the file applies to that one call only
    assert Settings().database_url == "sqlite:///from-env.db"


def test_cli_config_file_database_wins_over_the_variable_and_db_over_both(tmp_path: Path) -> None:
    config = _write(tmp_path / "prod.json", {"database_url": f"sqlite:///{tmp_path / 'file.db'}"})
    env = _env(CTXC_DATABASE_URL=f"sqlite:///{tmp_path / 'env.db'}")
    proc = subprocess.run([CTXC, "--config", str(config), "dispatch"], input=START + "\n", env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "file.db").exists()
    assert not (tmp_path / "env.db").exists() and not (tmp_path / "ctxc.db").exists()
    proc = subprocess.run([CTXC, "--config", str(config), "--db", str(tmp_path / "opt.db"), "dispatch"],
                          input=START + "\n", env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "opt.db").exists() and not (tmp_path / "env.db").exists()
    # without a file and an option, the variable applies
    proc = subprocess.run([CTXC, "dispatch"], input=START + "\n", env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "env.db").exists() and not (tmp_path / "ctxc.db").exists()
    # a variable that is no URL is refused, not taken for a new file somewhere
    proc = subprocess.run([CTXC, "dispatch"], input=START + "\n", env=_env(CTXC_DATABASE_URL="prod-db"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0 and "database_url must be" in proc.stdout + proc.stderr
    assert not (tmp_path / "prod-db").exists() and not (tmp_path / "ctxc.db").exists()


@pytest.mark.postgres
def test_cli_config_file_pointing_at_postgres_writes_there(tmp_path: Path) -> None:
    schema = f"prec_{uuid.uuid4().hex[:10]}"
    config = _write(tmp_path / "prod.json", {"database_url": f"{POSTGRES_URL}?schema={schema}"})
    env = _env(CTXC_DATABASE_URL=f"sqlite:///{tmp_path / 'env.db'}")
    try:
        proc = subprocess.run([CTXC, "--config", str(config), "dispatch"], input=START + "\n", env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert not (tmp_path / "env.db").exists() and not (tmp_path / "ctxc.db").exists()
        with psycopg.connect(POSTGRES_URL) as conn:
            table = f'"{schema}".{SessionsApplication.name.lower()}_events'
            count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert count is not None and count[0] >= 1
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _serve(tmp_path: Path, env: dict[str, str], *args: str) -> Iterator[str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([CTXC, *args, "serve", "--port", str(port), "--token", TOKEN], env=env,
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    yield from serving(proc, port)


def test_serve_config_file_database_wins_over_the_variable(tmp_path: Path) -> None:
    config = _write(tmp_path / "prod.json", {"database_url": f"sqlite:///{tmp_path / 'file.db'}"})
    env = _env(CTXC_DATABASE_URL=f"sqlite:///{tmp_path / 'env.db'}")
    for url in _serve(tmp_path, env, "--config", str(config)):
        r = httpx.post(f"{url}/v1/commands", json=json.loads(START),
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert r.status_code == 200, r.text
    assert (tmp_path / "file.db").exists()
    assert not (tmp_path / "env.db").exists() and not (tmp_path / "ctxc.db").exists()


def test_a_relative_sqlite_path_in_the_file_is_relative_to_the_file(tmp_path: Path) -> None:
    """Review of issue 35: run from another directory (cron, a service unit), a relative
    path was taken from the working directory, and a write opened a new, empty store
    there: the file names one database wherever it is used from."""
    etc, elsewhere = tmp_path / "etc", tmp_path / "elsewhere"
    etc.mkdir()
    elsewhere.mkdir()
    config = _write(etc / "prod.json", {"database_url": "sqlite:///data.db"})
    assert Settings.from_file(config).database_url == f"sqlite:///{etc / 'data.db'}"
    proc = subprocess.run([CTXC, "--config", str(config), "dispatch"], input=START + "\n", env=_env(),
                          cwd=elsewhere, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (etc / "data.db").exists() and list(elsewhere.iterdir()) == []
    # absolute paths, :memory: and a URL elsewhere are left as they are
    for url in (f"sqlite:///{tmp_path / 'abs.db'}", "sqlite:///:memory:", "memory://x", POSTGRES_URL):
        assert Settings.from_file(_write(etc / "other.json", {"database_url": url})).database_url == url


def test_a_nested_variable_that_must_hold_json_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of issue 35: the error named CTXC_CONTEXT_COMPACTION, a variable that was
    not set, for a bad CTXC_CONTEXT_COMPACTION__TOOL_RESULTS__PROTECTED_TOOLS."""
    from pydantic_settings import SettingsError

    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__TOOL_RESULTS__PROTECTED_TOOLS", "read_file")
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__RESERVE_TOKENS", "100")
    with pytest.raises(SettingsError) as caught:
        Settings()
    assert str(caught.value) == ("environment variable CTXC_CONTEXT_COMPACTION__TOOL_RESULTS__PROTECTED_TOOLS "
                                 "must hold JSON")


def test_an_empty_variable_for_a_section_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty ``CTXC_LIMITS=`` (``export CTXC_LIMITS=``) is not JSON either: named, as
    before settings.py moved the check to where the variables load, not pydantic-settings'
    bare "error parsing value for field"."""
    from pydantic_settings import SettingsError

    monkeypatch.setenv("CTXC_LIMITS", "")
    with pytest.raises(SettingsError) as caught:
        Settings()
    assert str(caught.value) == "environment variable CTXC_LIMITS must hold JSON"
