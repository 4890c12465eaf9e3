"""The turn lifecycle: prepare_turn, measured usage, overflow recovery (issue 4, spec §20.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_compaction.domain.overflow import BREADCRUMB, parse_overflow
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import Reply
from backends import MakeHarness
from helpers import FAKE_MODEL, Harness, RecordingSummarizer, err, llm_settings, ok, user


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


# ----------------------------------------------------------- the trigger


# ------------------------------------------------------- measured usage


# ------------------------------------------------------ recover_overflow


def overflow_text(window: int, prompt: int | None = None) -> str:
    return (f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {prompt or window + 500} tokens.")


def test_a_storage_failure_during_auto_compaction_keeps_memory_and_database_in_step(make_harness: MakeHarness) -> None:
    h = make_harness("t", models={"gpt-4o": {"token_limit": 30_000}},
                context_compaction={"keep_recent_tokens": 3000})
    build(h)
    h.fail_inserts("rm_checkpoints")  # the checkpoint's projection fails: its event rolls back
    request = prepare(h)
    assert request["compaction"] is None
    assert any("storage_error" in w for w in request["warnings"])
    h.allow_inserts("rm_checkpoints")
    live = ok(h.do({"type": "get_projection", "session_id": SID}))
    assert live["checkpoint_id"] is None and request["messages"][1:] == live["messages"]
    h.reopen()
    assert ok(h.do({"type": "get_projection", "session_id": SID})) == live
    h.close()


