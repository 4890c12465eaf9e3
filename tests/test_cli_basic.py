"""The console script: dispatch (JSON lines) and the offline demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CTXC = str(Path(sys.executable).with_name("ctxc"))


def run(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_PROXY": "*", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    return subprocess.run([CTXC, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env, check=False)


def test_dispatch_answers_one_envelope_per_line(tmp_path: Path) -> None:
    lines = [
        {"type": "start_session", "session_id": "s", "model": "gpt-4o"},
        {"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "hi"}]},
        {"type": "append_messages", "session_id": "nope", "messages": [{"role": "user", "content": "hi"}]},
    ]
    stdin = "\n".join(json.dumps(x) for x in lines) + "\n\nnot json\n"
    proc = run("dispatch", "--db", str(tmp_path / "x.db"), stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [o["ok"] for o in out] == [True, True, False, False]
    assert out[1]["result"]["seqs"] == [1]
    assert out[2]["error"]["code"] == "session_not_found"
    assert out[3]["error"]["code"] == "invalid_command"


def test_the_demo_console_script_runs_offline(tmp_path: Path) -> None:
    proc = run("demo", "--workdir", str(tmp_path / "demo"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "auto-compaction" in proc.stdout and "recovered with a summary" in proc.stdout
    assert ": yes; provider calls: 0" in proc.stdout
    assert "Context compacted:" in proc.stdout and "Compaction threshold" in proc.stdout
    assert (tmp_path / "demo" / "demo.db").exists()


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
