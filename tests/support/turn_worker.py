"""A worker OS process that runs one ``TurnRunner`` turn (tests/test_turn_lease.py; not a test).

    python tests/support/turn_worker.py URL API_BASE SESSION TEXT LEASE_SECONDS OUT_FILE [GO_FILE]

Bootstraps on URL (the session must exist), says it is ready (``OUT_FILE.ready``), waits
for GO_FILE when given, runs the turn against the fake provider at API_BASE and writes
one JSON line to OUT_FILE: ``{"ok": true, "answer": ...}`` or ``{"ok": false, "code": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

from context_compaction import ContextCompactionError, Settings, bootstrap  # noqa: E402
from context_compaction.application.agent.runner import TurnRunner  # noqa: E402
from context_compaction.infrastructure.providers import LiteLLMChatProvider  # noqa: E402

MODEL = "openai/fake-model"


async def no_tools(call: dict) -> str:
    return "unused"


def main(url: str, api_base: str, session: str, text: str, lease: str, out: str, go: str | None = None) -> None:
    settings = Settings(database_url=url, summarizer="extractive",
                        models={MODEL: {"api_base": api_base, "api_key": "k", "token_limit": 100_000}})
    bus = bootstrap(settings)
    runner = TurnRunner(bus, LiteLLMChatProvider(settings, timeout=60), no_tools, lease_seconds=float(lease))
    open(out + ".ready", "w").close()
    deadline = time.monotonic() + 120
    while go and not os.path.exists(go):
        if time.monotonic() > deadline:
            raise SystemExit("no go signal within 120 s")
        time.sleep(0.002)
    try:
        result = asyncio.run(runner.run(session, text, system_prompt="You are an agent."))
        record = {"ok": True, "answer": result.answer, "pid": os.getpid()}
    except ContextCompactionError as exc:
        record = {"ok": False, "code": exc.code, "pid": os.getpid()}
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    bus.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
