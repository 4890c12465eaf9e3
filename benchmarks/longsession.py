"""Long sessions, up to 100k messages: per-turn cost with compaction active, cold
restore, the restoring process's RSS and ``ctxc verify``'s peak memory.

One session is filled once, in ~1,000-message ``AppendMessages`` batches straight
through the bus, compacting after each batch as a long-lived session would (each
compaction tokenizes only the messages since the previous one); its database is
copied when it reaches each smaller size, so every size holds the same history
prefix, compacted a moment ago. The scenario's turns are generated once and reused
with fresh ids (the generator is the slow part of filling).

Beside each turn, ``prepare_turn`` alone is set against one Python pass reading each
message of a history of that size (issue 38's floor, ``handout_turn.py``; ADR 0088).

Runs in its own process (``python benchmarks/longsession.py [--sizes 1000,10000,100000]``)
and prints its report as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

from workload import MODEL, SYSTEM, TOOLS, median, ms, relabel, unique_turns

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction import commands as c  # noqa: E402
from context_compaction.infrastructure.demo.scenario import iter_turns  # noqa: E402

WINDOW = 128_000
BATCH = 900  # + one turn stays under the 1,000-message command limit


def settings(path: Path, **extra: Any) -> Settings:
    return Settings(database_url=f"sqlite:///{path}", summarizer="extractive",
                    models={MODEL: {"token_limit": WINDOW}}, **extra)


def copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if Path(str(src) + suffix).exists():
            shutil.copy(str(src) + suffix, str(dst) + suffix)


def fill(work: Path, sizes: list[int]) -> dict[str, Any]:
    """Fill one session to max(sizes), copying its database at each size."""
    base = [t.messages() for t in islice(iter_turns(seed=7), 250)]  # ~2,200 messages
    path = work / "fill.db"
    bus = bootstrap(settings(path, context_compaction={"enabled": False}))
    bus.dispatch(c.StartSession(session_id="s", model=MODEL))
    count = passes = 0
    pending = sorted(sizes)
    batch: list[dict[str, Any]] = []
    t_append = t_compact = 0.0
    t0 = time.perf_counter()
    while pending:
        for turn in base:
            batch += relabel(turn, f"p{passes}")
            if len(batch) < BATCH and count + len(batch) < pending[0]:
                continue
            t1 = time.perf_counter()
            bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
            t2 = time.perf_counter()
            outcome = bus.dispatch(c.Compact(session_id="s"))
            t_append += t2 - t1
            t_compact += time.perf_counter() - t2
            count += len(batch)
            batch = []
            if count >= pending[0]:
                bus.close()  # a consistent file to copy (WAL checkpointed on close)
                copy_db(path, work / f"s{pending.pop(0)}.db")
                if not pending:
                    break
                bus = bootstrap(settings(path, context_compaction={"enabled": False}))
        passes += 1
    return {"messages": count, "fill_s": round(time.perf_counter() - t0, 1), "append_s": round(t_append, 1),
            "compact_s": round(t_compact, 1), "last_compaction": outcome.status,
            "db_mb": round(sum(p.stat().st_size for p in work.glob("fill.db*")) / 1e6, 1)}


def per_turn(work: Path, sizes: list[int], turns: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Append + prepare_turn (128K window, automatic compaction on) per size, the sizes
    taking turns turn by turn, after one untimed turn (the cold load is measured by
    ``first_write``). Every size was compacted just before, and gets the same new
    turns, so compactions fall on the same turns at every size."""
    buses = {n: bootstrap(settings(work / f"s{n}.db")) for n in sizes}
    for n, bus in buses.items():  # steady state: the aggregate and the context are loaded
        bus.dispatch(c.AppendMessages(session_id="s", messages=turns[0]))
        bus.dispatch(c.PrepareTurn(session_id="s", system_prompt=SYSTEM, tools=TOOLS))
    turns = turns[1:]
    histories = {n: history(n) for n in sizes}
    gc.collect()
    times: dict[int, list[float]] = {n: [] for n in sizes}
    prepares: dict[int, list[float]] = {n: [] for n in sizes}
    passes: dict[int, list[float]] = {n: [] for n in sizes}
    compactions: dict[int, int] = {n: 0 for n in sizes}
    for turn in turns:
        for n, bus in buses.items():
            t0 = time.perf_counter()
            bus.dispatch(c.AppendMessages(session_id="s", messages=turn))
            t1 = time.perf_counter()
            request = bus.dispatch(c.PrepareTurn(session_id="s", system_prompt=SYSTEM, tools=TOOLS))
            t2 = time.perf_counter()
            for m in histories[n]:  # the floor: one Python pass over a history of this size
                m["role"]
            t3 = time.perf_counter()
            times[n].append(t2 - t0)
            prepares[n].append(t2 - t1)
            passes[n].append(t3 - t2)
            compactions[n] += request.compaction is not None and request.compaction.status == "compacted"
    for bus in buses.values():
        bus.close()
    return {str(n): {"median_ms": ms(median(t)), "mean_ms": ms(statistics.fmean(t)),
                     "prepare_median_ms": ms(median(prepares[n])), "one_pass_ms": ms(median(passes[n])),
                     "prepare_over_one_pass": round(median(prepares[n]) / median(passes[n]), 2),
                     "compactions": compactions[n], "turns": len(t)} for n, t in times.items()}


