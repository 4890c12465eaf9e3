"""Several OS processes on the same sessions, and SIGKILL at random points (issue 5).

Runs on a SQLite file (WAL) and on PostgreSQL. After each run: every acknowledged
append is stored exactly once, seqs are 1..N, generations equal checkpoints +
invalidations, at most one checkpoint is active, lost races ended as stale candidates
or successful retries, and the read model equals a rebuild from the events.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from backends import MakeHarness
from helpers import Harness, fingerprint, ok

WORKER = str(Path(__file__).parents[1] / "support" / "mp_worker.py")
SESSIONS = ("alpha", "beta")
ALLOWED_COMPACT_ERRORS = {"stale_candidate", "summary_failed"}


def spawn(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    return subprocess.Popen([sys.executable, WORKER, *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line cut by SIGKILL was never acknowledged
    return out


def check_store(h: Harness, sessions=SESSIONS) -> dict[str, dict]:
    """The invariants that must hold whatever happened; returns per-session facts."""
    facts = {}
    for sid in sessions:
        raw = ok(h.do({"type": "get_history", "session_id": sid, "include_invalidated": True}))["messages"]
        assert [m["seq"] for m in raw] == list(range(1, len(raw) + 1)), "seqs unique, 1..N, no gaps"
        session = ok(h.do({"type": "list_sessions"}))["sessions"]
        row = next(s for s in session if s["session_id"] == sid)
        cps = ok(h.do({"type": "list_checkpoints", "session_id": sid}))["checkpoints"]
        invalidations = h.query("SELECT generation FROM {t}rm_invalidations WHERE session_id = ?", (sid,))
        assert row["context_generation"] == len(cps) + len(invalidations)
        active = [cp for cp in cps if cp["active"]]
        assert len(active) <= 1
        last_invalidation = max((g for (g,) in invalidations), default=0)
        newest = max(cps, key=lambda cp: cp["generation"], default=None)
        if newest is not None and newest["generation"] > last_invalidation:
            assert active and active[0]["checkpoint_id"] == newest["checkpoint_id"]
        else:
            assert not active
        projection = ok(h.do({"type": "get_projection", "session_id": sid}))
        replay = ok(h.do({"type": "replay_session", "session_id": sid}))
        assert replay["projection"]["messages"] == projection["messages"], "read model agrees with the events"
        facts[sid] = {"raw": raw, "checkpoints": len(cps), "invalidations": len(invalidations)}
    before = fingerprint(h.bus)
    h.bus.services.read_model.rebuild()
    assert fingerprint(h.bus) == before, "the read model equals a rebuild from the events"
    return facts


@pytest.mark.slow
def test_processes_hammering_the_same_sessions_lose_nothing(
    make_harness: MakeHarness, tmp_path: Path, record_property  # type: ignore[no-untyped-def]
) -> None:
    """Breakage tried: the workers run one after another (the parent waits for each
    before starting the next, barrier off): "the workers never interleaved"."""
    hammer(make_harness("hammer"), tmp_path, record_property)


def hammer(h: Harness, tmp_path: Path, record_property: Any) -> None:
    workers, ops = 4, 70
    for sid in SESSIONS:
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    outs = [tmp_path / f"worker{i}.jsonl" for i in range(workers)]
    go = tmp_path / "go"
    procs = [spawn("hammer", h.url, str(i), str(ops), str(1000 + i), str(outs[i]), str(go))
             for i in range(workers)]
    deadline = time.monotonic() + 120
    while not all(Path(f"{out}.ready").exists() for out in outs):  # the start barrier
        for proc in procs:
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the workers did not get ready within 120 s"
        time.sleep(0.01)
    go.touch()
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()[-2000:]
    results = [r for out in outs for r in records(out)]
    assert len(results) == workers * ops
    facts = check_store(h)
    stored_tags = {sid: Counter(m["turn_id"] for m in facts[sid]["raw"]) for sid in SESSIONS}
    outcomes: Counter[str] = Counter()
    for r in results:
        envelope = r["envelope"]
        if r["op"] == "append":
            assert envelope["ok"], envelope
            seqs = envelope["result"]["seqs"]
            assert len(seqs) == r["n"]
            raw = facts[r["session"]]["raw"]
            for seq in seqs:
                assert raw[seq - 1]["turn_id"] == r["tag"]
            assert stored_tags[r["session"]][r["tag"]] == r["n"]  # exactly once
            if "retry" in r:
                assert r["retry"]["ok"] and r["retry"]["result"]["seqs"] == seqs
                assert r["retry"]["result"]["duplicate"] is True
            outcomes["append"] += 1
        elif r["op"] == "compact":
            if envelope["ok"]:
                outcomes[envelope["result"]["status"]] += 1
            else:
                assert envelope["error"]["code"] in ALLOWED_COMPACT_ERRORS, envelope
                outcomes[envelope["error"]["code"]] += 1
        else:
            assert envelope["ok"], envelope
            outcomes[r["op"]] += 1
    acked = sum(r["n"] for r in results if r["op"] == "append")
    stored = sum(len(facts[s]["raw"]) for s in SESSIONS)
    assert acked == stored, "every acknowledged message exactly once, nothing else"
    # Real contention: workers that ran one after another would leave one run of seqs
    # per worker and session; overlapping ones interleave.
    runs = {sid: worker_runs(facts[sid]["raw"]) for sid in SESSIONS}
    interleavings = sum(len(r) - len(set(r)) for r in runs.values())
    assert interleavings >= 1, f"the workers never interleaved: {runs}"
    backend = "postgres" if h.is_postgres else "sqlite"
    record_property("processes", workers)
    record_property("operations", workers * ops)
    record_property("interleavings", interleavings)
    record_property("stale_candidates", outcomes["stale_candidate"])
    print(f"\nFIGURE processes[{backend}]: {workers} processes x {ops} ops -> "
          f"{dict(outcomes)}; {stored} messages stored, {acked} acknowledged; "
          f"{interleavings} interleavings of different workers' seqs")


def worker_runs(raw: list[dict]) -> list[str]:
    """The writers of a session's history in seq order, one entry per run of one worker."""
    runs: list[str] = []
    for m in raw:
        writer = m["turn_id"].split("i")[0]  # tags are w{worker}i{op}
        if not runs or runs[-1] != writer:
            runs.append(writer)
    return runs


