"""The PostgreSQL peers' targets ``make bench`` reports (issue 37): ours faster per turn
than LangGraph's ``PostgresSaver`` and the Agents SDK's ``SQLAlchemySession``, and its
restore faster than theirs; each can fail."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if not (BENCHMARKS / "pg_peers.py").exists():
    pytest.skip("the sdist ships no benchmarks/ (make bench runs from the repository)", allow_module_level=True)
sys.path.append(str(BENCHMARKS))  # (after ours: no shadowing)

from pg_peers import markdown, targets  # noqa: E402


def _report(one: float, eight: float, restore_ms: float) -> dict[str, Any]:
    def side(rate: float) -> dict[str, Any]:
        return {"appends_per_s": rate, "p50_ms": 1000 / rate}

    rows = {n: {"ours": side(10 * ratio), "langgraph": side(10.0), "agents": side(10.0),
                "ours_over_langgraph": ratio, "ours_over_agents": ratio}
            for n, ratio in (("1", one), ("8", eight))}
    restore = {"messages": 10_003, **{k: {"ms": ms, "messages_read": 10_003}
                                      for k, ms in (("ours", restore_ms), ("ours_compacted", 400.0),
                                                    ("langgraph", 3000.0), ("agents", 1200.0))}}
    return {"per_turn": rows, "restore": restore}


def test_the_peer_targets_hold_only_when_ours_is_faster() -> None:
    found = {name: ok for name, _, _, ok in targets(_report(2.4, 0.8, 3300.0))}
    assert found["PG peers, 1 writer(s): ours turns/s / langgraph's"] is True
    assert found["PG peers, 8 writer(s): ours turns/s / agents's"] is False
    assert found["PG restore of 10,003 messages: ours ms / agents's"] is False
    assert found["PG restore of 10,003 messages: ours_compacted ms / langgraph's"] is True
    assert all(ok for _, _, _, ok in targets(_report(1.5, 1.2, 1000.0)))


def test_the_peers_table_has_a_row_per_writer_count_and_the_restore() -> None:
    lines = markdown(_report(2.4, 0.8, 3300.0))
    assert lines[2].startswith("| 1 | 24.0 (41.7 ms) | 10.0 (100.0 ms)")
    assert lines[-1].startswith("| 10,003 messages | 3,300 ms (10,003)")


def test_a_peer_that_failed_or_restored_less_does_not_make_ours_faster() -> None:
    """A peer whose every append raised has a rate of 0 (an infinite ratio), and a side
    that restored fewer messages than the session holds did less work: neither is a win."""
    report = _report(1.5, 1.2, 1000.0)
    report["per_turn"]["8"]["agents"] = {"appends_per_s": 0.0, "p50_ms": 0.0, "errors": {"OperationalError": 40}}
    report["per_turn"]["8"]["ours_over_agents"] = float("inf")
    report["per_turn"]["1"]["ours"]["errors"] = {"storage_error": 1}
    report["restore"]["langgraph"]["messages_read"] = 10
    report["restore"]["ours"]["messages_read"] = 9_000
    found = {name: ok for name, _, _, ok in targets(report)}
    assert found["PG peers, 8 writer(s): ours turns/s / agents's"] is False
    assert found["PG peers, 1 writer(s): ours turns/s / langgraph's"] is False
    assert found["PG restore of 10,003 messages: ours_compacted ms / langgraph's"] is False
    assert found["PG restore of 10,003 messages: ours ms / agents's"] is False
    assert found["PG restore of 10,003 messages: ours_compacted ms / agents's"] is True
