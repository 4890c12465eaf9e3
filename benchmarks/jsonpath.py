"""The JSON path (``dispatch_json``, what the HTTP edge and ``ctxc dispatch`` call)
against typed ``dispatch``, and a JSON append against a raw ``json.dumps`` + INSERT.

Typed: ``bus.dispatch(AppendMessages(...))`` / ``bus.dispatch(PrepareTurn(...))``, the
command model built from Python data. JSON: ``bus.dispatch_json(text)`` with the
command as the JSON text a client sends (serializing it is the client's work); the
envelope it returns is JSON-ready data, and ``+ wire`` adds the ``json.dumps`` the edge
then does. Typed and JSON run on two copies of one session, alternating turn by turn.
``prepare_turn`` is measured on uncompacted sessions (its result holds every message,
as in issue 18's report).

Runs in its own process (``python benchmarks/jsonpath.py [--sizes 1000,10000]``) and
prints its report as JSON: the core section's heap and frozen objects stay out of it.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from workload import MODEL, SYSTEM, TOOLS, median, ms, unique_turns

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction import commands as c  # noqa: E402
from context_compaction.application.runtime.bus import _result_bytes  # noqa: E402
from context_compaction.infrastructure.demo.scenario import session_messages  # noqa: E402


def settings(path: Path) -> Settings:
    return Settings(database_url=f"sqlite:///{path}", summarizer="extractive",
                    context_compaction={"enabled": False}, models={MODEL: {"token_limit": 100_000_000}})


def build(path: Path, n: int) -> None:
    bus = bootstrap(settings(path))
    bus.dispatch(c.StartSession(session_id="s", model=MODEL))
    batch: list[dict[str, Any]] = []
    for turn in session_messages(n):
        batch += turn
        if len(batch) >= 500:
            bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
            batch = []
    if batch:
        bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
    bus.close()


def copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if Path(str(src) + suffix).exists():
            shutil.copy(str(src) + suffix, str(dst) + suffix)


def wire(envelope: dict[str, Any]) -> bytes:
    """What the HTTP edge does with an envelope (Starlette's ``JSONResponse.render``)."""
    return json.dumps(envelope, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


def _prepare_json(sid: str) -> str:
    return json.dumps({"type": "prepare_turn", "session_id": sid, "system_prompt": SYSTEM, "tools": TOOLS})


def _append_json(sid: str, turn: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "append_messages", "session_id": sid, "messages": turn})


def typed_vs_json(work: Path, n: int, turns: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Per turn: append then prepare_turn, on three copies of one session: typed
    ``dispatch``; ``dispatch_json_bytes`` (the response bytes the HTTP edge sends, in one
    orjson walk: "wire"); and ``dispatch_json`` ("json") followed by Starlette's
    ``json.dumps`` rendering ("old wire", the edge before ADR 0030 R7)."""
    base = work / f"base{n}.db"
    build(base, n)
    for name in ("typed", "json", "old"):
        copy_db(base, work / f"{name}{n}.db")
    typed = bootstrap(settings(work / f"typed{n}.db"))
    jsonb = bootstrap(settings(work / f"json{n}.db"))
    old = bootstrap(settings(work / f"old{n}.db"))
    typed.dispatch(c.PrepareTurn(session_id="s", system_prompt=SYSTEM, tools=TOOLS))  # warm caches
    assert jsonb.dispatch_json(_prepare_json("s"))["ok"] and old.dispatch_json(_prepare_json("s"))["ok"]
    kinds = ("typed", "json", "wire", "oldwire")
    t: dict[str, list[float]] = {f"{op}_{k}": [] for op in ("append", "prepare") for k in kinds}
    gc.collect()
    for turn in turns:
        append_text, prepare_text = _append_json("s", turn), _prepare_json("s")
        t0 = time.perf_counter()
        typed.dispatch(c.AppendMessages(session_id="s", messages=turn))
        t1 = time.perf_counter()
        typed.dispatch(c.PrepareTurn(session_id="s", system_prompt=SYSTEM, tools=TOOLS))
        t2 = time.perf_counter()
        appended = jsonb.dispatch_json_reply(append_text)
        t3 = time.perf_counter()
        request = jsonb.dispatch_json_reply(prepare_text)
        t4 = time.perf_counter()
        envelope = old.dispatch_json(append_text)
        t5 = time.perf_counter()
        wire(envelope)
        t6 = time.perf_counter()
        old_request = old.dispatch_json(prepare_text)
        t7 = time.perf_counter()
        wire(old_request)
        t8 = time.perf_counter()
        assert appended.error_code is None and request.error_code is None, (appended, request.error_code)
        assert envelope["ok"] and old_request["ok"], (envelope, old_request.get("error"))
        for key, value in (("append_typed", t1 - t0), ("prepare_typed", t2 - t1),
                           ("append_wire", t3 - t2), ("prepare_wire", t4 - t3),
                           ("append_json", t5 - t4), ("append_oldwire", t6 - t4),
                           ("prepare_json", t7 - t6), ("prepare_oldwire", t8 - t6)):
            t[key].append(value)
    for bus in (typed, jsonb, old):
        bus.close()
    m = {k: median(v) for k, v in t.items() if v}
    return {
        **{f"{k}_ms": ms(v) for k, v in m.items()},
        **{f"{op}_{k}_ratio": round(m[f"{op}_{k}"] / m[f"{op}_typed"], 3)
           for op in ("append", "prepare") for k in ("json", "wire", "oldwire")},
        "append_ratio": round(m["append_json"] / m["append_typed"], 3),
        "prepare_ratio": round(m["prepare_json"] / m["prepare_typed"], 3),
        "projection_messages": len(old_request["result"]["messages"]),
    }


def raw_table(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE m (session_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (session_id, seq))")
    return conn


def json_append_throughput(work: Path, turns: list[list[dict[str, Any]]], run: int) -> dict[str, Any]:
    """Messages/s of ``dispatch_json`` appends (one per turn) against ``json.dumps`` +
    INSERT of the same messages, WAL and synchronous=FULL on both, alternating turn
    by turn (as the core section's typed append throughput)."""
    bus = bootstrap(settings(work / f"append{run}.db"))
    bus.dispatch(c.StartSession(session_id="t", model=MODEL))
    conn = raw_table(work / f"append{run}.raw.db")
    texts = [_append_json("t", turn) for turn in turns]
    ours = raw = 0.0
    seq = 0
    for turn, text in zip(turns, texts):
        t0 = time.perf_counter()
        envelope = bus.dispatch_json(text)
        t1 = time.perf_counter()
        conn.execute("BEGIN")
        for message in turn:
            seq += 1
            conn.execute("INSERT INTO m VALUES (?, ?, ?)", ("t", seq, json.dumps(message)))
        conn.execute("COMMIT")
        t2 = time.perf_counter()
        assert envelope["ok"], envelope
        ours += t1 - t0
        raw += t2 - t1
    bus.close()
    conn.close()
    messages = sum(len(t) for t in turns)
    return {"messages": messages, "ours_per_s": round(messages / ours), "raw_insert_per_s": round(messages / raw),
            "ratio": round(raw / ours, 3)}


def profile(work: Path, n: int, turns: list[list[dict[str, Any]]], top: int = 12) -> dict[str, Any]:
    """cProfile of the JSON path (append + prepare_turn per turn) on an uncompacted
    ``n``-message session: the top functions by own time, and the bus-level steps'
    cumulative share."""
    path = work / f"prof{n}.db"
    copy_db(work / f"base{n}.db", path)
    bus = bootstrap(settings(path))
    assert bus.dispatch_json(_prepare_json("s"))["ok"]
    profiler = cProfile.Profile()
    profiler.enable()
    for turn in turns:
        bus.dispatch_json(_append_json("s", turn))
        wire(bus.dispatch_json(_prepare_json("s")))
    profiler.disable()
    bus.close()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({name})", "calls": calls,
                     "own_share": round(tottime / total, 3), "cum_share": round(cumtime / total, 3)})
    own = sorted(rows, key=lambda r: -r["own_share"])[:top]
    steps = ("(dispatch_json)", "(parse)", "(json_problem)", "(validate_python)", "(_jsonable)",
             "(model_dump)", "(_handle)", "(wire)", "(loads)", "(detached)")
    cum = sorted((r for r in rows if r["function"].endswith(steps)), key=lambda r: -r["cum_share"])
    return {"messages": n, "turns": len(turns), "total_s": round(total, 3), "top_own": own, "steps": cum}


def serializers(work: Path, n: int, repeats: int = 7) -> dict[str, Any]:
    """One ``prepare_turn`` result of the uncompacted ``n``-message session, turned into
    response bytes four ways: what the JSON path does now (``model_dump(mode="json")``,
    then ``json.dumps``), and the one-walk alternatives."""
    import orjson

    path = work / f"ser{n}.db"
    copy_db(work / f"base{n}.db", path)
    bus = bootstrap(settings(path))
    result = bus.dispatch(c.PrepareTurn(session_id="s", system_prompt=SYSTEM, tools=TOOLS))
    bus.close()
    ways: dict[str, Callable[[], bytes]] = {
        "model_dump(json) + json.dumps (before R7)": lambda: wire({"ok": True, "result": result.model_dump(mode="json")}),
        "model_dump(json) + orjson.dumps": lambda: orjson.dumps({"ok": True, "result": result.model_dump(mode="json")}),
        "model_dump() + orjson.dumps": lambda: orjson.dumps({"ok": True, "result": result.model_dump()}),
        "_result_bytes (dispatch_json_bytes, now)": lambda: _result_bytes(result),
        "model_dump_json (pydantic-core)": lambda: b'{"ok":true,"result":' + result.model_dump_json().encode() + b"}",
    }
    sizes = {name: len(fn()) for name, fn in ways.items()}
    out: dict[str, Any] = {"messages": n, "bytes": sizes[next(iter(ways))]}
    for name, fn in ways.items():
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out[name] = ms(median(times))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--append-turns", type=int, default=300)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="ctxc-bench-json-"))
    try:
        turns = unique_turns(args.turns, "json")
        report: dict[str, Any] = {"sizes": {str(n): typed_vs_json(work, n, turns) for n in sizes}}
        runs = sorted((json_append_throughput(work, unique_turns(args.append_turns, f"a{i}"), i)
                       for i in range(3)), key=lambda r: r["ratio"])
        report["append_throughput"] = {**runs[1], "ratios": [r["ratio"] for r in runs]}
        report["profile"] = profile(work, max(sizes), unique_turns(args.turns, "prof"))
        report["serializers"] = serializers(work, max(sizes))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report))
    return 0


