"""Review of issue 42: processes forking one parent at once (SQLite, PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import MakeHarness
from helpers import RecordingSummarizer, assistant, ok, user
from concurrent_retries import PROCESSES, _same_answers, released_together


def _parent(make_harness: MakeHarness):
    h = make_harness("forks", adapters={"summarizer": RecordingSummarizer(text="## Goal\nGo on.")},
                     context_compaction={"keep_recent_tokens": 400})
    ok(h.do({"type": "start_session", "session_id": "p", "model": "gpt-4o"}))
    for i in range(12):
        ok(h.do({"type": "append_messages", "session_id": "p",
                 "messages": [user(f"step {i}"), assistant(f"done {i} " + "words " * 40)]}))
    ok(h.do({"type": "compact", "session_id": "p"}))
    return h


@pytest.mark.backends("sqlite", "postgres")
def test_concurrent_retries_of_one_fork_answer_the_first_result(
    make_harness: MakeHarness, backend: str, tmp_path: Path
) -> None:
    h = _parent(make_harness)
    command = {"type": "fork_session", "session_id": "p", "new_session_id": "c", "command_id": "cmd-fork-c"}
    first = _same_answers(released_together(h, tmp_path, command, "fork"))
    assert first["parent_session_id"] == "p" and first["session_id"] == "c"
    assert ok(h.do({"type": "get_projection", "session_id": "c"}))["messages"] == \
        ok(h.do({"type": "get_projection", "session_id": "p"}))["messages"]


@pytest.mark.backends("sqlite", "postgres")
def test_concurrent_forks_of_one_parent_into_one_new_id_make_one_child(
    make_harness: MakeHarness, backend: str, tmp_path: Path
) -> None:
    h = _parent(make_harness)
    command = {"type": "fork_session", "session_id": "p", "new_session_id": "c"}  # no command id
    answers = released_together(h, tmp_path, command, "fork")
    assert sum(a["ok"] for a in answers) == 1, answers
    assert {a["error"]["code"] for a in answers if not a["ok"]} == {"session_exists"}
    assert len(ok(h.do({"type": "get_history", "session_id": "c"}))["messages"]) == 24
    assert PROCESSES > 1
