"""The lagging search index (ADR 0049) with OS processes appending and
searching one session at once: no error, no hit twice, no hit lost, and a search never
misses what was acknowledged before it started."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backends import MakeHarness
from helpers import ok

WORKER = str(Path(__file__).parents[1] / "support" / "search_worker.py")
SID = "race"


def _lines(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.backends("sqlite", "postgres")
def test_two_processes_searching_while_two_append_see_every_hit_once(make_harness: MakeHarness, tmp_path: Path) -> None:
    h = make_harness("race")
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    h.close()
    stop = tmp_path / "stop"
    outs = [tmp_path / f"{name}.jsonl" for name in ("a1", "a2", "s1", "s2")]
    rounds = 60
    procs = [subprocess.Popen([sys.executable, WORKER, "append", h.url, SID, str(rounds), str(outs[0])]),
             subprocess.Popen([sys.executable, WORKER, "append", h.url, SID, str(rounds), str(outs[1])]),
             subprocess.Popen([sys.executable, WORKER, "search", h.url, SID, str(stop), str(outs[2])]),
             subprocess.Popen([sys.executable, WORKER, "search", h.url, SID, str(stop), str(outs[3])])]
    try:
        deadline = time.monotonic() + 60
        while not all(out.exists() and out.read_text() for out in outs[2:]) and time.monotonic() < deadline:
            time.sleep(0.02)
        (tmp_path / "go").touch()
        for p in procs[:2]:
            assert p.wait(240) == 0
        stop.touch()
        for p in procs[2:]:
            assert p.wait(240) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    appended = [line for out in outs[:2] for line in _lines(out)]
    assert all(isinstance(seqs, list) for seqs in appended), [s for s in appended if not isinstance(s, list)]
    every = sorted(seq for seqs in appended for seq in seqs)  # type: ignore[union-attr]
    assert every == list(range(1, 2 * rounds * 3 + 1))
    lengths: list[int] = []
    for out in outs[2:]:
        searches = _lines(out)
        errors = [s for s in searches if not isinstance(s, list)]
        assert not errors, errors[:3]
        for hits in searches:
            assert len(hits) == len(set(hits)), hits  # type: ignore[arg-type]
            # seqs commit in order: what a search finds is a prefix of the session
            assert sorted(hits) == list(range(1, len(hits) + 1)), hits  # type: ignore[arg-type]
        assert sorted(searches[-1]) == every  # type: ignore[arg-type]
        # (the race happened: some search ran while the appends were half done)
        lengths += [len(h) for h in searches]  # type: ignore[arg-type]
    # (the race happened: some search ran while the appends were half done)
    assert any(0 < n < len(every) for n in lengths), (len(lengths), sorted(set(lengths)))
