"""Shared by the tests of concurrent retries and their neighbours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
import pytest
from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, ok, user


PROCESSES = 6
WORKER = str(Path(__file__).parent / "idem_worker.py")


def released_together(h: Harness, tmp_path: Path, command: dict[str, Any], name: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    outs = [tmp_path / f"{name}{i}.json" for i in range(PROCESSES)]
    procs = [subprocess.Popen([sys.executable, WORKER, h.url, str(out), json.dumps(command)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for out in outs]
    waited = time.monotonic() + 120
    while not all(Path(f"{out}.ready").exists() for out in outs):
        assert time.monotonic() < waited and all(p.poll() is None for p in procs), "a worker did not start"
        time.sleep(0.02)
    for out in outs:
        Path(f"{out}.go").touch()
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()[-2000:]
    return [json.loads(out.read_text(encoding="utf-8")) for out in outs]


def _same_answers(envelopes: list[dict[str, Any]]) -> dict[str, Any]:
    failures = [e["error"] for e in envelopes if not e["ok"]]
    assert not failures, failures
    results = [e["result"] for e in envelopes]
    # (append's ``duplicate`` tells the first from its retries; nothing else differs)
    plain = [{k: v for k, v in r.items() if k != "duplicate"} for r in results]
    assert all(p == plain[0] for p in plain), plain
    return results[0]
