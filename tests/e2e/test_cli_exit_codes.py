"""``ctxc`` as one tool (issue 35, finding 6): one exit-code table for every subcommand
(documented in ``--help``), ``demo --json`` prints only JSON, ``demo --db`` is refused
clearly, ``events --limit`` is the total, and ``compact`` shows a spinner with the
elapsed time on a terminal and nothing in a pipe. The real console script."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from context_compaction.infrastructure.cli_parser import EXIT_CODES
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL

CTXC = str(Path(sys.executable).with_name("ctxc"))
SID = "payments-refund-fix"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("CTXC_") or k.upper().startswith("CTXC_TEST_")}
    for key in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(key, None)
    return {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def ctxc(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTXC, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=env or _env(), check=False)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("exit-codes")
    proc = ctxc("demo", "--workdir", str(work / "demo"))
    assert proc.returncode == 0, proc.stderr
    return work / "demo" / "demo.db"


def test_help_documents_the_one_table() -> None:
    text = " ".join(ctxc("--help").stdout.split())
    for code, meaning in EXIT_CODES:
        assert f"{code} {' '.join(meaning.split())}" in text, (code, text)


@pytest.mark.parametrize("argv", [
    ["import-legacy", "{tmp}/missing.db"],
    ["info", SID, "--system-prompt-file", "{tmp}/missing.txt"],
    ["--config", "{tmp}/missing.json", "sessions"],
])
def test_a_missing_input_file_is_exit_2_in_every_subcommand(demo_db: Path, tmp_path: Path, argv: list[str]) -> None:
    proc = ctxc(*[a.format(tmp=tmp_path) for a in argv], "--db", str(demo_db))
    assert proc.returncode == 2, proc.stderr
    assert "missing" in proc.stderr


@pytest.mark.parametrize("argv", [
    ["sessions"], ["history", SID], ["events"], ["verify"], ["timeline", SID],
])
def test_a_missing_database_is_exit_2_in_every_reading_subcommand(tmp_path: Path, argv: list[str]) -> None:
    """Review of issue 35: the database a reading command was told to read is its
    input; missing, it was exit 1 where any other missing input file is 2."""
    proc = ctxc(*argv, "--db", str(tmp_path / "typo.db"))
    assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
    assert "no database at" in proc.stderr and not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize("argv", [
    ["sessions"], ["history", SID], ["dispatch"], ["compact", SID], ["events"], ["verify"],
    ["serve", "--insecure-local"],
])
@pytest.mark.parametrize("source", ["--db", "--config", "CTXC_DATABASE_URL"])
def test_a_bad_database_url_is_exit_2_in_every_subcommand(tmp_path: Path, argv: list[str], source: str) -> None:
    """Review of issue 35: a URL we cannot open is bad settings (exit 2), named with
    where it came from; it was exit 1, and serve's only after binding."""
    url = "mysql://db.example/agents"
    extra, env = [], _env()
    if source == "--db":
        extra = ["--db", url]
    elif source == "--config":
        (tmp_path / "s.json").write_text(json.dumps({"database_url": url}))
        extra = ["--config", str(tmp_path / "s.json")]
    else:
        env = _env(CTXC_DATABASE_URL=url)
    proc = subprocess.run([CTXC, *argv, *extra], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=env, input="", check=False)
    assert proc.returncode == 2, (argv, source, proc.returncode, proc.stderr)
    assert "invalid_command: database_url must be" in proc.stderr
    assert (source if source != "--config" else "the settings file") in proc.stderr
    assert list(tmp_path.glob("*.db")) == []


@pytest.mark.parametrize("argv", [
    ["serve", "--port", "99999", "--insecure-local"], ["serve", "--port", "-1", "--insecure-local"],
    ["sessions", "--limit", "0"], ["sessions", "--limit", "100000"],
    ["timeline", SID, "--limit", "0"], ["timeline", SID, "--limit", "100000"],
    ["events", "--limit", "0"], ["events", "--after", "-1"],
    ["replay", SID, "--at-version", "0"], ["demo", "--turns", "0"],
    ["serve", "--max-connections", "0"],
])
def test_an_option_out_of_range_is_exit_2_in_every_subcommand(demo_db: Path, argv: list[str]) -> None:
    db = [] if argv[0] == "demo" else ["--db", str(demo_db)]
    proc = ctxc(*argv, *db)
    assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)


def test_a_command_that_fails_is_exit_1(demo_db: Path) -> None:
    proc = ctxc("history", "no-such-session", "--db", str(demo_db))
    assert proc.returncode == 1 and "session_not_found" in proc.stderr


