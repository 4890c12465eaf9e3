"""The inspector's pages on a 100,000-message session (issue 41): server-side time per page.

A standalone figure, not a gate (the test suite counts rows instead of timing):
``python benchmarks/inspector_pages.py [--db sqlite|memory] [--messages 100000]``. Builds
the session (compacted every 1,000 messages, as a session that outgrows its window is),
then times each page through the ASGI app in process: the median of five requests after
one warm-up (the first loads tiktoken's ranks).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from inspector_fixture import SETTINGS

    from context_compaction import Settings, bootstrap
    from context_compaction.infrastructure.inspector import mount

    folder = tempfile.mkdtemp()
    url = f"sqlite:///{folder}/big.db" if args.db == "sqlite" else "memory://inspector-bench"
    bus = bootstrap(Settings(database_url=url, **SETTINGS))
    d = bus.dispatch_json
    d({"type": "start_session", "session_id": "big", "model": "tiny"})
    started = time.perf_counter()
    for k in range(args.messages // 1000):
        batch = []
        for n in range(500):
            batch += [{"role": "user", "content": f"step {k}-{n}: look at src/m{n}.py"},
                      {"role": "assistant", "content": "ok"}]
        assert d({"type": "append_messages", "session_id": "big", "messages": batch})["ok"]
        assert d({"type": "compact", "session_id": "big"})["ok"]
    print(f"built {args.messages:,} messages on {args.db} in {time.perf_counter() - started:.1f} s")
    app = FastAPI()
    mount(app, bus, None)
    c = TestClient(app)
    cp = d({"type": "list_checkpoints", "session_id": "big"})["result"]["checkpoints"][-1]["checkpoint_id"]
    pages = ["/ui", "/ui/session?id=big", "/ui/session?id=big&page=1000&chart=25", "/ui/history?id=big",
             "/ui/history?id=big&from=50000", "/ui/history?id=big&q=m7.py",
             f"/ui/history?id=big&at={args.messages // 2}", f"/ui/checkpoint?id=big&cp={cp}"]
    print("| page | median ms (5 requests) |\n|---|---|")
    for page in pages:
        assert c.get(page).status_code == 200
        times = []
        for _ in range(5):
            t = time.perf_counter()
            c.get(page)
            times.append((time.perf_counter() - t) * 1000)
        print(f"| `{page}` | {statistics.median(times):,.0f} |")
    bus.close()


if __name__ == "__main__":
    main()