def targets(report: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    out = []
    for n, e in report["sizes"].items():
        for kind in ("append", "prepare"):
            # The path other services take ends in response bytes (the HTTP edge, ctxc
            # dispatch); an embedding host calling dispatch_json gets the envelope.
            name = "append_messages" if kind == "append" else "prepare_turn"
            for key, path in (("wire_ratio", "dispatch_json_bytes: response bytes"),
                              ("ratio", "dispatch_json: the envelope")):
                ratio = e[f"{kind}_{key}"]
                out.append((f"JSON path ({path}) / dispatch, {name}, N={int(n):,}",
                            ratio, "<= 1.2", ratio <= 1.2))
    ratio = report["append_throughput"]["ratio"]
    out.append(("JSON append throughput / raw json.dumps + INSERT", ratio, ">= 0.5", ratio >= 0.5))
    return out


def markdown(report: dict[str, Any]) -> list[str]:
    lines = ["| N messages | append: typed / JSON (+ old wire) / bytes | prepare_turn: typed / JSON "
             "(+ old wire) / bytes | JSON / typed: append, prepare_turn | bytes (old wire) / typed |",
             "|---|---|---|---|---|"]
    for n, e in report["sizes"].items():
        lines.append(
            f"| {int(n):,} | {e['append_typed_ms']:.2f} / {e['append_json_ms']:.2f} ({e['append_oldwire_ms']:.2f})"
            f" / {e['append_wire_ms']:.2f} ms | {e['prepare_typed_ms']:.2f} / {e['prepare_json_ms']:.2f} "
            f"({e['prepare_oldwire_ms']:.2f}) / {e['prepare_wire_ms']:.2f} ms | "
            f"{e['append_ratio']:.2f}×, {e['prepare_ratio']:.2f}× | "
            f"{e['append_wire_ratio']:.2f}× ({e['append_oldwire_ratio']:.2f}×), "
            f"{e['prepare_wire_ratio']:.2f}× ({e['prepare_oldwire_ratio']:.2f}×) |")
    a = report["append_throughput"]
    lines += ["", f"JSON append throughput: {a['ours_per_s']:,} messages/s vs raw json.dumps + INSERT "
              f"{a['raw_insert_per_s']:,}/s = {a['ratio']:.0%} (median of three: "
              f"{', '.join(f'{r:.0%}' for r in a['ratios'])})."]
    p = report["profile"]
    lines += ["", f"Where the JSON path's time goes (cProfile, N={p['messages']:,}, {p['turns']} turns of "
              "append + prepare_turn + wire; share of profiled time):", ""]
    lines += [f"* {r['function']}: cumulative {r['cum_share']:.0%}" for r in p["steps"]]
    lines += [f"* own time {r['function']}: {r['own_share']:.0%} ({r['calls']} calls)" for r in p["top_own"][:8]]
    s = report["serializers"]
    lines += ["", f"One prepare_turn result at N={s['messages']:,} ({s['bytes'] / 1e6:.1f} MB of JSON) to "
              "response bytes: " + "; ".join(f"{k} {v:.1f} ms" for k, v in s.items()
                                            if k not in ("messages", "bytes")) + "."]
    return lines


if __name__ == "__main__":
    sys.exit(main())
