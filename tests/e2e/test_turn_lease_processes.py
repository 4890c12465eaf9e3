"""One running turn per session across OS processes (issue 15, ADR 0041): two processes
starting a turn on one session at once never interleave, and a holder killed mid-turn
blocks the session only until its lease runs out. SQLite file and PostgreSQL; the
workers are ``tests/support/turn_worker.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from backends import MakeHarness
from context_compaction.domain.errors import TurnInProgress
from fakeprovider import FakeProvider, Reply
from helpers import Harness
from turnlease_helpers import SID, harness, history, runner

WORKER = str(Path(__file__).parents[1] / "support" / "turn_worker.py")


def spawn(h: Harness, provider: FakeProvider, text: str, out: Path, lease: float, go: Path | None) -> subprocess.Popen:
    args = [sys.executable, WORKER, h.url, provider.base_url, SID, text, str(lease), str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    return subprocess.Popen([*args, *([str(go)] if go else [])], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(predicate, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.slow
def test_two_processes_starting_a_turn_at_once_never_interleave(make_harness: MakeHarness, provider, tmp_path: Path) -> None:
    provider.default = Reply(text="The answer.", delay=1.5)
    h = harness(make_harness, provider)
    go = tmp_path / "go"
    outs = [tmp_path / f"w{i}.json" for i in range(2)]
    procs = [spawn(h, provider, f"question {i}", out, 30, go) for i, out in enumerate(outs)]
    try:
        wait_for(lambda: all(Path(f"{o}.ready").exists() for o in outs))
        go.touch()
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err.decode()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = sorted((json.loads(o.read_text()) for o in outs), key=lambda r: not r["ok"])
    assert results[0] == {"ok": True, "answer": "The answer.", "pid": results[0]["pid"]}
    assert results[1]["ok"] is False and results[1]["code"] == "turn_in_progress"
    assert provider.calls == 1
    roles = [role for role, _ in history(h)]
    assert roles == ["user", "assistant"]  # one whole turn, nothing of the refused one
    h.close()


@pytest.mark.slow
def test_a_crashed_holder_blocks_the_session_only_until_its_lease_runs_out(make_harness: MakeHarness, provider, tmp_path: Path) -> None:
    never = threading.Event()
    provider.queue(Reply(text="never sent", gate=never), Reply(text="After the crash."))
    h = harness(make_harness, provider)
    # Renewed every 2 s, so at least 4 s of it are left when it is killed: long enough to
    # see the session refused on a loaded machine, short enough to wait out.
    crashing = spawn(h, provider, "question before the crash", tmp_path / "crash.json", 6.0, None)
    try:
        wait_for(lambda: provider.calls == 1)  # the holder waits for its provider
        crashing.send_signal(signal.SIGKILL)
        crashing.wait(timeout=30)
    finally:
        if crashing.poll() is None:
            crashing.kill()
        never.set()
    with pytest.raises(TurnInProgress):  # the dead holder's lease still runs
        asyncio.run(runner(h.bus).run(SID, "question after the crash"))
    started = time.monotonic()
    while True:
        try:
            result = asyncio.run(runner(h.bus).run(SID, "question after the crash"))
            break
        except TurnInProgress:
            assert time.monotonic() - started < 30, "the dead holder's lease never ran out"
            time.sleep(0.2)
    assert result.answer == "After the crash."
    # The crashed turn's user message stays (history is never rewritten); then the new turn.
    assert history(h) == [("user", "question before the crash"), ("user", "question after the crash"),
                          ("assistant", "After the crash.")]
    h.close()
