"""The turn runner harness and tools of the runner and budget-tool tests."""

from __future__ import annotations

from backends import MakeHarness
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider
from helpers import FAKE_MODEL, Harness, ok

SID = "s"


TOOLS = [{"type": "function", "function": {"name": "run", "description": "Run a shell command",
                                            "parameters": {"type": "object",
                                                           "properties": {"cmd": {"type": "string"}}}}}]


class Tools:
    def __init__(self, during=None) -> None:
        self.calls: list[dict] = []
        self.during = during

    async def __call__(self, call: dict) -> str:
        self.calls.append(call)
        if self.during is not None:
            await self.during(call)
        return f"output of {call['name']} #{len(self.calls)}"


def harness(make_harness: MakeHarness, provider: FakeProvider, history_turns: int = 6) -> Harness:
    settings = {
        "summarizer": "extractive",
        "models": {FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k", "token_limit": 100_000}},
        "context_compaction": {"keep_recent_tokens": 3000},
    }
    h = make_harness("r", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    for t in coding_session(history_turns, big_output_chars=3_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    return h
