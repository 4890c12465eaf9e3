"""Write ``docs/performance.md`` from a ``make bench`` run's JSON (issue 39).

The page is the bench's own output, not a diary: the run's date and machine, every
section's tables as ``run.py`` printed them, and one table of targets, each ``ok`` or
``MISSED`` with its cause. Where a figure moved since the run before (the previous
``latest.json``, kept as ``previous.json``), the previous figure is the one extra
column. ``make bench`` runs this after ``run.py``; by hand:

    python benchmarks/render.py [--results benchmarks/results/latest.json]
                                [--previous benchmarks/results/previous.json] [--out docs/performance.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

#: Why a target known to miss misses, as measured when it was investigated (the ADR
#: that records it), keyed by a part of the target's name. A miss not listed here shows
#: its measured value against its limit.
CAUSES: dict[str, str] = {
    "per-turn / physical floor": (
        "`prepare_turn` hands the host a copy of the request that shares nothing with the "
        "library's cache (issue 13); the copy and the collections it causes are most of the "
        "gap (ADR 0058, ADR 0062); with compaction on a request stays bounded"),
    "cold restore (compacted) / raw SELECT": (
        "a fixed cost per bootstrap over a raw SELECT of a few rows (ADR 0059); measured "
        "2026-12-05 at 10k messages: `bootstrap` 0.6 ms (SQLite connect, the library's "
        "journal-mode PRAGMA, the first statement reading a schema of ~20 tables against "
        "raw's one, the `Application`), `get_projection` 0.6 ms, raw's connect and SELECT "
        "0.2-0.3 ms; imports are outside the timed region; on a loaded machine the file "
        "opens and first reads stretch most"),
    "append throughput / raw INSERT": (
        "the ratio rides on the disk's flush: ours writes about twice the WAL frames per "
        "commit (ADR 0056, ADR 0062)"),
    "ctxc start (s)": "importing the CLI's modules (pydantic and the command models)",
    "prepare_turn at ": (
        "the request holds every message and is handed out as the caller's own copy (issue 13, "
        "ADR 0058): one nested copy a turn beside the host's own pass; see the turn section's "
        "table (ADR 0088)"),
    "JSON append throughput / raw json.dumps + INSERT": (
        "the typed append's costs plus parsing the command (ADR 0056, ADR 0062); the "
        "library's row-by-row INSERT and the read-model rows and position in the same commit"),
    # Issue 37's PostgreSQL targets (docs/storage.md, "Where an append's time goes").
    **{f"{label}: distinct sessions, 1 writer(s): ours / raw INSERT": (
        "the library's pipelined transaction waits on the server 5 times where raw waits "
        "twice (ADR 0084), notifies at COMMIT (its `_notify_channel`), and writes the "
        "read-model rows raw does not; client CPU is about a fifth of an append")
       for label in ("PG (python psycopg)", "PG (binary psycopg)")},
    **{f"{label}: distinct sessions, 8 writer(s): ours / raw INSERT + events lock": (
        "the same per-append costs, all paid while holding the library's events lock, "
        "which serializes every writer: raw holds it for 2 round trips, ours for 4")
       for label in ("PG (python psycopg)", "PG (binary psycopg)")},
    "PG peers, 1 writer(s)": (
        "the same 5 round trips, NOTIFY and read-model rows per append as the raw INSERT "
        "row above; the Agents SDK's `add_items` is one INSERT of the turn's rows and an "
        "UPDATE of its session row"),
    "PG peers, 8 writer(s)": (
        "every append of ours takes the library's events lock (the gapless notification "
        "order followers and `read_events` rely on); the peers take no table lock, so "
        "their 8 writers run in parallel while ours queue"),
    "messages: ours ms / ": (
        "ours rebuilds the model's request from every event (decoding each, converting each "
        "message to the provider's format, scanning tool calls) where the peers hand back "
        "their stored JSON rows"),
    "messages: ours_compacted ms / ": (
        "a fresh `bootstrap` on PostgreSQL each restore (the pool, the schema lock's own "
        "connection, the schema mark) against the peers' one connection; on a loaded "
        "machine that start swings most: six restore-only runs of `pg_peers.py --writers "
        "''` on 2026-12-05 put ours at 0.18-0.48 of the Agents SDK's time and 0.11-0.20 "
        "of LangGraph's"),
    # Issue 44 on the first set written without the extractor in view; ADR 0096 added the
    # forms its first run lost (so it is no longer untuned: "blind" is, below).
    **{f"fresh {drive}": (
        "preferences said with no stance word (\"X keeps Y sane\") are never extracted, so "
        "neither kept nor reported, and an update that names its subject with another noun "
        "does not supersede; one miss in 2-5 preference canaries is 20-50 % of the kind "
        "(ADR 0096; soft wishes, answers and values said first were added there)")
       for drive in ("rounds", "conversation")},
    # The set written without reading the extractor and frozen (ADR 0097); used to diagnose
    # since, so "blind2" is the untuned one (ADR 0102).
    **{f"blind {drive}": (
        "wording written blind to the extractor and never rephrased after a run (ADR 0097): "
        "`ctxc eval --sets blind --json` lists the sentences lost (`lost_examples`)")
       for drive in ("rounds", "conversation")},
    # Written under the same rule and frozen; used to diagnose since, so "blind3" is the
    # untuned one (ADR 0105).
    **{f"blind2 {drive}": (
        "wording written blind to the extractor, after `blind` was used to diagnose, and never "
        "rephrased after a run (ADR 0102): `ctxc eval --sets blind2 --json` lists the sentences "
        "lost (`lost_examples`)")
       for drive in ("rounds", "conversation")},
    # Written under the same rule and frozen; used to diagnose since, so "blind4" is the
    # untuned one (ADR 0108).
    **{f"blind3 {drive}": (
        "wording written blind to the extractor, after `blind2` was used to diagnose, and never "
        "rephrased after a run (ADR 0105): `ctxc eval --sets blind3 --json` lists the sentences "
        "lost (`lost_examples`)")
       for drive in ("rounds", "conversation")},
    # Written under the same rule and frozen; used to diagnose since, so "blind5" is the
    # untuned one (ADR 0113).
    **{f"blind4 {drive}": (
        "wording written blind to the extractor, after `blind3` was used to diagnose, and never "
        "rephrased after a run (ADR 0108): `ctxc eval --sets blind4 --json` lists the sentences "
        "lost (`lost_examples`)")
       for drive in ("rounds", "conversation")},
    # Written under the same rule, frozen, never used to diagnose: a miss is the extractor's
    # on wording nobody tuned it to.
    **{f"blind5 {drive}": (
        "wording written blind to the extractor, after `blind4` was used to diagnose, and never "
        "rephrased after a run (ADR 0113): `ctxc eval --sets blind5 --json` lists the sentences "
        "lost (`lost_examples`)")
       for drive in ("rounds", "conversation")},
}

HEADER = """# Performance

