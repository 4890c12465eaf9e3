"""A worker OS process for the concurrent-retry tests (not a test module).

    python tests/support/idem_worker.py URL OUT_FILE COMMAND_JSON

Bootstraps, says ``OUT_FILE.ready``, waits for ``OUT_FILE.go`` (the parent touches every
worker's at once: the retries are released together), dispatches the command once and
writes its envelope to OUT_FILE.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction import Settings, bootstrap  # noqa: E402
from mp_worker import start_barrier  # noqa: E402


def main(url: str, out_path: str, command: str) -> None:
    bus = bootstrap(Settings(database_url=url, summarizer="extractive",
                             context_compaction={"keep_recent_tokens": 400}))
    start_barrier(out_path + ".ready", out_path + ".go")
    envelope = bus.dispatch_json(json.loads(command))
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(json.dumps(envelope))
    bus.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
