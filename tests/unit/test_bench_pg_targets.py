"""The PostgreSQL targets ``make bench`` reports (issue 37) can fail; the fall from 1 to
8 writers (issue 18's target, information now) is read as before.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if not (BENCHMARKS / "pg.py").exists():
    pytest.skip("the sdist ships no benchmarks/ (make bench runs from the repository)", allow_module_level=True)
sys.path.append(str(BENCHMARKS))  # (after ours: no shadowing)

from pg import pg_targets, scaling_fall  # noqa: E402


@pytest.mark.parametrize(
    ("ours", "raw", "expected"),
    [
        ((796, 688), (3163, 3018), ("13.6%", "4.6%", False)),  # (the issue's own figures, 1 and 4 writers)
        ((800, 760), (1000, 900), ("5.0%", "10.0%", True)),  # ours falls less than raw
        ((800, 760), (1000, 1100), ("5.0%", "0.0%", False)),  # raw gains, ours falls
        ((800, 797), (1000, 2000), ("0.4%", "0.0%", False)),  # a small fall is still a fall
        ((800, 1430), (1000, 2090), ("0.0%", "0.0%", True)),  # both gain: no fall (the gain is info)
        ((800, 796), (1000, 995), ("0.5%", "0.5%", True)),  # equal as shown: not failed on rounding
        ((800, 796.4), (1000, 995.5), ("0.5%", "0.5%", True)),  # (0.45 % each, in a float's bits apart)
        ((0, 10), (1000, 900), ("n/a", "n/a", False)),
        ((800, float("nan")), (1000, 900), ("n/a", "n/a", False)),
        ((800, 700), (0, 10), ("n/a", "n/a", False)),
    ],
)
def test_the_fall_target(ours: tuple[int, int], raw: tuple[int, int], expected: tuple[str, str, bool]) -> None:
    assert scaling_fall(ours[0], ours[1], raw[0], raw[1]) == expected


def _row(ours: float, raw: float, raw_locked: float) -> dict[str, Any]:
    return {"ours": {"appends_per_s": ours, "give_ups": 0}, "raw": {"appends_per_s": raw},
            "raw_locked": {"appends_per_s": raw_locked},
            "ratio": round(ours / raw, 2), "ratio_locked": round(ours / raw_locked, 2),
            "locked_over_raw": round(raw_locked / raw, 2)}


def test_the_report_holds_ours_to_raw_at_one_writer_and_to_the_locked_ceiling_at_eight() -> None:
    report = {"distinct": {"1": _row(650, 1000, 900), "8": _row(700, 1500, 800)}, "shared": {}}
    rows = {name: (value, ok) for name, value, _, ok in pg_targets(report)}
    assert rows["PG: distinct sessions, 1 writer(s): ours / raw INSERT"] == (0.65, True)
    assert rows["PG: distinct sessions, 8 writer(s): ours / raw INSERT + events lock"] == (0.88, True)
    assert rows["PG give-ups (storage_error), all runs"] == (0, True)
    missed = {"distinct": {"1": _row(550, 1000, 900), "8": _row(600, 1500, 800)}, "shared": {}}
    rows = {name: (value, ok) for name, value, _, ok in pg_targets(missed)}
    assert rows["PG: distinct sessions, 1 writer(s): ours / raw INSERT"] == (0.55, False)
    assert rows["PG: distinct sessions, 8 writer(s): ours / raw INSERT + events lock"] == (0.75, False)
