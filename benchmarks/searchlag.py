"""What the lagging search index (ADR 0049) moved to the first search: a session of N
messages appended with no search between, then ``search_history`` three times (the
first indexes all N, the second finds nothing to index), then one more turn appended
and searched (the usual case: a few messages to index). SQLite, and PostgreSQL when
reachable. Prints JSON.

    python benchmarks/searchlag.py [--messages 10000] [--no-pg] [--index-apart]

``--index-apart`` times the indexing alone (``read_model.index_search``) before the
first search, which then only queries (ADR 0054).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import MODEL, throwaway_schema  # noqa: E402

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction import commands as c  # noqa: E402
from context_compaction.infrastructure.demo.scenario import session_messages  # noqa: E402



def _settings(url: str) -> Settings:
    return Settings(database_url=url, summarizer="extractive",
                    context_compaction={"enabled": False}, models={MODEL: {"token_limit": 100_000_000}})


def _search(bus: Any, query: str) -> tuple[float, int]:
    t = time.perf_counter()
    result = bus.dispatch(c.SearchHistory(session_id="s", query=query, limit=20))
    return round((time.perf_counter() - t) * 1000, 1), len(result.hits)


def measure(url: str, n: int, index_apart: bool = False) -> dict[str, Any]:
    bus = bootstrap(_settings(url))
    bus.dispatch(c.StartSession(session_id="s", model=MODEL))
    turns = session_messages(n + 50)
    batch: list[dict[str, Any]] = []
    appended = 0
    t = time.perf_counter()
    for turn in turns[:-1]:
        batch += turn
        if len(batch) >= 500:
            bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
            appended += len(batch)
            batch = []
    if batch:
        bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
        appended += len(batch)
    append_s = time.perf_counter() - t
    index_s = None
    if index_apart:
        t = time.perf_counter()
        bus.services.read_model.index_search("s")
        index_s = round(time.perf_counter() - t, 2)
    first = _search(bus, "import")
    second = _search(bus, "import")
    bus.dispatch(c.AppendMessages(session_id="s", messages=turns[-1]))
    after_turn = _search(bus, "import")
    bus.close()
    return {"messages": appended, "append_seconds": round(append_s, 2), "index_seconds": index_s,
            "first_search_ms": first[0], "second_search_ms": second[0],
            "search_after_one_more_turn_ms": after_turn[0], "turn_messages": len(turns[-1]),
            "hits": first[1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--index-apart", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            out["sqlite"] = measure(f"sqlite:///{Path(tmp) / 'lag.db'}", args.messages, args.index_apart)
    if not args.no_pg:
        with throwaway_schema("ctxc_searchlag") as url:
            out["postgres"] = measure(url, args.messages, args.index_apart)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