def test_demo_json_prints_one_json_document_and_refuses_db(tmp_path: Path) -> None:
    proc = ctxc("demo", "--json", "--workdir", str(tmp_path / "d"))
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)  # the whole of stdout: no narrative around it
    assert facts["auto_compactions"] >= 1
    for argv in (("demo", "--db", str(tmp_path / "x.db")), ("--db", str(tmp_path / "x.db"), "demo")):
        refused = ctxc(*argv, "--workdir", str(tmp_path / "e"))  # (stdout and stderr are pipes)
        assert refused.returncode == 2 and "--workdir" in refused.stderr and refused.stdout == ""
        assert not (tmp_path / "x.db").exists() and not (tmp_path / "e").exists()


def test_events_limit_is_the_total(demo_db: Path) -> None:
    every = ctxc("events", "--db", str(demo_db))
    total = len(every.stdout.splitlines())
    assert total > 5
    for limit in (1, 5, total + 10):
        proc = ctxc("events", "--db", str(demo_db), "--limit", str(limit))
        assert proc.returncode == 0 and len(proc.stdout.splitlines()) == min(limit, total)


def _slow_compact_setup(tmp_path: Path, provider: FakeProvider) -> tuple[list[str], dict[str, str]]:
    db = f"sqlite:///{tmp_path / 's.db'}"
    words = "word " * 300
    lines = [json.dumps({"type": "start_session", "session_id": "S", "model": FAKE_MODEL})]
    for i in range(10):
        lines.append(json.dumps({"type": "append_messages", "session_id": "S", "messages": [
            {"role": "user", "content": f"q{i} {words}", "turn_id": f"t{i}"},
            {"role": "assistant", "content": f"a{i} {words}", "turn_id": f"t{i}"}]}))
    env = _env(CTXC_MODELS=json.dumps({FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k",
                                                    "token_limit": 32000}}),
               CTXC_CONTEXT_COMPACTION__KEEP_RECENT_TOKENS="1000", TERM="xterm")
    fill = subprocess.run([CTXC, "--db", db, "dispatch"], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert fill.returncode == 0, fill.stderr
    return [CTXC, "--db", db, "compact", "S", "--summarizer", "llm"], env


def test_compact_shows_a_spinner_on_a_terminal_and_nothing_in_a_pipe(tmp_path: Path, provider: FakeProvider) -> None:
    summary = "## Objective\n- keep going."
    argv, env = _slow_compact_setup(tmp_path, provider)
    provider.queue(Reply(text=summary, delay=1.5), Reply(text=summary, delay=1.5), Reply(text=summary, delay=1.5))
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""  # nothing drawn in a pipe
    # nor when a CI job forces colour (rich would take the pipe for a terminal)
    forced = subprocess.run(argv + ["--model", FAKE_MODEL], capture_output=True, text=True, timeout=120,
                            env={**env, "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"}, check=False)
    assert forced.returncode == 0, forced.stderr
    assert forced.stderr == "", forced.stderr

    # stderr on a terminal (a pseudo-terminal), stdout still a pipe
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(argv + ["--model", FAKE_MODEL], stdout=subprocess.PIPE, stderr=secondary, env=env)
    os.close(secondary)
    drawn = b""
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 0.1)
        if ready:
            try:
                drawn += os.read(primary, 65536)
            except OSError:
                break
    proc.wait(timeout=60)
    os.close(primary)
    assert proc.returncode == 0, drawn.decode(errors="replace")
    screen = drawn.decode(errors="replace")
    assert "compacting S" in screen and "0:00:0" in screen, screen  # the label and the elapsed time


def test_a_progress_label_with_brackets_is_shown_as_it_is(tmp_path: Path) -> None:
    """Review of issue 35: the label (``compacting SESSION``) was read as rich markup, so
    ``ctxc compact 'a[/b]'`` died with a MarkupError on a terminal (exit 4)."""
    script = tmp_path / "label.py"
    script.write_text("import time\nfrom context_compaction.infrastructure.progress import Progress\n"
                      "with Progress('compacting a[/b] [red]c', counts=False):\n    time.sleep(0.3)\n")
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=secondary,
                            env=_env(TERM="xterm"))
    os.close(secondary)
    drawn = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
        elif proc.poll() is not None:
            break
    os.close(primary)
    assert proc.wait(timeout=60) == 0, drawn.decode(errors="replace")
    assert "compacting a[/b] [red]c" in drawn.decode(errors="replace")
