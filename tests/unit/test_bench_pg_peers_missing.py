"""``make bench`` reports the PostgreSQL peers' targets as missed when the bench venv
lacks a peer, instead of leaving the rows out (issue 37: no target that cannot fail)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if not (BENCHMARKS / "sections.py").exists():
    pytest.skip("the sdist ships no benchmarks/ (make bench runs from the repository)", allow_module_level=True)
sys.path.append(str(BENCHMARKS))  # (after ours: no shadowing)

import sections  # noqa: E402


def test_a_missing_peer_module_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = sections._find
    monkeypatch.setattr(sections, "_find", lambda name: None if name.startswith("langgraph") else real(name))
    assert "langgraph.checkpoint.postgres" in sections.pg_peers_missing()


def test_a_parent_package_missing_is_a_missing_module() -> None:
    assert sections._find("no_such_package_37.sub") is None