def acknowledged_batches(path: Path) -> set[str]:
    return {r["tag"] for r in records(path) if r["op"] == "append" and r["envelope"]["ok"]}


def wait_for(proc: subprocess.Popen[bytes], ready, what: str, err: Path, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Poll until ``ready()``; the worker must stay alive meanwhile (its stderr is the failure)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the worker exited ({proc.returncode}) before {what}:\n{tail(err)}"
        assert time.monotonic() < deadline, f"nothing ({what}) within {timeout} s:\n{tail(err)}"
        time.sleep(0.02)


def tail(err: Path) -> str:
    return err.read_text(encoding="utf-8", errors="replace")[-3000:] if err.exists() else "(no stderr)"


def read_line(proc: subprocess.Popen[bytes], err: Path, what: str, timeout: float = 90.0) -> str:
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], timeout)
    assert readable, f"nothing ({what}) within {timeout} s:\n{tail(err)}"
    return proc.stdout.readline().decode()


def read_model_position(h: Harness) -> tuple[int, int]:
    newest, position = h.query(h.inspect.events_table.lag_sql)[0]
    return int(position or 0), int(newest or 0)


def kill(proc: subprocess.Popen[bytes], err: Path) -> None:
    assert proc.poll() is None, f"the worker was not alive at the kill ({proc.returncode}):\n{tail(err)}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"died of {proc.returncode}, not SIGKILL:\n{tail(err)}"


