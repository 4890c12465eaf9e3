"""A worker OS process for review 18's search race (not a test module).

    python search_worker.py append URL SESSION ROUNDS OUT
    python search_worker.py search URL SESSION STOP_FILE OUT

``append``: ROUNDS appends of 3 messages, each holding the word "kiwi", one line per
acknowledged append (its seqs). ``search``: searches until STOP_FILE exists, one line
per search (the hit seqs, or the error). Every line is flushed at once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction import Settings, bootstrap  # noqa: E402


def main(argv: list[str]) -> None:
    mode, url, sid = argv[:3]
    bus = bootstrap(Settings(database_url=url, summarizer="extractive"))
    with open(argv[-1], "a", encoding="utf-8") as out:
        if mode == "append":
            go = Path(argv[-1]).with_name("go")
            while not go.exists():  # (start together with the searchers)
                time.sleep(0.01)
            for k in range(int(argv[3])):
                messages = [{"role": "user", "content": f"kiwi {k} a"},
                            {"role": "assistant", "content": f"kiwi {k} b"},
                            {"role": "user", "content": f"kiwi {k} c"}]
                answer = bus.dispatch_json({"type": "append_messages", "session_id": sid, "messages": messages})
                out.write(json.dumps(answer["result"]["seqs"] if answer["ok"] else {"error": answer["error"]}) + "\n")
                out.flush()
        else:
            stop = Path(argv[3])
            while True:
                last = stop.exists()
                answer = bus.dispatch_json({"type": "search_history", "session_id": sid, "query": "kiwi",
                                            "limit": 1000})
                line = [h["seq"] for h in answer["result"]["hits"]] if answer["ok"] else {"error": answer["error"]}
                out.write(json.dumps(line) + "\n")
                out.flush()
                if last:
                    break
    bus.close()


if __name__ == "__main__":
    main(sys.argv[1:])