def history(n: int) -> list[dict[str, Any]]:
    """``n`` distinct message dicts of the filling scenario (its texts shared), for the floor."""
    base = [m for t in islice(iter_turns(seed=7), 250) for m in t.messages()]
    return [dict(base[i % len(base)]) for i in range(n)]


def cold_restore(work: Path, sizes: list[int], repeats: int = 15) -> dict[str, Any]:
    """New bootstrap + ``get_projection`` of the compacted session, sizes alternating."""
    times: dict[int, list[float]] = {n: [] for n in sizes}
    shown: dict[int, int] = {}
    for _ in range(repeats):
        for n in sizes:
            t0 = time.perf_counter()
            bus = bootstrap(settings(work / f"s{n}.db"))
            projection = bus.dispatch(c.GetProjection(session_id="s"))
            times[n].append(time.perf_counter() - t0)
            bus.close()
            shown[n] = len(projection.messages)
    return {str(n): {"ms": ms(median(t)), "projection_messages": shown[n]} for n, t in times.items()}


def first_write(work: Path, sizes: list[int], repeats: int = 3) -> dict[str, Any]:
    """A new bootstrap + one ``AppendMessages``: the first write after a restart loads
    the aggregate (its snapshot and the events after it), which the read path never
    does. Sizes alternate; each repeat appends one more turn."""
    turns = unique_turns(repeats, "first")
    times: dict[int, list[float]] = {n: [] for n in sizes}
    for turn in turns:
        for n in sizes:
            bus = bootstrap(settings(work / f"s{n}.db"))
            t0 = time.perf_counter()
            bus.dispatch(c.AppendMessages(session_id="s", messages=turn))
            times[n].append(time.perf_counter() - t0)
            bus.close()
    return {str(n): {"ms": ms(median(t))} for n, t in times.items()}


_PEAK = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')), file=sys.stderr)"


def _peak_mb(code: str) -> tuple[float, str]:
    """Peak RSS (MB) of a fresh process running ``code``, read from /proc (VmHWM):
    ``ru_maxrss`` of a child carries this process's peak over fork and exec."""
    out = subprocess.run([sys.executable, "-c", f"import sys\n{code}\n{_PEAK}"], capture_output=True, text=True)
    if out.returncode not in (0, 3):
        raise RuntimeError(out.stderr[-2000:])
    return round(int(out.stderr.strip().splitlines()[-1]) / 1024, 1), out.stdout


def restore_rss(path: Path) -> float:
    return _peak_mb(
        "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
        "from context_compaction import Settings, bootstrap, commands as c\n"
        f"b = bootstrap(Settings(database_url='sqlite:///{path}', summarizer='extractive'))\n"
        "p = b.dispatch(c.GetProjection(session_id='s')); b.close()")[0]


