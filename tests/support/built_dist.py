"""``make dist`` once per test run (not a test module): the sdist and the wheel built
from it, shared by the packaging tests and the README's install test.

Both built the same artifacts apart (an sdist twice, a wheel twice, a copy of the tree
each time), ~40 s of a run (ADR 0089). Under xdist the workers share one build: the
first to take the lock builds, the others wait for it and read the same directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_JUNK = shutil.ignore_patterns(".venv*", ".git", "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis",
                               "*.egg-info", "build", "dist", "*.db", "*.db-wal", "*.db-shm", "ctxc-demo",
                               ".mypy_cache")


def JUNK(folder: str, names: list[str]) -> set[str]:  # noqa: N802 (used as copytree's ignore)
    # (the bench's results only: a bare "results" pattern also left out the package
    # application/contracts/results, and the copy could not be built)
    skipped = set(_JUNK(folder, names))
    if Path(folder).name == "benchmarks" and "results" in names:
        skipped.add("results")
    return skipped


def built_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``dist`` directory ``make dist`` wrote from a copy of the source tree: one
    ``*.tar.gz`` and one ``*.whl`` (``python -m build`` builds the wheel from the sdist).
    A failed build fails every test that asks, each with the build's own output."""
    base = tmp_path_factory.getbasetemp()
    # xdist workers' temp dirs are siblings under the run's own root; alone, ours is it.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    work = shared / "built-dist"
    outcome = shared / "built-dist.json"
    with open(shared / "built-dist.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not outcome.exists():
            shutil.rmtree(work, ignore_errors=True)
            source = work / "checkout"
            shutil.copytree(ROOT, source, ignore=JUNK)
            proc = subprocess.run(["make", "-o", ".venv/.installed", "dist", f"BIN={Path(sys.executable).parent}",
                                   f"DIST={work / 'dist'}"], cwd=source, capture_output=True, text=True,
                                  timeout=600, check=False)
            outcome.write_text(json.dumps({"returncode": proc.returncode,
                                           "output": proc.stdout[-2000:] + proc.stderr[-2000:]}))
    built = json.loads(outcome.read_text())
    assert built["returncode"] == 0, built["output"]
    return work / "dist"
