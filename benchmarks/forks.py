"""Forking cost and reading a fork (issue 42, ADR 0081): ratios within one run.

One session of ``--messages`` messages (plain user/assistant turns, no compaction) on a
fresh database. Measured, as medians of ``--repeat`` runs:

* ``start_session`` of a new session, and ``fork_session`` of the long session (now):
  target fork ≤ 2 × start (nothing is copied: O(1) in the parent's length);
* reading the fork's history (``get_history``) and projection (``get_projection``)
  against the same reads of the parent, a session of the same length without a parent
  (each read once before timing, so token counts are cached for both): target ≤ 1.2 ×.

Prints JSON. ``python benchmarks/forks.py --db sqlite`` (or ``postgres``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction import Settings, bootstrap  # noqa: E402

POSTGRES_URL = os.environ.get("CTXC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def ok(bus: Any, command: dict[str, Any]) -> dict[str, Any]:
    envelope = bus.dispatch_json(command)
    if not envelope["ok"]:
        raise SystemExit(json.dumps(envelope))
    return envelope["result"]  # type: ignore[no-any-return]


def timed(fn: Any, repeat: int) -> float:
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=("sqlite", "postgres", "memory"), default="sqlite")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="ctxc-forks-")
    schema = f"bench_forks_{uuid.uuid4().hex[:8]}"
    url = {"sqlite": f"sqlite:///{Path(tmp) / 'forks.db'}", "memory": f"memory://forks-{uuid.uuid4().hex[:6]}",
           "postgres": f"{POSTGRES_URL}?schema={schema}"}[args.db]
    bus = bootstrap(Settings(database_url=url, summarizer="extractive"))
    try:
        ok(bus, {"type": "start_session", "session_id": "long", "model": "gpt-4o"})
        built = time.perf_counter()
        batch = 500
        for lo in range(0, args.messages, batch):
            messages = []
            for i in range(lo, min(lo + batch, args.messages)):
                role = "user" if i % 2 == 0 else "assistant"
                messages.append({"role": role, "content": f"message {i} about refunds and the flaky test"})
            ok(bus, {"type": "append_messages", "session_id": "long", "messages": messages})
        built = time.perf_counter() - built
        start = timed(lambda i: ok(bus, {"type": "start_session", "session_id": f"new{i}", "model": "gpt-4o"}),
                      args.repeat)
        fork = timed(lambda i: ok(bus, {"type": "fork_session", "session_id": "long", "new_session_id": f"fork{i}"}),
                     args.repeat)
        reads = {}
        for kind, command in (("history", {"type": "get_history"}), ("projection", {"type": "get_projection"})):
            for sid in ("long", "fork0"):
                ok(bus, {**command, "session_id": sid})  # (warm: token counts cached for both)
            # Interleaved, so that a busy machine slows both alike.
            plain_times, child_times = [], []
            for _ in range(max(3, args.repeat // 3)):
                for sid, times in (("long", plain_times), ("fork0", child_times)):
                    t0 = time.perf_counter()
                    ok(bus, {**command, "session_id": sid})
                    times.append(time.perf_counter() - t0)
            plain, child = statistics.median(plain_times), statistics.median(child_times)
            reads[kind] = {"parentless_s": round(plain, 4), "fork_s": round(child, 4),
                           "ratio": round(child / plain, 3), "target": 1.2}
        print(json.dumps({
            "db": args.db, "messages": args.messages, "build_s": round(built, 1),
            "start_session_s": round(start, 5), "fork_session_s": round(fork, 5),
            "fork_over_start": round(fork / start, 3), "fork_target": 2.0, "reads": reads,
        }, indent=2))
    finally:
        bus.close()
        if args.db == "postgres":
            import psycopg

            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    sys.exit(main())
