"""``make bench`` writes docs/performance.md itself (``benchmarks/render.py``, issue 39):
the run's tables, each target ok or MISSED with its cause, one "previous run" column
where a figure moved, and no diary (no load average)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if not (BENCHMARKS / "render.py").exists():
    pytest.skip("the sdist ships no benchmarks/ (make bench runs from the repository)", allow_module_level=True)
sys.path.append(str(BENCHMARKS))  # (after ours: no shadowing)

from render import render  # noqa: E402

#: Saved results in the shape run.py writes (figures of the 2026-12-03 run and the run before).
SAMPLE = json.loads((Path(__file__).resolve().parents[1] / "support" / "bench_results_sample.json").read_text())


def rows(page: str) -> dict[str, list[str]]:
    """The targets table: target name -> its other cells."""
    table = page.split("## Targets", 1)[1].split("## Tables", 1)[0]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table.splitlines() if line.startswith("| ")]
    return {row[0]: row[1:] for row in cells[1:]}


def test_every_target_is_ok_or_missed_with_its_cause() -> None:
    page = render(SAMPLE["latest"], SAMPLE["previous"])
    table = rows(page)
    assert set(table) == {t["target"] for t in SAMPLE["latest"]["targets"]}
    assert table["per-turn N=10000 / N=1000"][-1] == "ok"
    floor = table["per-turn / physical floor at N=10000"][-1]
    assert floor.startswith("**MISSED**: `prepare_turn` hands the host a copy") and "measured 7.11, limit <= 5" in floor
    # a miss nobody has explained yet still shows what was measured against what
    assert table["json / typed at N=10000"][-1] == "**MISSED**: measured 1.31, limit <= 1.2"


def test_one_previous_run_column_only_where_a_figure_moved() -> None:
    table = rows(render(SAMPLE["latest"], SAMPLE["previous"]))
    assert table["per-turn / physical floor at N=10000"][:2] == ["7.11", "8.18"]
    assert table["append throughput / raw INSERT"][:2] == ["0.48", "0.54"]
    assert table["per-turn N=10000 / N=1000"][:2] == ["1.46", ""]
    alone = render(SAMPLE["latest"])
    assert "previous run" not in alone and rows(alone)["per-turn N=10000 / N=1000"] == ["1.46", "<= 1.5", "ok"]


def test_the_page_has_the_run_s_tables_and_no_diary() -> None:
    page = render(SAMPLE["latest"], SAMPLE["previous"])
    assert page.startswith("# Performance\n") and "2026-12-03 21:40 UTC" in page
    assert "| 10,000 | 27.97 ms | 3.94 ms |" in page and "JSON path against typed `dispatch`:" in page
    assert "load" not in page.lower() and "[3.1, 2.9" not in page and "2.9" not in page


def test_the_command_writes_the_page_from_the_results_files(tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text(json.dumps(SAMPLE["latest"]))
    (tmp_path / "previous.json").write_text(json.dumps(SAMPLE["previous"]))
    out = tmp_path / "performance.md"
    subprocess.run([sys.executable, str(BENCHMARKS / "render.py"), "--results", str(tmp_path / "latest.json"),
                    "--previous", str(tmp_path / "previous.json"), "--out", str(out)], check=True, capture_output=True)
    assert out.read_text() == render(SAMPLE["latest"], SAMPLE["previous"])


def test_issue_38_s_turn_target_is_a_row_measured_against_the_rebuilding_pass() -> None:
    # (ADR 0088: the floor is the pass a host makes to build a request, rebuilding each
    # message; the reading pass is shown beside it, with no target)
    import handout_turn

    def row(over_rebuilding: float) -> list[str]:
        turn = {"python": "3.13.0", "handout_path": "lazy dict tracking", "messages": 10_000,
                "prepare_turn_over_one_pass": 14.2, "prepare_turn_over_rebuilding_pass": over_rebuilding}
        targets = [{"target": t[0], "value": t[1], "limit": t[2], "ok": t[3]} for t in handout_turn.targets(turn)]
        return rows(render({"targets": targets}))[
            "prepare_turn at 10,000 uncompacted / one Python pass over the history (CPython 3.13.0, lazy dict tracking)"]

    assert row(1.4) == ["1.4", "<= 2", "ok"]
    missed = row(2.3)
    assert missed[0] == "2.3" and missed[-1].startswith("**MISSED**: the request holds every message")
