"""The real ``ctxc`` console script in a subprocess, every subcommand (issue 7)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from legacy_fixture import BASE_MS, add_legacy_messages, build_legacy_db

CTXC = str(Path(sys.executable).with_name("ctxc"))


def ctxc(*args: str, stdin: str = "", cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTXC, *args], input=stdin, capture_output=True, text=True, timeout=180,
                          cwd=cwd, env={**os.environ, **(env or {})}, check=False)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("cli")
    proc = ctxc("demo", "--workdir", str(work / "demo"))
    assert proc.returncode == 0, proc.stderr
    return work / "demo" / "demo.db"


SID = "payments-refund-fix"


def test_sessions_lists_the_demo_session(demo_db: Path) -> None:
    proc = ctxc("sessions", "--db", str(demo_db))
    assert proc.returncode == 0 and SID in proc.stdout and "checkpoint" in proc.stdout
    data = json.loads(ctxc("sessions", "--db", str(demo_db), "--json").stdout)
    assert data["sessions"][0]["session_id"] == SID and data["sessions"][0]["message_count"] > 50


def test_history_shows_the_raw_log(demo_db: Path) -> None:
    proc = ctxc("history", SID, "--db", str(demo_db))
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["seq", "role", "turn"] and lines[2].split()[0] == "1"
    data = json.loads(ctxc("history", SID, "--all", "--json", "--db", str(demo_db)).stdout)
    assert [m["seq"] for m in data["messages"]] == list(range(1, len(data["messages"]) + 1))


def test_info_prints_the_spec_text_form(demo_db: Path) -> None:
    proc = ctxc("info", SID, "--db", str(demo_db), "--system-prompt", "You are careful.")
    assert proc.returncode == 0
    for label in ("Context window", "Reserve", "Compaction threshold", "Used", "Active checkpoint"):
        assert label in proc.stdout
    data = json.loads(ctxc("info", SID, "--json", "--db", str(demo_db)).stdout)
    # The demo's provider reported its real window in an overflow error: a new process
    # budgets with it (Session.WindowLearned), not with the 128,000 default.
    from context_compaction.infrastructure.demo import PROVIDER_WINDOW

    window = data["effective_window_tokens"]
    assert data["window_source"] == "provider overflow error" and window <= PROVIDER_WINDOW
    assert data["compression_threshold_tokens"] == window - min(16_384, window // 2)
    assert data["active_checkpoint_id"]


def test_checkpoints_projection_replay_and_timeline(demo_db: Path) -> None:
    proc = ctxc("checkpoints", SID, "--db", str(demo_db))
    assert proc.returncode == 0 and "active" in proc.stdout and "auto" in proc.stdout
    cps = json.loads(ctxc("checkpoints", SID, "--json", "--db", str(demo_db)).stdout)["checkpoints"]
    proc = ctxc("projection", SID, "--db", str(demo_db))
    assert proc.returncode == 0 and "[Historical conversation summary" in proc.stdout
    projection = json.loads(ctxc("projection", SID, "--json", "--db", str(demo_db)).stdout)
    assert projection["checkpoint_id"] == cps[-1]["checkpoint_id"]
    replay = json.loads(ctxc("replay", SID, "--at-version", "5", "--json", "--db", str(demo_db)).stdout)
    assert replay["version"] == 5 and replay["active_checkpoint_id"] is None
    assert "as of version 5" in ctxc("replay", SID, "--at-version", "5", "--db", str(demo_db)).stdout
    timeline = json.loads(ctxc("timeline", SID, "Objective", "--json", "--db", str(demo_db)).stdout)
    assert {e["checkpoint_id"] for e in timeline["entries"]} <= {cp["checkpoint_id"] for cp in cps}
    assert ctxc("timeline", SID, "no such words at all", "--db", str(demo_db)).stdout.strip() == "no timeline entries"


def test_compact_uses_the_configured_summarizer(demo_db: Path, tmp_path: Path) -> None:
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"summarizer": "extractive", "context_compaction": {"keep_recent_tokens": 500}}))
    proc = ctxc("compact", SID, "--json", "--db", str(demo_db), "--config", str(config))
    assert proc.returncode == 0, proc.stderr  # (without the config: summary_failed from the llm default)
    data = json.loads(proc.stdout)
    assert data["status"] == "compacted" and data["trigger_reason"] == "manual", data
    cps = json.loads(ctxc("checkpoints", SID, "--json", "--db", str(demo_db)).stdout)["checkpoints"]
    made = next(cp for cp in cps if cp["checkpoint_id"] == data["checkpoint_id"])
    # Without the config file the default summarizer (llm on gpt-4o) would have been asked.
    assert made["provider_kind"] == "extractive" and made["active"], made
    proc = ctxc("compact", SID, "--db", str(demo_db), "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Nothing to compact"), proc.stdout  # one kept turn is left


def test_errors_print_the_contract_code_and_exit_1(demo_db: Path) -> None:
    proc = ctxc("history", "no-such-session", "--db", str(demo_db))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "error: session_not_found: session 'no-such-session' does not exist"
    proc = ctxc("replay", SID, "--at-version", "100000", "--db", str(demo_db))
    assert proc.returncode == 1 and "error: invalid_command:" in proc.stderr
    assert ctxc("history", "--db", str(demo_db)).returncode == 2  # usage: session missing
    assert ctxc("frobnicate").returncode == 2


def test_verify_passes_and_detects_a_corrupted_row(tmp_path: Path, demo_db: Path) -> None:
    db = tmp_path / "copy.db"
    source = sqlite3.connect(demo_db)
    source.backup(target := sqlite3.connect(db))
    source.close()
    target.close()
    proc = ctxc("verify", "--db", str(db))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "read model matches the events" in proc.stdout
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE rm_messages SET visible = 0 WHERE seq = 1")
        conn.execute("DELETE FROM rm_checkpoints WHERE generation = 1")
    proc = ctxc("verify", "--db", str(db))
    assert proc.returncode == 3
    assert "rm_messages" in proc.stdout and "different (1): payments-refund-fix/1" in proc.stdout
    assert "missing (1)" in proc.stdout
    report = json.loads(ctxc("verify", "--json", "--db", str(db)).stdout)
    assert report["ok"] is False and report["tables"]["rm_checkpoints"]["missing"]


def test_import_legacy_round_trips_and_is_idempotent(tmp_path: Path) -> None:
    legacy = tmp_path / "picobot.db"
    build_legacy_db(legacy)
    db = tmp_path / "new.db"
    proc = ctxc("import-legacy", str(legacy), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["sessions"] == 2 and report["sessions_created"] == 2
    assert report["messages_imported"] == 8 and report["messages_skipped"] == 1
    assert report["skipped_by_reason"] == {"tool result without an open call": 1}
    history = json.loads(ctxc("history", "feishu:oc:dialog-1", "--json", "--db", str(db)).stdout)["messages"]
    assert [m["content"] for m in history][:2] == ["Please fix the failing import in a.py", ""]
    assert history[1]["tool_calls"][0]["function"]["name"] == "read_file" and history[2]["tool_call_id"] == "call_a"
    assert history[0]["created_at"].startswith("2025-12-29")
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert json.loads(ctxc("checkpoints", "feishu:oc:dialog-1", "--json", "--db", str(db)).stdout)["checkpoints"] == []
    with sqlite3.connect(db) as conn:
        marker = conn.execute("SELECT last_compressed_message_at FROM rm_imports WHERE session_id = ?",
                              ("feishu:oc:dialog-1",)).fetchone()[0]
        events = conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0]
    assert marker == BASE_MS + 4_000  # kept, as a diagnostic only
    again = json.loads(ctxc("import-legacy", str(legacy), "--db", str(db), "--json").stdout)
    assert again["messages_imported"] == 0 and again["sessions_created"] == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0] == events
    add_legacy_messages(legacy)
    third = json.loads(ctxc("import-legacy", str(legacy), "--db", str(db), "--json").stdout)
    assert third["messages_imported"] == 1
    cli = json.loads(ctxc("history", "cli:local", "--json", "--db", str(db)).stdout)["messages"]
    assert [m["content"] for m in cli] == ["hello from the CLI", "hi", "one more question"]
    assert "imported 0 messages" in ctxc("import-legacy", str(legacy), "--db", str(db)).stdout
    assert ctxc("import-legacy", str(tmp_path / "missing.db"), "--db", str(db)).returncode == 2  # a missing input file is a usage error (one exit-code table, issue 35)


def test_dispatch_reads_json_lines(tmp_path: Path) -> None:
    lines = [{"type": "start_session", "session_id": "s", "model": "gpt-4o"},
             {"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "hi"}]}]
    proc = ctxc("dispatch", "--db", str(tmp_path / "d.db"), stdin="\n".join(json.dumps(x) for x in lines) + "\nnope\n")
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [o["ok"] for o in out] == [True, True, False] and out[2]["error"]["code"] == "invalid_command"


def test_the_default_database_comes_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    proc = ctxc("dispatch", stdin=json.dumps({"type": "start_session", "session_id": "e", "model": "m"}) + "\n",
                env={"CTXC_DATABASE_URL": f"sqlite:///{db}"})
    assert proc.returncode == 0 and db.exists()
    assert "e" in ctxc("sessions", env={"CTXC_DATABASE_URL": f"sqlite:///{db}"}).stdout
    # Without either, ./ctxc.db: a command that writes creates it, one that reads finds it.
    start = json.dumps({"type": "start_session", "session_id": "d", "model": "m"}) + "\n"
    assert ctxc("dispatch", stdin=start, cwd=tmp_path).returncode == 0 and (tmp_path / "ctxc.db").exists()
    assert "d" in ctxc("sessions", cwd=tmp_path).stdout.split()


def test_commands_that_call_no_model_start_fast_and_without_litellm(demo_db: Path) -> None:
    probe = ("import sys, time; t = time.perf_counter(); "
             "from context_compaction.infrastructure.cli import main; "
             f"main(['info', {SID!r}, '--db', {str(demo_db)!r}]); "
             "print('LITELLM' if 'litellm' in sys.modules else 'no-litellm', "
             "'OTEL' if 'opentelemetry' in sys.modules else 'no-otel', time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split()[-3:-1] == ["no-litellm", "no-otel"]
    # How fast it starts is measured in benchmarks/ (``ctxc start``), not asserted here.
    assert ctxc("sessions", "--db", str(demo_db)).returncode == 0


def test_the_demo_shows_each_mechanism_for_real(tmp_path: Path) -> None:
    from context_compaction.infrastructure.demo import run_demo

    lines: list[str] = []
    facts = run_demo(tmp_path / "demo", out=lines.append)
    assert facts["auto_compactions"] >= 1
    assert facts["overflow_recoveries"] >= 1 and facts["provider_overflows"] >= 1
    assert facts["tool_runs"] == facts["tool_runs_unique"]  # every tool call ran exactly once
    assert facts["restore_identical"] is True and facts["restore_provider_calls"] == 0
    assert facts["replay"]["version"] == facts["replay_version"]
    assert facts["info"]["active_checkpoint_id"] is not None
    text = "\n".join(lines)
    assert "auto-compaction" in text and "recovered with a summary" in text and "Compaction threshold" in text


def test_log_json_writes_structured_lines_without_content(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    lines = [{"type": "start_session", "session_id": "logme", "model": "gpt-4o"},
             {"type": "append_messages", "session_id": "logme",
              "messages": [{"role": "user", "content": "SECRET-CONTENT-42"}]}]
    proc = ctxc("dispatch", "--db", str(db), "-v", "--log-json",
                stdin="\n".join(json.dumps(x) for x in lines) + "\n")
    assert proc.returncode == 0
    records = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    appended = [r for r in records if r["event"] == "messages appended"]
    assert appended and appended[0]["session_id"] == "logme" and appended[0]["count"] == 1
    assert {"ts", "level", "logger"} <= set(appended[0])
    assert "SECRET-CONTENT-42" not in proc.stderr


def test_resummarize_prints_beside_the_committed_summary_and_stores_nothing(demo_db: Path) -> None:
    cps = json.loads(ctxc("checkpoints", SID, "--json", "--db", str(demo_db)).stdout)["checkpoints"]
    cp = next(c for c in cps if not c["degraded"])
    before = demo_db.read_bytes()
    proc = ctxc("resummarize", SID, cp["checkpoint_id"], "--summarizer", "extractive", "--db", str(demo_db))
    assert proc.returncode == 0, proc.stderr
    committed, _, again = proc.stdout.partition("== resummarized (extractive")
    assert committed.startswith(f"== committed summary of {cp['checkpoint_id']} ==")
    assert "## Objective" in committed and "## Objective" in again and "ledger:" in again
    data = json.loads(ctxc("resummarize", SID, cp["checkpoint_id"], "--summarizer", "extractive",
                           "--json", "--db", str(demo_db)).stdout)
    assert data["committed_summary"] == cp["summary"] and data["tokens"] > 0
    assert demo_db.read_bytes() == before
