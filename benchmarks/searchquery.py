"""What a long query costs against a one-word query on the same session (issue 36
finding 2, ADR 0086): the attack's 499-word hyphenated phrase (997 characters) and 200
distinct words, each as ``search_history`` answers it (its first 32 words searched)
and, for comparison, unbounded (the read model's search given the whole query).
Medians of ``--repeat`` runs after one warm-up; ratios within this one run. SQLite,
and PostgreSQL when reachable. Prints JSON.

    python benchmarks/searchquery.py [--messages 3000] [--repeat 5] [--no-pg]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import MODEL, throwaway_schema  # noqa: E402

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction import commands as c  # noqa: E402
from context_compaction.infrastructure.demo.scenario import session_messages  # noqa: E402

PHRASE = "-".join(chr(ord("a") + i % 26) for i in range(499))
DISTINCT = " ".join(f"w{i}" for i in range(200))


def _median_ms(run: Callable[[], Any], repeat: int) -> float:
    run()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times) * 1000, 2)


def measure(url: str, n: int, repeat: int) -> dict[str, Any]:
    bus = bootstrap(Settings(database_url=url, summarizer="extractive", context_compaction={"enabled": False},
                             models={MODEL: {"token_limit": 100_000_000}}))
    bus.dispatch(c.StartSession(session_id="s", model=MODEL))
    batch: list[dict[str, Any]] = []
    for turn in session_messages(n):
        batch += turn
        if len(batch) >= 500:
            bus.dispatch(c.AppendMessages(session_id="s", messages=batch))
            batch = []
    # every message holds "e"; a tenth hold the whole phrase, so it matches and is ranked
    filler = [{"role": "user", "content": f"{PHRASE} {DISTINCT} e"} for _ in range(n // 10)]
    bus.dispatch(c.AppendMessages(session_id="s", messages=batch + filler))

    def bounded(query: str) -> Callable[[], Any]:
        return lambda: bus.dispatch(c.SearchHistory(session_id="s", query=query, limit=20))

    def unbounded(query: str) -> Callable[[], Any]:
        return lambda: bus.services.read_model.search("s", query, limit=20, include_invalidated=False)

    one = _median_ms(bounded("e"), repeat)
    out: dict[str, Any] = {"messages": n + len(filler), "one_word_ms": one}
    for name, query in (("phrase_499_words", PHRASE), ("distinct_200_words", DISTINCT)):
        searched = _median_ms(bounded(query), repeat)
        whole = _median_ms(unbounded(query), repeat)
        out[name] = {"searched_ms": searched, "ratio": round(searched / one, 2),
                     "unbounded_ms": whole, "unbounded_ratio": round(whole / one, 2)}
    bus.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=3_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-pg", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = measure(f"sqlite:///{Path(tmp) / 'q.db'}", args.messages, args.repeat)
    if not args.no_pg:
        with throwaway_schema("ctxc_searchquery") as url:
            out["postgres"] = measure(url, args.messages, args.repeat)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
