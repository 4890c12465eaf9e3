"""Round trips of one PostgreSQL append, counted on the client (issue 37).

``python benchmarks/pg_roundtrips.py [--appends 40]``: one writer appends scenario
turns (as ``pg.py``'s ``ours``) and, per append, counts

* the statements psycopg sent (every ``Cursor.execute``/``executemany``, by its first
  words), and
* the client's waits on the server: libpq's protocol trace (``PGconn.trace``) of every
  connection the bus opens, read after the run: a round trip is a run of messages the
  client sent (``F``) followed by the server's answer (``B``), so consecutive ``F``
  lines with no ``B`` between them are one trip.

Only this measuring process wraps psycopg (its public ``Cursor`` methods, a trace per
connection); the product code is unchanged. Prints JSON: per append, the median trip
and statement counts and the statements of one append.
"""

from __future__ import annotations

import collections
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

from workload import MODEL, turn_stream

URL = "postgresql://postgres@127.0.0.1:5432/test"


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=40)
    args = parser.parse_args()

    import psycopg

    statements: list[str] = []
    traces: list[tuple[Any, Any]] = []
    trace_dir = tempfile.mkdtemp(prefix="pgtrips-")

    def words(query: Any) -> str:
        text = query.as_string(None) if hasattr(query, "as_string") else str(query)
        text = re.sub(r"\s+", " ", text.decode() if isinstance(text, bytes) else text).strip()
        return " ".join(text.split(" ")[:4])[:70]

    for cls in (psycopg.Cursor,):
        for name in ("execute", "executemany"):
            inner = getattr(cls, name)

            def wrapped(self: Any, query: Any, *a: Any, __inner: Any = inner, __name: str = name, **k: Any) -> Any:
                statements.append(("many " if __name == "executemany" else "") + words(query))
                return __inner(self, query, *a, **k)

            setattr(cls, name, wrapped)

    connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def traced(cls: Any, *a: Any, **k: Any) -> Any:
        conn = connect(cls, *a, **k)
        f = open(os.path.join(trace_dir, f"{len(traces)}.trace"), "w")  # noqa: SIM115
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        traces.append((conn, f))
        return conn

    psycopg.Connection.connect = classmethod(traced)  # type: ignore[method-assign,assignment]

    from context_compaction import Settings, bootstrap
    from context_compaction import commands as c

    schema = f"trips_{uuid.uuid4().hex[:10]}"
    settings = Settings(database_url=f"{URL}?schema={schema}", summarizer="extractive",
                        context_compaction={"enabled": False}, models={MODEL: {"token_limit": 100_000_000}})
    bus = bootstrap(settings)
    turns = turn_stream("p")
    bus.dispatch(c.StartSession(session_id="p", model=MODEL))
    for _ in range(3):  # warm: caches, prepared statements
        bus.dispatch(c.AppendMessages(session_id="p", messages=next(turns)))

    def trips() -> int:
        total = 0
        for conn, f in traces:
            f.flush()
            with open(f.name) as r:
                direction = [line.split("\t", 1)[0] for line in r if line[:1] in "FB"]
            total += sum(1 for prev, cur in zip(["B", *direction], direction, strict=False)
                         if cur == "F" and prev == "B")
        return total

    per_trip: list[int] = []
    per_stmt: list[int] = []
    one: list[str] = []
    wall: list[float] = []
    for i in range(args.appends):
        t0, s0 = trips(), len(statements)
        w0 = time.perf_counter()
        bus.dispatch(c.AppendMessages(session_id="p", messages=next(turns)))
        wall.append(time.perf_counter() - w0)
        per_trip.append(trips() - t0)
        per_stmt.append(len(statements) - s0)
        if i == args.appends // 2:
            one = statements[s0:]
    bus.close()
    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(json.dumps({
        "appends": args.appends, "psycopg_impl": psycopg.pq.__impl__,
        "round_trips_per_append": statistics.median(per_trip), "round_trips_range": [min(per_trip), max(per_trip)],
        "statements_per_append": statistics.median(per_stmt),
        "wall_ms_p50": round(1000 * statistics.median(wall), 2),
        "one_append": dict(collections.Counter(one)), "trace_dir": trace_dir,
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