def verify_peak(path: Path) -> dict[str, Any]:
    """``ctxc verify`` (its ``main``, minus the console script's ``os._exit``)."""
    t0 = time.perf_counter()
    peak, stdout = _peak_mb(
        "from context_compaction.infrastructure.cli import main\n"
        f"code = main(['verify', '--db', '{path}', '--json'])")
    report = json.loads(stdout)
    return {"peak_mb": peak, "seconds": round(time.perf_counter() - t0, 1), "events": report.get("events"),
            "ok": report["ok"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    sizes = sorted(int(x) for x in args.sizes.split(","))
    work = Path(tempfile.mkdtemp(prefix="ctxc-bench-long-"))
    try:
        report: dict[str, Any] = {"window": WINDOW, "fill": fill(work, sizes)}
        report["per_turn"] = per_turn(work, sizes, unique_turns(args.turns, "long"))
        report["restore"] = cold_restore(work, sizes)
        report["first_write"] = first_write(work, sizes)
        report["restore_rss_mb"] = {str(n): restore_rss(work / f"s{n}.db") for n in (sizes[0], sizes[-1])}
        report["verify"] = {str(n): verify_peak(work / f"s{n}.db") for n in sizes[-2:]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report))
    return 0


def targets(report: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    turn, restore = report["per_turn"], report["restore"]
    lo, hi = min(turn, key=int), max(turn, key=int)
    out = []
    for stat in ("mean_ms", "median_ms"):
        ratio = round(turn[hi][stat] / turn[lo][stat], 2)
        label = "amortized (mean, compactions included)" if stat == "mean_ms" else "median"
        out.append((f"long session per turn {label}, N={int(hi):,} / N={int(lo):,}", ratio, "<= 1.2", ratio <= 1.2))
    ratio = round(restore[hi]["ms"] / restore[lo]["ms"], 2)
    out.append((f"long session cold restore (compacted), N={int(hi):,} / N={int(lo):,}", ratio, "<= 1.5",
                ratio <= 1.5))
    ratio = round(report["first_write"][hi]["ms"] / report["first_write"][lo]["ms"], 2)
    out.append((f"long session first write after a restart, N={int(hi):,} / N={int(lo):,}", ratio, "<= 1.5",
                ratio <= 1.5))
    rss = report["restore_rss_mb"][hi]
    out.append((f"RSS of a process restoring the {int(hi):,}-message session (MB)", rss, "<= 50", rss <= 50))
    v = report["verify"]
    if len(v) == 2:
        a, b = sorted(v, key=int)
        ratio = round(v[b]["peak_mb"] / v[a]["peak_mb"], 2)
        out.append((f"ctxc verify peak RSS, N={int(b):,} / N={int(a):,} (bounded: not x{int(b) // int(a)})",
                    ratio, "<= 1.5", ratio <= 1.5))
    bad = [n for n, e in v.items() if not e["ok"]]
    out.append(("ctxc verify: read model matches the events", ", ".join(bad) or "all sizes", "all sizes",
                not bad))
    return out


def markdown(report: dict[str, Any]) -> list[str]:
    f = report["fill"]
    lines = [f"Filled {f['messages']:,} messages in {f['fill_s']} s (appends {f['append_s']} s, a compaction "
             f"per ~1,000 messages {f['compact_s']} s; {f['db_mb']} MB database).", "",
             "| N messages | per turn: median / mean (compactions) | prepare_turn alone (one Python pass over N) | "
             "cold restore, compacted | first write after restart | restore RSS | ctxc verify peak RSS (time) |",
             "|---|---|---|---|---|---|---|"]
    for n, t in report["per_turn"].items():
        r = report["restore"][n]
        rss = report["restore_rss_mb"].get(n)
        v = report["verify"].get(n)
        rss_text = f"{rss} MB" if rss else "-"
        verify_text = f"{v['peak_mb']} MB ({v['seconds']} s)" if v else "-"
        alone = (f"{t['prepare_median_ms']:.2f} ms ({t['one_pass_ms']:.2f} ms, {t['prepare_over_one_pass']}x)"
                 if "prepare_median_ms" in t else "-")
        lines.append(f"| {int(n):,} | {t['median_ms']:.1f} / {t['mean_ms']:.1f} ms ({t['compactions']} in "
                     f"{t['turns']} turns) | {alone} | {r['ms']:.2f} ms ({r['projection_messages']} messages) | "
                     f"{report['first_write'][n]['ms']:.1f} ms | {rss_text} | {verify_text} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
