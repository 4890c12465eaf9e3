"""Issue 36 finding 3: every idempotent command answers a concurrent retry with the same
``command_id`` the first call's result (one rule, ADR 0071). Processes released
together; before the rule, 35 of 48 concurrent ``revert_checkpoint`` retries answered
``invalid_command: … not the active checkpoint``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, ok, user
from concurrent_retries import PROCESSES, _same_answers, released_together



@pytest.mark.backends("sqlite", "postgres")
def test_concurrent_retries_of_revert_checkpoint_answer_the_first_result(
    make_harness: MakeHarness, backend: str, tmp_path: Path
) -> None:
    h = make_harness("revert", adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                     context_compaction={"keep_recent_tokens": 400})
    ok(h.do({"type": "start_session", "session_id": "v", "model": "gpt-4o"}))
    for i in range(12):
        ok(h.do({"type": "append_messages", "session_id": "v",
                 "messages": [user(f"step {i}"), assistant(f"done {i} " + "words " * 40)]}))
    checkpoint = ok(h.do({"type": "compact", "session_id": "v"}))["checkpoint_id"]
    events = h.events()
    result = _same_answers(released_together(h, tmp_path, {
        "type": "revert_checkpoint", "session_id": "v", "checkpoint_id": checkpoint, "command_id": "rv-1"}, "rv"))
    assert result["checkpoint_id"] == checkpoint and result["active_checkpoint_id"] is None
    assert h.events() == events + 1, "one revert applied"


@pytest.mark.backends("sqlite", "postgres")
def test_concurrent_retries_of_start_and_append_answer_the_first_result(
    make_harness: MakeHarness, backend: str, tmp_path: Path
) -> None:
    h = make_harness("idem")
    started = _same_answers(released_together(h, tmp_path, {
        "type": "start_session", "session_id": "s", "model": "gpt-4o", "command_id": "st-1"}, "st"))
    assert started["version"] >= 1
    appended = released_together(h, tmp_path, {
        "type": "append_messages", "session_id": "s", "messages": [user("once")], "command_id": "ap-1"}, "ap")
    assert _same_answers(appended)["seqs"] == [1]
    assert sum(1 for e in appended if not e["result"]["duplicate"]) == 1
    assert [m["content"] for m in ok(h.do({"type": "get_history", "session_id": "s"}))["messages"]] == ["once"]


@pytest.mark.backends("sqlite", "postgres")
def test_concurrent_retries_of_pin_and_unpin_answer_the_same_result(
    make_harness: MakeHarness, backend: str, tmp_path: Path
) -> None:
    h = make_harness("pins")
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "p", "messages": [user("a"), assistant("b"), user("c")]}))
    events = h.events()
    pinned = _same_answers(released_together(h, tmp_path, {
        "type": "pin_messages", "session_id": "p", "seqs": [1, 3], "command_id": "pin-1"}, "pin"))
    assert pinned["pinned_seqs"] == [1, 3] and h.events() == events + 1, "one pin applied"
    unpinned = _same_answers(released_together(h, tmp_path, {
        "type": "unpin_messages", "session_id": "p", "seqs": [3], "command_id": "unpin-1"}, "unpin"))
    assert unpinned["pinned_seqs"] == [1] and h.events() == events + 2, "one unpin applied"
