"""One trip per command (ADR 0024): a command reads the session's context once, and
once more only after it changed the session (a committed checkpoint)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from context_compaction.application.contracts.ports import ReadModel
from context_compaction.application.state.session_context import ContextCache, SessionContext
from helpers import Harness, ok

SETTINGS: dict[str, Any] = {
    "summarizer": "extractive",
    "models": {"gpt-4o": {"token_limit": 6000}},
    "context_compaction": {"reserve_tokens": 1000, "keep_recent_tokens": 800},
}
PREPARE = {"type": "prepare_turn", "session_id": "s", "system_prompt": "sys"}


class RecordingCache(ContextCache):
    """The process's context cache, recording each read of a session's context."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def get(self, read_model: ReadModel, session_id: str, *, allow_deleted: bool = False) -> SessionContext:
        self.reads.append(session_id)
        return super().get(read_model, session_id, allow_deleted=allow_deleted)


def turn(h: Harness, i: int, words: int) -> None:
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        {"role": "user", "content": f"question {i} " + "word " * words},
        {"role": "assistant", "content": f"answer {i} " + "reply " * words},
    ]}))


def ask(h: Harness, text: str) -> None:
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": text}]}))


def reads_of(h: Harness, command: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    cache = RecordingCache()
    h.bus.services.contexts = cache
    result = ok(h.do(command))
    return len(cache.reads), result


def test_a_turn_under_the_threshold_reads_its_context_once(tmp_path: Path) -> None:
    h = Harness(tmp_path / "db.sqlite", **SETTINGS)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    turn(h, 0, 60)
    ask(h, "next")
    reads, result = reads_of(h, PREPARE)
    assert result["compaction"] is None
    assert reads == 1
    reads, _ = reads_of(h, {"type": "get_context_usage", "session_id": "s", "system_prompt": "sys"})
    assert reads == 1
    h.close()


def test_an_auto_compacting_turn_reads_again_only_after_the_commit(tmp_path: Path) -> None:
    h = Harness(tmp_path / "db.sqlite", **SETTINGS)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for i in range(30):
        turn(h, i, 80)
    ask(h, "next")
    reads, result = reads_of(h, PREPARE)
    assert result["compaction"]["status"] == "compacted"
    assert reads == 2  # was 3: the compaction re-read what prepare_turn had read
    # the request is the one after the commit
    assert result["checkpoint_id"] == result["compaction"]["checkpoint_id"]
    h.close()


def test_an_overflow_recovery_reads_after_the_learned_window_and_after_the_commit(tmp_path: Path) -> None:
    h = Harness(tmp_path / "db.sqlite", **SETTINGS)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for i in range(8):
        turn(h, i, 60)
    ask(h, "next")
    request = ok(h.do(PREPARE))
    assert request["compaction"] is None
    reads, result = reads_of(h, {
        "type": "recover_overflow", "session_id": "s", "request_id": request["request_id"],
        "tool_progress": False,
        "error_message": "This model's maximum context length is 3000 tokens. "
                         "However, your messages resulted in 5000 tokens",
    })
    assert result["compaction"]["status"] == "compacted"
    assert result["retry_of"] == request["request_id"]
    assert reads == 2
    h.close()
