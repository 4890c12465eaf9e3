"""A worker OS process for the one-session contention test (not a test module).

    python tests/support/contention_worker.py URL SESSION WORKER_NO APPENDS OUT_FILE

Connects, writes OUT_FILE.ready and waits for OUT_FILE.go (so that every worker starts
appending at once, after its imports), appends APPENDS single messages to SESSION,
each with its own command id, and writes one JSON line per command to OUT_FILE.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction import Settings, bootstrap  # noqa: E402


def main(url: str, session: str, worker: int, appends: int, out_path: str) -> None:
    bus = bootstrap(Settings(database_url=url, summarizer="extractive"))
    bus.dispatch_json({"type": "get_history", "session_id": session})  # connect and warm up
    Path(out_path + ".ready").touch()
    go = Path(out_path + ".go")
    while not go.exists():
        time.sleep(0.01)
    with open(out_path, "w", encoding="utf-8") as out:
        for i in range(appends):
            tag = f"w{worker}-{i}"
            began = time.monotonic()
            envelope = bus.dispatch_json({
                "type": "append_messages", "session_id": session, "command_id": tag,
                "messages": [{"role": "user", "content": f"message {tag}", "turn_id": tag}]})
            out.write(json.dumps({"tag": tag, "envelope": envelope,
                                  "seconds": round(time.monotonic() - began, 4)}) + "\n")
    bus.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
