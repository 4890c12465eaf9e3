"""Issue 36 finding 7: a write past the process's file-size limit (``ulimit -f``) names
the limit instead of a bare "disk I/O error"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = """
import json, os, resource, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from context_compaction import Settings, bootstrap
bus = bootstrap(Settings(database_url="sqlite:///" + sys.argv[1]))
print(json.dumps(bus.dispatch_json({"type": "start_session", "session_id": "f", "model": "gpt-4o"})))
size = os.path.getsize(sys.argv[1]) + os.path.getsize(sys.argv[1] + "-wal")
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 200_000, resource.RLIM_INFINITY))
for i in range(40):
    answer = bus.dispatch_json({"type": "append_messages", "session_id": "f",
                                "messages": [{"role": "user", "content": f"{i} " + "x" * 100_000}]})
    if not answer["ok"]:
        break
print(json.dumps(answer))
"""


def test_a_write_past_the_file_size_limit_names_the_limit(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / "f.db")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    started, last = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert started["ok"], started
    assert not last["ok"], "the limit was never reached"
    error = last["error"]
    assert error["code"] == "storage_error", error
    assert "file-size limit" in error["message"] and "ulimit -f" in error["message"], error
    assert "busy" not in error["message"], error


_SKEWED = """
import os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import freezegun
from datetime import datetime, timedelta, timezone
from context_compaction import Settings, bootstrap
with freezegun.freeze_time(datetime.now(timezone.utc) + timedelta(hours=1)):
    bus = bootstrap(Settings(database_url=sys.argv[1]))
    taken = bus.services.leases.acquire("s", "skewed-owner", 30.0)
    print("taken" if taken else "refused", bus.services.leases.holder("s"))
"""


def test_a_process_whose_clock_runs_an_hour_ahead_cannot_take_a_running_lease(tmp_path: Path) -> None:
    """Issue 36 finding 6 (ADR 0071): the lease's expiry is decided in the SQL
    (``julianday('now')``), never on the Python clock, which freezegun moves here."""
    import os

    from context_compaction import Settings, bootstrap

    url = f"sqlite:///{tmp_path / 'lease.db'}"
    bus = bootstrap(Settings(database_url=url))
    try:
        assert bus.services.leases.acquire("s", "running-owner", 30.0)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
        done = subprocess.run([sys.executable, "-c", _SKEWED, url], capture_output=True, text=True, timeout=120,
                              env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == ["refused", "running-owner"], done.stdout
        assert bus.services.leases.holder("s") == "running-owner"
    finally:
        bus.close()


LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")

_FAKED = """
import os, sys, time
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from context_compaction import Settings, bootstrap
bus = bootstrap(Settings(database_url=sys.argv[1]))
leases = bus.services.leases
print(time.time() - float(sys.argv[2]), flush=True)  # the skew this process lives with
print("taken" if leases.acquire("s", "skewed-owner", 3.0) else "refused", leases.holder("s"), flush=True)
sys.stdin.readline()  # the running turn's process has stopped renewing (a crash)
deadline = time.monotonic() + 60
while not leases.acquire("s", "skewed-owner", 3.0):
    assert time.monotonic() < deadline, "never taken"
    time.sleep(0.2)
