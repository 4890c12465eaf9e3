"""``ctxc`` at its edges (issue 15): version, global options anywhere, help and defaults,
errors that name their cause, closed pipes, dispatch's exit code, read-only commands
that create nothing, and ``serve`` telling its URL. The real console script in a
subprocess, as an operator or a shell script runs it."""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from context_compaction import __version__
from context_compaction.infrastructure.cli import EXIT_CLOSED_PIPE, build_parser

CTXC = str(Path(sys.executable).with_name("ctxc"))
SID = "payments-refund-fix"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without our settings nor any provider credentials."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("CTXC_") or k.upper().startswith("CTXC_TEST_")}
    for key in list(env):
        if key.endswith("_API_KEY") or key.startswith(("AZURE_", "AWS_")):
            del env[key]
    return {**env, **extra}


def ctxc(*args: str, stdin: str = "", env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTXC, *args], input=stdin, capture_output=True, text=True, timeout=180,
                          env=env or clean_env(), cwd=cwd, check=False)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("cli-edges")
    proc = ctxc("demo", "--workdir", str(work / "demo"))
    assert proc.returncode == 0, proc.stderr
    return work / "demo" / "demo.db"


def test_version_prints_the_package_version() -> None:
    proc = ctxc("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"ctxc {__version__}"


def test_global_options_are_accepted_before_or_after_the_command(demo_db: Path) -> None:
    after = ctxc("sessions", "--db", str(demo_db), "--json")
    before = ctxc("--db", str(demo_db), "--json", "sessions")
    mixed = ctxc("--json", "sessions", "--db", str(demo_db))
    assert after.returncode == before.returncode == mixed.returncode == 0, (after.stderr, before.stderr)
    sessions = [json.loads(p.stdout)["sessions"] for p in (after, before, mixed)]
    assert sessions[0] == sessions[1] == sessions[2] and sessions[0][0]["session_id"] == SID


def test_an_option_given_before_the_command_survives_the_subcommand_defaults() -> None:
    args = build_parser().parse_args(["--db", "x.db", "-v", "--summarizer", "extractive", "history", "S"])
    assert (args.db, args.verbose, args.summarizer, args.json) == ("x.db", True, "extractive", False)
    args = build_parser().parse_args(["history", "S", "--db", "y.db"])
    assert args.db == "y.db" and args.summarizer is None


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_every_option_has_help_and_shows_its_default() -> None:
    parser = build_parser()
    commands = _subparsers(parser)
    assert {"sessions", "history", "dispatch", "serve", "verify"} <= commands.keys()
    for name, sub in [("ctxc", parser), *commands.items()]:
        text = sub.format_help()
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            default = action.default
            if (action.option_strings and default is not argparse.SUPPRESS
                    and isinstance(default, (int, float, str)) and not isinstance(default, bool)):
                assert f"(default: {default})" in " ".join(text.split()), f"{name} {action.option_strings}"


def test_a_bad_settings_file_is_named_with_its_problem(tmp_path: Path) -> None:
    bad = tmp_path / "settings.json"
    bad.write_text('{"summarizer": "llm",')
    proc = ctxc("sessions", "--db", str(tmp_path / "x.db"), "--config", str(bad))
    assert proc.returncode == 2 and str(bad) in proc.stderr and "not valid JSON" in proc.stderr
    bad.write_text(json.dumps({"context_compaction": {"reserve_tokens": -5}}))
    proc = ctxc("sessions", "--db", str(tmp_path / "x.db"), "--config", str(bad))
    assert proc.returncode == 2, proc.stderr
    assert "context_compaction.reserve_tokens" in proc.stderr and "greater than or equal to 0" in proc.stderr
    missing = tmp_path / "nope.json"
    proc = ctxc("sessions", "--config", str(missing))
    assert proc.returncode == 2 and str(missing) in proc.stderr and "No such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_environment_value_names_the_variable_and_why_without_echoing_it(tmp_path: Path) -> None:
    env = {**clean_env(CTXC_SNAPSHOT_INTERVAL="-1"), "CTXC_MODELS__GPT-4O__TOKEN_LIMIT": "sk-not-a-number-123"}
    proc = ctxc("sessions", "--db", str(tmp_path / "x.db"), env=env)
    assert proc.returncode == 2, proc.stderr
    assert "snapshot_interval (from CTXC_SNAPSHOT_INTERVAL): Input should be greater than or equal to 0" in proc.stderr
    assert "models.gpt-4o.token_limit (from CTXC_MODELS__GPT-4O__TOKEN_LIMIT)" in proc.stderr
    assert "sk-not-a-number-123" not in proc.stderr


def test_a_misspelled_variable_is_reported_on_stderr(tmp_path: Path) -> None:
    env = clean_env(CTXC_SUMARIZER="extractive")
    proc = ctxc("sessions", "--db", str(tmp_path / "x.db"), env=env)
    assert "CTXC_SUMARIZER" in proc.stderr and "CTXC_SUMMARIZER" in proc.stderr
    assert proc.stderr.count("CTXC_SUMARIZER") == 1  # a log line, not a Python warning too


def test_a_missing_input_file_is_named(demo_db: Path, tmp_path: Path) -> None:
    missing = tmp_path / "prompt.txt"
    proc = ctxc("info", SID, "--db", str(demo_db), "--system-prompt-file", str(missing))
    assert proc.returncode == 2 and f"{missing}: No such file or directory" in proc.stderr
    proc = ctxc("import-legacy", str(tmp_path / "legacy.db"), "--db", str(tmp_path / "new.db"))
    # every input file alike: exit 2, the file named (one exit-code table, issue 35)
    assert proc.returncode == 2 and "legacy.db: No such file or directory" in proc.stderr


def test_an_unreachable_database_prints_the_cause() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = ctxc("sessions", "--db", f"postgresql://postgres@127.0.0.1:{port}/test")
    assert proc.returncode == 1, proc.stderr
    assert f"storage_error: PostgreSQL at 127.0.0.1:{port} (database 'test') is unreachable: connection refused" \
        in proc.stderr


def test_a_summary_call_without_credentials_names_the_key_and_the_offline_summarizer(
    demo_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "copy.db"
    shutil.copy(demo_db, db)
    proc = ctxc("compact", SID, "--db", str(db), "--summarizer", "llm")
    assert proc.returncode == 1, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("error: "))  # (a cause: line follows)
    assert line.startswith("error: summary_failed: the summary call failed")
    assert "OPENAI_API_KEY" in line and "--summarizer extractive" in line and "api_key" in line
    # The offline summarizer it points to works on the same session.
    proc = ctxc("compact", SID, "--db", str(db), "--summarizer", "extractive")
    assert proc.returncode == 0, proc.stderr


def test_output_into_a_closed_pipe_exits_quietly(demo_db: Path) -> None:
    # As a shell runs it: the exit status of ctxc itself (pipefail), and no traceback.
    shell = subprocess.run(
        ["bash", "-c", f'set -o pipefail; "{CTXC}" history {SID} --all --db "{demo_db}" | head -1'],
        capture_output=True, text=True, timeout=180, env=clean_env(), check=False)
    assert shell.returncode in (0, EXIT_CLOSED_PIPE) and shell.stderr == ""
    assert shell.stdout.split()[:2] == ["seq", "role"]
    # The reader gone before the first byte: every write fails, deterministically.
    proc = subprocess.Popen([CTXC, "history", SID, "--db", str(demo_db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=180) == EXIT_CLOSED_PIPE and err == ""


def test_dispatch_exits_1_when_any_line_failed(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    good = json.dumps({"type": "start_session", "session_id": "s1", "model": "gpt-4o"})
    again = json.dumps({"type": "list_sessions"})
    proc = ctxc("dispatch", "--db", db, stdin=f"{good}\n{again}\n")
    assert proc.returncode == 0 and [json.loads(x)["ok"] for x in proc.stdout.splitlines()] == [True, True]
    proc = ctxc("dispatch", "--db", db, stdin=f"{good}\n{again}\n")  # s1 exists now
    envelopes = [json.loads(x) for x in proc.stdout.splitlines()]
    assert proc.returncode == 1 and [e["ok"] for e in envelopes] == [False, True]
    assert envelopes[0]["error"]["code"] == "session_exists"


READ_ONLY = [
    ["sessions"], ["history", "S"], ["info", "S"], ["checkpoints", "S"], ["projection", "S"],
    ["replay", "S", "--at-version", "1"], ["timeline", "S"], ["verify"],
    ["compact", "S"],  # it writes, but only to a session that exists (review of issue 35)
]


@pytest.mark.parametrize("command", READ_ONLY, ids=[c[0] for c in READ_ONLY])
def test_a_read_only_command_never_creates_a_database(command: list[str], tmp_path: Path) -> None:
    db = tmp_path / "missing" / "typo.db"
    db.parent.mkdir()
    proc = ctxc(*command, "--db", str(db))
    # a missing input: exit 2, as every missing input file (issue 35's one exit-code table)
    assert proc.returncode == 2, proc.stderr
    assert f"error: storage_error: no database at {db}" in proc.stderr
    assert list(db.parent.iterdir()) == []
    # The default database (./ctxc.db) too.
    proc = ctxc(*command, cwd=db.parent)
    assert proc.returncode == 2 and "no database at" in proc.stderr
    assert list(db.parent.iterdir()) == []


def test_serve_logs_its_url_at_info(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [CTXC, "serve", "--insecure-local", "--port", str(port), "--db", str(tmp_path / "s.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    assert proc.stderr is not None
    seen = ""
    try:
        deadline = time.monotonic() + 60
        while f"url=http://127.0.0.1:{port}" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                line = proc.stderr.readline()
                if not line:
                    break
                seen += line
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert f"info    context_compaction.http: serving url=http://127.0.0.1:{port}" in seen, seen
