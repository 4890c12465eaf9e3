"""Builders of the turn tests and their storage twins."""

from __future__ import annotations

from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import (
    Harness,
    ok,
    user,
)

SID = "s"


SYSTEM = "You are a careful coding agent."


def build(h: Harness, turns: int = 8, *, model: str = "gpt-4o", big: int = 2_000) -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    for t in coding_session(turns, big_output_chars=big):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [user("Next: add a regression test.", turn_id="next")]}))


def prepare(h: Harness, bus=None, **extra) -> dict:
    command = {"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM, **extra}
    return ok((bus or h.bus).dispatch_json(command))


def checkpoints(h: Harness) -> list[dict]:
    return ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]


def overflow_text(window: int, prompt: int | None = None) -> str:
    return (f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {prompt or window + 500} tokens.")