print("taken-after-crash", leases.holder("s"), flush=True)
"""


def test_a_process_whose_libc_clock_runs_an_hour_ahead_cannot_take_a_live_sqlite_lease(tmp_path: Path) -> None:
    """Issue 36 finding 6 (ADR 0085): libfaketime moves the clock under Python, so
    SQLite's own ``julianday('now')`` in that process is an hour ahead and the lease of a
    running turn looked expired to it. The lease is now taken only after its holder was
    seen not renewing for the lease's length on the taker's own monotonic clock (an
    offset clock measures durations right); the crashed holder's lease is still taken."""
    import os
    import threading
    import time

    if not LIBFAKETIME.exists():
        if os.environ.get("REQUIRE_FAKETIME"):
            raise AssertionError(f"{LIBFAKETIME} is missing: apt-get install -y faketime")
        pytest.skip("libfaketime is not installed (apt-get install -y faketime; .ci/run installs it)")
    from context_compaction import Settings, bootstrap

    url = f"sqlite:///{tmp_path / 'lease.db'}"
    bus = bootstrap(Settings(database_url=url))
    leases = bus.services.leases
    stop = threading.Event()

    def keep_renewing() -> None:  # what a running turn does, every third of its lease
        while not stop.wait(1.0):
            assert leases.renew("s", "running-owner", 3.0)

    renewer = threading.Thread(target=keep_renewing, daemon=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "LD_PRELOAD": str(LIBFAKETIME),
           "FAKETIME": "+1h", "FAKETIME_DONT_RESET": "1"}
    try:
        assert leases.acquire("s", "running-owner", 3.0)
        renewer.start()
        skewed = subprocess.Popen([sys.executable, "-c", _FAKED, url, str(time.time())], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert skewed.stdout is not None and skewed.stdin is not None
        skew = float(skewed.stdout.readline() or "nan")
        assert 3590 < skew < 3700, (skew, skewed.stderr.read() if skewed.poll() is not None else "")
        answer = skewed.stdout.readline().split()
        assert answer == ["refused", "running-owner"], (answer, skewed.stderr.read() if not answer else "")
        assert leases.holder("s") == "running-owner"
        stop.set()
        renewer.join()
        skewed.stdin.write("\n")
        skewed.stdin.flush()
        out, err = skewed.communicate(timeout=120)
        assert skewed.returncode == 0, err[-2000:]
        assert out.split() == ["taken-after-crash", "skewed-owner"], out
    finally:
        stop.set()
        bus.close()


def test_a_lease_table_from_before_adr_0085_gains_its_columns_and_keeps_its_lease(tmp_path: Path) -> None:
    """An older SQLite file's ``ctxc_turn_leases`` (owner, expiry only) gains the renewal
    count and lease length at first use; a live lease in it is still refused to others."""
    import sqlite3

    from context_compaction import Settings, bootstrap

    path = tmp_path / "old.db"
    bus = bootstrap(Settings(database_url=f"sqlite:///{path}"))
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE ctxc_turn_leases (session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                     "expires_at DOUBLE PRECISION NOT NULL)")
        conn.execute("INSERT INTO ctxc_turn_leases VALUES ('s', 'old-owner', "
                     "(julianday('now') - 2440587.5) * 86400.0 + 30)")
    conn.close()
    try:
        leases = bus.services.leases
        assert not leases.acquire("s", "new-owner", 30.0) and leases.holder("s") == "old-owner"
        assert leases.renew("s", "old-owner", 30.0)
        with sqlite3.connect(path) as conn:
            columns = [row[1] for row in conn.execute("PRAGMA table_info(ctxc_turn_leases)")]
        conn.close()
        assert columns == ["session_id", "owner", "expires_at", "renewals", "lease_seconds"]
    finally:
        bus.close()


_CRASHING_HOLDER = """
import os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from context_compaction import Settings, bootstrap
bus = bootstrap(Settings(database_url=sys.argv[1]))
print("taken" if bus.services.leases.acquire("s", "skewed-holder", 2.0) else "refused", flush=True)
os._exit(0)  # a crash: never renewed, never released
"""


def test_a_fresh_process_takes_the_lease_of_a_crashed_holder_whose_clock_ran_an_hour_ahead(tmp_path: Path) -> None:
    """ADR 0085: the holder's clock was an hour ahead, so its lease's expiry lies an hour
    in the future by an honest clock, beyond any lease length. A process that asks once
    (a fresh ``ctxc`` or server, nothing remembered) watched nothing and was refused for
    the hour; an expiry farther away than the lease's length is a clock that disagrees,
    so it is watched for a lease and, unrenewed, taken."""
    import os
    import time

    if not LIBFAKETIME.exists():
        if os.environ.get("REQUIRE_FAKETIME"):
            raise AssertionError(f"{LIBFAKETIME} is missing: apt-get install -y faketime")
        pytest.skip("libfaketime is not installed (apt-get install -y faketime; .ci/run installs it)")
    from context_compaction import Settings, bootstrap

    url = f"sqlite:///{tmp_path / 'lease.db'}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "LD_PRELOAD": str(LIBFAKETIME),
           "FAKETIME": "+1h", "FAKETIME_DONT_RESET": "1"}
    done = subprocess.run([sys.executable, "-c", _CRASHING_HOLDER, url], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.split() == ["taken"], (done.stdout, done.stderr[-2000:])
    bus = bootstrap(Settings(database_url=url))
    try:
        started = time.monotonic()
        assert bus.services.leases.acquire("s", "honest-owner", 2.0)
        assert time.monotonic() - started >= 1.5  # watched for the crashed holder's lease first
        assert bus.services.leases.holder("s") == "honest-owner"
    finally:
        bus.close()
