"""Issue 36 finding 7: a write past the process's file-size limit (``ulimit -f``) names
the limit instead of a bare "disk I/O error"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