Written by `make bench` (`benchmarks/render.py`) from its results; do not edit by hand.
Ratios come from one run, measured in the same minutes; absolute times depend on the
machine. What each section measures and why: `benchmarks/` and the ADRs it names.
"""


def cause(target: dict[str, Any]) -> str:
    if target["ok"]:
        return "ok"
    for part, why in CAUSES.items():  # (a part: names carry counts, 10,003 messages)
        if part in target["target"]:
            return f"**MISSED**: {why} (measured {target['value']}, limit {target['limit']})"
    return f"**MISSED**: measured {target['value']}, limit {target['limit']}"


def _previous_values(previous: dict[str, Any] | None) -> dict[str, Any]:
    if not previous:
        return {}
    return {t["target"]: t["value"] for t in previous.get("targets", [])}


def render(report: dict[str, Any], previous: dict[str, Any] | None = None) -> str:
    """The page for ``report`` (``run.py``'s JSON), with ``previous`` where a figure moved."""
    machine = report.get("machine", {})
    lines = [HEADER]
    when = report.get("finished_at", "unknown date")
    lines.append(f"Run of {when}: sections {', '.join(report.get('sections', []))}; "
                 f"Python {machine.get('python', '?')}, {machine.get('cpus', '?')} CPUs "
                 f"({machine.get('platform', '?')}).")
    seconds = report.get("section_seconds") or {}
    if seconds:
        lines.append("Wall time per section (s): " + ", ".join(f"{k} {v}" for k, v in seconds.items()) + ".")
    before = _previous_values(previous)
    moved = {t["target"] for t in report.get("targets", [])
             if t["target"] in before and before[t["target"]] != t["value"]}
    lines += ["", "## Targets", ""]
    if moved:
        lines += ["| target | this run | previous run | limit | status |", "|---|---|---|---|---|"]
    else:
        lines += ["| target | this run | limit | status |", "|---|---|---|---|"]
    for t in report.get("targets", []):
        cells = [t["target"], str(t["value"])]
        if moved:
            cells.append(str(before[t["target"]]) if t["target"] in moved else "")
        cells += [str(t["limit"]), cause(t)]
        lines.append("| " + " | ".join([c.replace("|", "\\|") for c in cells[:-1]] + [cells[-1]]) + " |")
    lines += ["", "## Tables", ""]
    lines += [part.rstrip("\n") for part in report.get("markdown", [])]
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(RESULTS / "latest.json"))
    parser.add_argument("--previous", default=str(RESULTS / "previous.json"))
    parser.add_argument("--out", default=str(HERE.parent / "docs" / "performance.md"))
    args = parser.parse_args()
    report = json.loads(Path(args.results).read_text(encoding="utf-8"))
    previous_path = Path(args.previous)
    previous = json.loads(previous_path.read_text(encoding="utf-8")) if previous_path.is_file() else None
    Path(args.out).write_text(render(report, previous), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