def kill_one_worker(url: str, trial: int, out: Path, err: Path, in_commit: bool, rng: random.Random) -> str | None:
    """Start a crash-loop worker and SIGKILL it: inside a held-open checkpoint commit
    (returns that checkpoint's id), or at a random moment after its first acknowledged
    batch."""
    before = acknowledged_batches(out)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    with open(err, "wb") as err_file:
        proc = subprocess.Popen(
            [sys.executable, WORKER, "crashloop", url, str(trial), str(out), "3" if in_commit else "0"],
            env=env, stdout=subprocess.PIPE if in_commit else subprocess.DEVNULL, stderr=err_file)
    try:
        if in_commit:
            line = read_line(proc, err, "a held-open checkpoint commit")
            assert line.startswith("commit "), f"no commit reported ({line!r}):\n{tail(err)}"
            kill(proc, err)
            return line.split()[1]
        wait_for(proc, lambda: len(acknowledged_batches(out) - before) >= 1, "the first acknowledged batch", err)
        time.sleep(rng.uniform(0.0, 0.6))  # into appends, summaries and commits
        kill(proc, err)
        return None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.slow
def test_sigkill_during_appends_and_compactions_never_leaves_a_mix(
    make_harness: MakeHarness, tmp_path: Path, record_property  # type: ignore[no-untyped-def]
) -> None:
    """12 kills: most at a random moment after the worker's first acknowledged batch,
    every third one inside a checkpoint commit (the worker holds the commit open and says
    so on stdout; the checkpoint it was committing must not survive).

    Breakages tried (each made this test fail): a worker that exits at once (``exit(0)``
    before the loop: "exited before the first acknowledged batch"); a worker that never
    compacts (no "commit" line: timeout); the read model projected after the event
    transaction instead of inside it (the worker's inline projection made a no-op:
    "read model at N, newest event M").
    """
    trials, commit_every = 12, 3
    h = make_harness("crash")
    ok(h.do({"type": "start_session", "session_id": "alpha", "model": "gpt-4o"}))
    rng = random.Random(20261129)
    out = tmp_path / "crash.jsonl"
    acknowledged: set[str] = set()
    commit_kills = 0
    for trial in range(trials):
        err = tmp_path / f"trial{trial}.stderr"
        in_commit = trial % commit_every == commit_every - 1
        before = acknowledged_batches(out)
        checkpoint_id = kill_one_worker(h.url, trial, out, err, in_commit, rng)
        commit_kills += in_commit
        # Raw SQL before any read (reads catch up a lagging read model): the projection
        # commits in the events' transaction, so it is never behind, even right after a kill.
        position, newest = read_model_position(h)
        assert position == newest, f"read model at {position}, newest event {newest}:\n{tail(err)}"
        h.reopen()
        now = acknowledged_batches(out)
        assert len(now - before) >= 1, f"trial {trial} acknowledged no batch:\n{tail(err)}"
        acknowledged |= now
        facts = check_store(h, sessions=("alpha",))
        raw = facts["alpha"]["raw"]
        per_batch = Counter(m["turn_id"] for m in raw)
        assert all(n == 5 for n in per_batch.values()), f"a partial batch survived: {per_batch}"
        assert acknowledged <= set(per_batch), "an acknowledged batch was lost"
        if checkpoint_id is not None:
            cps = ok(h.do({"type": "list_checkpoints", "session_id": "alpha"}))["checkpoints"]
            assert checkpoint_id not in {cp["checkpoint_id"] for cp in cps}, "a checkpoint killed before COMMIT survived"
    checkpoints = facts["alpha"]["checkpoints"]
    assert checkpoints >= 1, "no compaction ever committed"
    backend = "postgres" if h.is_postgres else "sqlite"
    record_property("sigkill_trials", trials)
    record_property("sigkill_inside_commit", commit_kills)
    record_property("acknowledged_batches", len(acknowledged))
    record_property("checkpoints", checkpoints)
    print(f"\nFIGURE sigkill[{backend}]: {trials} SIGKILLs ({commit_kills} inside a checkpoint commit), "
          f"{len(acknowledged)} acknowledged batches, {checkpoints} checkpoints: "
          "no partial batch, no mixed projection")
