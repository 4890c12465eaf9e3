"""Issue 37's SQLite targets alone, with the core and JSON sections' own measurements:
append throughput against raw ``json.dumps`` + INSERT (typed ``AppendMessages`` and the
JSON path, three fresh-process runs each, the median run) and the cold restore of a
compacted session against a raw SELECT of its tail (``run.cold_restore``).

``python benchmarks/sqlite_targets.py [--sizes 1000,10000] [--append-turns 300]``;
prints JSON. ``make bench`` measures the same inside its core and JSON sections.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--append-turns", type=int, default=300)
    args = parser.parse_args()

    import jsonpath
    import run
    from workload import unique_turns

    from context_compaction import bootstrap
    from context_compaction import commands as c

    work = Path(tempfile.mkdtemp(prefix="ctxc-sqlite-targets-"))
    report: dict[str, Any] = {}
    try:
        typed = []
        for i in range(3):  # (fresh processes, as the core section)
            out = subprocess.run([sys.executable, str(HERE / "run.py"), "--append-only", str(work / f"append{i}.db")],
                                 capture_output=True, text=True, check=True)
            typed.append(json.loads(out.stdout))
        typed.sort(key=lambda r: r["ratio"])
        report["append_typed"] = {**typed[1], "ratios": [r["ratio"] for r in typed]}
        (work / "json").mkdir()  # (its files are named as the typed runs' above)
        runs = sorted((jsonpath.json_append_throughput(work / "json", unique_turns(args.append_turns, f"a{i}"), i)
                       for i in range(3)), key=lambda r: r["ratio"])
        report["append_json"] = {**runs[1], "ratios": [r["ratio"] for r in runs]}
        report["restore"] = {}
        for n in (int(x) for x in args.sizes.split(",")):
            path = work / f"compacted{n}.db"
            run.build_session(path, n, compact=False)
            bus = bootstrap(run.settings(path))
            bus.dispatch(c.Compact(session_id="s"))
            bus.close()
            history = [m for turn in run.session_messages(n) for m in turn]
            report["restore"][str(n)] = run.cold_restore(path, history)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
