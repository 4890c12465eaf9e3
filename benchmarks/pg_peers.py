"""PostgreSQL peers, the same turns (issue 37): LangGraph's ``PostgresSaver`` and the
OpenAI Agents SDK's ``SQLAlchemySession``, against ours, 1 and 8 writers; then the
restore of a 10k-message session by each.

``python benchmarks/pg_peers.py [--writers 1,8] [--seconds 3] [--repeats 3] [--restore 10000]``
(the bench venv: ``make .venv-bench/.installed``). Prints JSON.

* Per turn: ``pg.py``'s harness (one process per writer, one barrier, a fixed window;
  distinct sessions). Ours is ``AppendMessages`` of a scenario turn (~9 messages, tool
  outputs up to 30 KB); LangGraph is a one-node agent graph
  (``StateGraph(MessagesState)``) compiled with ``PostgresSaver`` and invoked once per
  turn with the turn's messages, ``durability="exit"``: one checkpoint per turn, as a
  graph writes it; the Agents SDK is ``SQLAlchemySession.add_items`` of the turn
  (async SQLAlchemy over psycopg). The peers get the turn as OpenAI chat messages
  (``peers.as_openai``), what an agent host hands them. LangGraph stores the whole
  message list again in every checkpoint (a blob per channel version), so its cost per
  turn grows with the session; sessions start empty here.
* Restore: a fresh connection (ours: a fresh ``bootstrap``) reading the whole session
  back, medians of alternating repeats. Ours is ``GetProjection`` of the uncompacted
  session (every message) and of the same session compacted; LangGraph's
  ``get_tuple`` (the latest checkpoint with its blobs, deserialized); the SDK's
  ``get_items()``. LangGraph's session is written by one invoke of all its messages
  (the same latest checkpoint as turn by turn, without the O(N^2) blob writes).
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing as mp
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from itertools import islice
from typing import Any

import pg
from peers import as_openai
from workload import MODEL, median, ms, turn_stream

DSN = pg.DSN
ASYNC_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _search_path(schema: str) -> str:
    return f"-c search_path={schema}"


# ------------------------------------------------------------------- peers' writers
class _LangGraph:
    def __init__(self, schema: str) -> None:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.graph import END, START, MessagesState, StateGraph
        from psycopg.rows import dict_row

        # (the connection LangGraph's docs give PostgresSaver: autocommit, dict rows)
        self.conn = psycopg.connect(DSN, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                                    options=_search_path(schema))
        self.saver = PostgresSaver(self.conn)

        def agent(state: MessagesState) -> dict[str, Any]:
            return {}  # the model's reply is part of the turn handed in

        graph = StateGraph(MessagesState)
        graph.add_node("agent", agent)
        graph.add_edge(START, "agent")
        graph.add_edge("agent", END)
        self.graph = graph.compile(checkpointer=self.saver)

    def setup(self) -> None:
        self.saver.setup()

    def append(self, sid: str, messages: list[dict[str, Any]]) -> None:
        self.graph.invoke({"messages": messages}, {"configurable": {"thread_id": sid}}, durability="exit")

    def restore(self, sid: str) -> int:
        state = self.saver.get_tuple({"configurable": {"thread_id": sid}})
        assert state is not None
        return len(state.checkpoint["channel_values"]["messages"])

    def close(self) -> None:
        self.conn.close()


class _Agents:
    def __init__(self, schema: str) -> None:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from sqlalchemy.ext.asyncio import create_async_engine

        self.loop = asyncio.new_event_loop()
        self.engine = create_async_engine(ASYNC_URL, connect_args={"options": _search_path(schema)})
        self.cls = SQLAlchemySession
        self.sessions: dict[str, Any] = {}

    def _session(self, sid: str, create: bool = False) -> Any:
        if sid not in self.sessions:
            self.sessions[sid] = self.cls(sid, engine=self.engine, create_tables=create)
        return self.sessions[sid]

    def setup(self) -> None:
        self.loop.run_until_complete(self._session("setup", create=True).get_items())

    def append(self, sid: str, messages: list[dict[str, Any]]) -> None:
        self.loop.run_until_complete(self._session(sid).add_items(messages))

    def restore(self, sid: str) -> int:
        return len(self.loop.run_until_complete(self._session(sid).get_items()))

    def close(self) -> None:
        self.loop.run_until_complete(self.engine.dispose())
        self.loop.close()


PEERS = {"langgraph": _LangGraph, "agents": _Agents}


def _peer_writer(kind: str, schema: str, index: int, barrier: Any, seconds: float, out: Any) -> None:
    errors: Counter[str] = Counter()
    latencies: list[float] = []
    try:
        logging.disable(logging.CRITICAL)
        store = PEERS[kind](schema)
        sid = f"w{index}"
        turns = turn_stream(f"w{index}")
        store.append(sid, as_openai(next(turns)))  # warm
        barrier.wait()
        end = time.perf_counter() + seconds
        while True:
            turn = as_openai(next(turns))  # (the conversion is the host's, not timed)
            t0 = time.perf_counter()
            if t0 >= end:
                break
            try:
                store.append(sid, turn)
            except Exception as exc:  # noqa: BLE001 - count, go on
                errors[type(exc).__name__] += 1
                continue
            t1 = time.perf_counter()
            if t1 <= end:
                latencies.append(t1 - t0)
        store.close()
    except BaseException as exc:
        barrier.abort()
        errors[f"writer failed: {type(exc).__name__}: {exc}"[:200]] += 1
    out.put({"appends": len(latencies), "latencies": latencies, "errors": dict(errors)})


def _new_schema() -> str:
    import psycopg

    schema = f"peer_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema


def peer_config(kind: str, writers: int, seconds: float) -> dict[str, Any]:
    schema = _new_schema()
    try:
        setup = PEERS[kind](schema)
        setup.setup()
        setup.close()
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(writers + 1, timeout=120)
        out = ctx.Queue()
        procs = [ctx.Process(target=_peer_writer, args=(kind, schema, i, barrier, seconds, out))
                 for i in range(writers)]
        for p in procs:
            p.start()
        try:
            barrier.wait()
            time.sleep(seconds)
        except threading.BrokenBarrierError:
            pass
        results = [out.get(timeout=180 + seconds) for _ in procs]
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    finally:
        pg._drop(schema)
    latencies = [x for r in results for x in r["latencies"]]
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r["errors"])
    appends = sum(r["appends"] for r in results)
    return {"appends_per_s": round(appends / seconds, 1), "p50_ms": ms(median(latencies)),
            "appends": appends, "errors": dict(errors)}


def per_turn(writer_counts: list[int], seconds: float, repeats: int) -> dict[str, Any]:
    """Ours and each peer alternate round by round at each writer count; a row is the
    median round, ratios are paired per round (as ``pg.py``)."""
    out: dict[str, Any] = {}
    for n in writer_counts:
        runs: dict[str, list[dict[str, Any]]] = {}
        for _ in range(repeats):
            runs.setdefault("ours", []).append(pg.run_config("ours", n, False, seconds))
            for kind in PEERS:
                runs.setdefault(kind, []).append(peer_config(kind, n, seconds))
        row: dict[str, Any] = {name: pg._median_run(r) if name == "ours" else _median(r) for name, r in runs.items()}
        for kind in PEERS:
            ratios = [o["appends_per_s"] / p["appends_per_s"] if p["appends_per_s"] else float("inf")
                      for o, p in zip(runs["ours"], runs[kind], strict=True)]
            row[f"ours_over_{kind}"] = round(statistics.median(ratios), 2)
            row[f"ours_over_{kind}_rounds"] = [round(x, 2) for x in ratios]
        out[str(n)] = row
    return out


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(runs, key=lambda r: r["appends_per_s"])
    middle = dict(ordered[(len(ordered) - 1) // 2])
    middle["runs_appends_per_s"] = [r["appends_per_s"] for r in runs]
    errors: Counter[str] = Counter()
    for r in runs:
        errors.update(r["errors"])
    middle["errors"] = dict(errors)
    return middle


# ---------------------------------------------------------------------- restore
def restore(messages: int, repeats: int) -> dict[str, Any]:
    from context_compaction import bootstrap
    from context_compaction import commands as c

    turns = list(islice(turn_stream("r"), 10 * messages))
    history: list[list[dict[str, Any]]] = []
    count = 0
    for turn in turns:
        history.append(turn)
        count += len(turn)
        if count >= messages:
            break
    flat = [m for t in history for m in t]
    openai = as_openai(flat)
    schemas = {name: _new_schema() if name in PEERS else f"bench_{uuid.uuid4().hex[:12]}"
               for name in ("ours", "compacted", *PEERS)}
    try:
        for name in ("ours", "compacted"):
            bus = bootstrap(pg._settings(schemas[name]))
            bus.dispatch(c.StartSession(session_id="s", model=MODEL))
            batch: list[dict[str, Any]] = []
            for turn in history:  # (turn-sized appends in batches, as run.py's build_session)
                batch += turn
                if len(batch) >= 250:
                    bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
                    batch = []
            if batch:
                bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
            if name == "compacted":
                bus.dispatch(c.Compact(session_id="s"))
            bus.close()
        for kind, cls in PEERS.items():
            store = cls(schemas[kind])
            store.setup()
            if kind == "langgraph":
                store.append("s", openai)
            else:
                for i in range(0, len(openai), 500):
                    store.append("s", openai[i:i + 500])
            store.close()

        def ours(name: str) -> int:
            bus = bootstrap(pg._settings(schemas[name]))
            n = len(bus.dispatch(c.GetProjection(session_id="s")).messages)
            bus.close()
            return n

        def peer(kind: str) -> int:
            store = PEERS[kind](schemas[kind])
            n = store.restore("s")
            store.close()
            return n

        sides: dict[str, Any] = {"ours": lambda: ours("ours"), "ours_compacted": lambda: ours("compacted"),
                                 "langgraph": lambda: peer("langgraph"), "agents": lambda: peer("agents")}
        times: dict[str, list[float]] = {k: [] for k in sides}
        sizes: dict[str, int] = {}
        for _ in range(repeats):
            for name, fn in sides.items():
                t0 = time.perf_counter()
                sizes[name] = fn()
                times[name].append(time.perf_counter() - t0)
    finally:
        for schema in schemas.values():
            pg._drop(schema)
    result: dict[str, Any] = {"messages": len(flat), "bytes_json": len(json.dumps(flat))}
    for name in sides:
        result[name] = {"ms": ms(median(times[name])), "messages_read": sizes[name]}
    for kind in PEERS:
        result[f"{kind}_over_ours"] = round(median(times[kind]) / median(times["ours"]), 2)
    return result


def targets(report: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    """(name, value, limit, ok): ours faster per turn than each peer, and its restore.
    A side with errors, a peer that appended nothing (its ratio is infinite) or a restore
    that read fewer messages than the session holds (ours compacted: none) is no win."""
    out: list[tuple[str, Any, str, bool]] = []
    for n, row in report.get("per_turn", {}).items():
        ours_clean = not row["ours"].get("errors") and not row["ours"].get("give_ups")
        for kind in PEERS:
            ratio = row[f"ours_over_{kind}"]
            peer_clean = not row[kind].get("errors") and row[kind]["appends_per_s"] > 0
            out.append((f"PG peers, {n} writer(s): ours turns/s / {kind}'s", ratio, "> 1, no errors",
                        ratio > 1 and ours_clean and peer_clean))
    restore = report.get("restore")
    if restore:
        whole = restore["messages"]
        for kind in PEERS:
            for ours in ("ours", "ours_compacted"):
                mine, theirs = restore[ours]["ms"], restore[kind]["ms"]
                read = restore[ours]["messages_read"]
                same_work = restore[kind]["messages_read"] == whole and (
                    read == whole if ours == "ours" else 0 < read <= whole)
                out.append((f"PG restore of {whole:,} messages: {ours} ms / {kind}'s",
                            round(mine / theirs, 2), "< 1, every message read", mine < theirs and same_work))
    return out


def markdown(report: dict[str, Any]) -> list[str]:
    lines = ["| writers | ours | LangGraph `PostgresSaver` | Agents SDK `SQLAlchemySession` |", "|---|---|---|---|"]
    for n, row in report.get("per_turn", {}).items():
        cells = [f"{row[k]['appends_per_s']:,.1f} ({row[k]['p50_ms']:.1f} ms)" for k in ("ours", *PEERS)]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    restore = report.get("restore")
    if restore:
        lines += ["", "| restore | ours | ours, compacted | LangGraph | Agents SDK |", "|---|---|---|---|---|",
                  f"| {restore['messages']:,} messages | " + " | ".join(
                      f"{restore[k]['ms']:,.0f} ms ({restore[k]['messages_read']:,})"
                      for k in ("ours", "ours_compacted", *PEERS)) + " |"]
    return lines


def main() -> int:
    import argparse

    import psycopg

    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", default="1,8")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--restore", type=int, default=10_000, help="messages in the restored session (0: skip)")
    parser.add_argument("--restore-repeats", type=int, default=5)
    args = parser.parse_args()
    report: dict[str, Any] = {"psycopg_impl": psycopg.pq.__impl__, "seconds": args.seconds}
    if args.writers:
        report["per_turn"] = per_turn([int(x) for x in args.writers.split(",")], args.seconds, args.repeats)
    if args.restore:
        report["restore"] = restore(args.restore, args.restore_repeats)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
