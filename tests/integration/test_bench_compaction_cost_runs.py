"""The bench's compaction section runs on the code as it is (it stands in for the
checklist by name, so a changed signature broke it unseen until a full ``make bench``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_compaction_cost_bench_runs_on_a_small_context() -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compactcost.py"), "--tokens", "30000",
                           "--repeats", "1"], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["summarized_messages"] > 0 and report["tokens_after"] < report["context_tokens"]
    assert report["end_to_end_ms"] > 0 and report["no_checklist_ms"] > 0
