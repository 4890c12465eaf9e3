"""The turn lifecycle: prepare_turn, measured usage, overflow recovery (issue 4, spec §20.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_compaction.domain.overflow import BREADCRUMB, parse_overflow
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import Reply
from backends import MakeHarness
from helpers import FAKE_MODEL, Harness, RecordingSummarizer, err, llm_settings, ok, user
from turns_builders import build, prepare, checkpoints, overflow_text


SID = "s"
SYSTEM = "You are a careful coding agent."


# ----------------------------------------------------------- the trigger


# ------------------------------------------------------- measured usage


# ------------------------------------------------------ recover_overflow


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


