"""Spec §16 / DESIGN §12: logs never carry message text, summaries, reasoning or payloads."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from fakeprovider import Reply
from helpers import FAKE_MODEL, Harness, llm_settings, ok

CANARIES = {
    "content": "CANARY-CONTENT-7f3a",
    "reasoning": "CANARY-REASONING-91bc",
    "arguments": "CANARY-ARGS-2d44",
    "tool_output": "CANARY-TOOL-OUTPUT-5e10",
    "summary": "CANARY-SUMMARY-c0de",
    "system": "CANARY-SYSTEM-PROMPT-aa01",
    "knowledge": "CANARY-KNOWLEDGE-bb02",
}


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def rendered(record: logging.LogRecord) -> str:
    parts = [record.getMessage(), repr(record.args)]
    parts += [repr(v) for k, v in vars(record).items() if k not in ("msg", "args")]
    if record.exc_info:
        parts.append("".join(traceback.format_exception(*record.exc_info)))
    return "\n".join(parts)


def test_a_whole_session_logs_no_canary(tmp_path: Path, provider) -> None:
    capture = Everything()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    try:
        run_session(tmp_path, provider)
    finally:
        root.removeHandler(capture)
        root.setLevel(old_level)
    assert len(capture.records) > 5, "the session should have logged something"
    ours = [r for r in capture.records if r.name.startswith("context_compaction")]
    assert any(getattr(r, "session_id", None) == "canary" for r in ours)
    for record in capture.records:
        text = rendered(record)
        for what, canary in CANARIES.items():
            assert canary not in text, f"{what} leaked into log record {record.name}: {record.getMessage()}"


def run_session(tmp_path: Path, provider) -> None:
    c = CANARIES
    h = Harness(tmp_path / "canary.db", **llm_settings(provider.base_url),
                context_compaction={"keep_recent_tokens": 300})
    ok(h.do({"type": "start_session", "session_id": "canary", "model": FAKE_MODEL}))
    for n in range(4):
        ok(h.do({"type": "append_messages", "session_id": "canary", "command_id": f"k{n}", "messages": [
            {"role": "user", "content": f"{c['content']} turn {n}: fix the build", "turn_id": f"t{n}"},
            {"role": "assistant", "content": None, "reasoning": f"{c['reasoning']} thinking", "turn_id": f"t{n}",
             "tool_calls": [{"id": f"x{n}", "name": "run", "arguments": f'{{"cmd": "{c["arguments"]}"}}'}]},
            {"role": "tool", "tool_call_id": f"x{n}", "content": f"{c['tool_output']} " * 60, "turn_id": f"t{n}"},
            {"role": "assistant", "content": f"done {c['content']}", "turn_id": f"t{n}"},
        ]}))
    inputs = {"system_prompt": c["system"], "knowledge": c["knowledge"]}
    ok(h.do({"type": "get_context_usage", "session_id": "canary", **inputs}))
    provider.queue(Reply(status=500))
    assert h.do({"type": "compact", "session_id": "canary"})["error"]["code"] == "summary_failed"
    provider.queue(Reply(text=f"## Objective\n{c['summary']}"))
    ok(h.do({"type": "compact", "session_id": "canary"}))
    ok(h.do({"type": "get_projection", "session_id": "canary"}))
    ok(h.do({"type": "recall_timeline", "session_id": "canary", "query": c["summary"]}))
    ok(h.do({"type": "replay_session", "session_id": "canary", "at_version": 3}))
    bad = h.do({"type": "append_messages", "session_id": "canary",
                "messages": [{"role": "tool", "tool_call_id": c["content"], "content": c["tool_output"]}]})
    assert bad["error"]["code"] == "invalid_message"
    bad = h.do({"type": "append_messages", "session_id": "canary",
                "messages": [{"role": "robot", "content": c["content"]}]})
    assert bad["error"]["code"] == "invalid_message"
    h.reopen()
    ok(h.do({"type": "get_projection", "session_id": "canary"}))
    h.close()
