"""The sections of ``make bench`` beyond the issue-6 core (issue 18), run from ``run.py``.

Each section measures ours and its reference in the same minutes and reports ratios;
``run`` returns the section's targets and appends its markdown to ``text``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

ALL = ["core", "pg"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pg-writers", default="1,2,4,8", help="writer process counts")
    parser.add_argument("--pg-seconds", type=float, default=3.0, help="seconds each configuration appends")
    parser.add_argument("--pg-prototypes", action="store_true",
                        help="also run the what-if variants of the write path (ADR 0030)")


def _target(name: str, value: Any, limit: str, ok: bool) -> dict[str, Any]:
    return {"target": name, "value": value, "limit": limit, "ok": bool(ok)}


def run(name: str, args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    print(f"section {name} ...", file=sys.stderr, flush=True)
    return {"pg": _pg}[name](args, report, text)


def _pg(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import pg

    missing = pg_reason = pg.pg_available()
    if missing:
        report["pg"] = {"skipped": pg_reason}
        text += ["", f"PostgreSQL section skipped: {pg_reason}"]
        return [_target("PG section ran", 0, "PostgreSQL at 127.0.0.1:5432", False)]
    import psycopg

    writers = [int(x) for x in args.pg_writers.split(",")]
    result = pg.pg_throughput(writers, args.pg_seconds, args.pg_prototypes)
    result["psycopg_impl"] = psycopg.pq.__impl__
    report["pg"] = result
    text += ["", f"PostgreSQL appends (one scenario turn each, {args.pg_seconds:g} s per row, "
             f"psycopg {result['psycopg_impl']} implementation):", ""]
    text += pg.pg_markdown(result)
    return [_target(*t) for t in pg.pg_targets(result)]
