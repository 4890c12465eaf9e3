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


def test_a_whole_session_logs_no_canary(databases, provider) -> None:  # type: ignore[no-untyped-def]
    """In process, on SQLite and PostgreSQL, every log record at DEBUG and above."""
    capture = Everything()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    try:
        run_session(databases.url("canary"), provider)
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


def session_steps() -> list[tuple]:
    """A session touching every logged path: ("queue", reply) or ("do", command, expected code)."""
    c = CANARIES
    steps: list[tuple] = [("do", {"type": "start_session", "session_id": "canary", "model": FAKE_MODEL}, None)]
    for n in range(4):
        steps.append(("do", {"type": "append_messages", "session_id": "canary", "command_id": f"k{n}", "messages": [
            {"role": "user", "content": f"{c['content']} turn {n}: fix the build", "turn_id": f"t{n}"},
            {"role": "assistant", "content": None, "reasoning": f"{c['reasoning']} thinking", "turn_id": f"t{n}",
             "tool_calls": [{"id": f"x{n}", "name": "run", "arguments": f'{{"cmd": "{c["arguments"]}"}}'}]},
            {"role": "tool", "tool_call_id": f"x{n}", "content": f"{c['tool_output']} " * 60, "turn_id": f"t{n}"},
            {"role": "assistant", "content": f"done {c['content']}", "turn_id": f"t{n}"},
        ]}, None))
    inputs = {"system_prompt": c["system"], "knowledge": c["knowledge"]}
    steps += [
        ("do", {"type": "get_context_usage", "session_id": "canary", **inputs}, None),
        ("queue", Reply(status=500)),
        ("do", {"type": "compact", "session_id": "canary"}, "summary_failed"),
        ("queue", Reply(text=f"## Objective\n{c['summary']}")),
        ("do", {"type": "compact", "session_id": "canary"}, None),
        ("do", {"type": "get_projection", "session_id": "canary"}, None),
        ("do", {"type": "recall_timeline", "session_id": "canary", "query": c["summary"]}, None),
        ("do", {"type": "replay_session", "session_id": "canary", "at_version": 3}, None),
        ("do", {"type": "append_messages", "session_id": "canary",
                "messages": [{"role": "tool", "tool_call_id": c["content"], "content": c["tool_output"]}]},
         "invalid_message"),
        ("do", {"type": "append_messages", "session_id": "canary",
                "messages": [{"role": "robot", "content": c["content"]}]}, "invalid_message"),
        ("do", {"type": "append_messages", "session_id": c["content"], "messages": [{"role": "user", "content": "x"}]},
         "session_not_found"),
    ]
    return steps


def run_session(url: str, provider) -> None:  # type: ignore[no-untyped-def]
    h = Harness(url, **llm_settings(provider.base_url), context_compaction={"keep_recent_tokens": 300})
    try:
        for step in session_steps():
            if step[0] == "queue":
                provider.queue(step[1])
                continue
            envelope = h.do(step[1])
            assert envelope["ok"] if step[2] is None else envelope["error"]["code"] == step[2], envelope
        h.reopen()
        ok(h.do({"type": "get_projection", "session_id": "canary"}))
    finally:
        h.close()


def test_ctxc_serve_logs_no_canary(databases, provider, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``ctxc serve -v`` in its own process, on SQLite and PostgreSQL: its whole stderr
    (our log lines and uvicorn's; an access log would go there too) carries no canary,
    also for refused requests: a bad token, a body that is not JSON, an unknown path.

    Breakage tried: the "checkpoint committed" log line given the summary text as an
    extra field: the canary turned up on stderr and this failed.
    """
    import json
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({**llm_settings(provider.base_url),
                                  "context_compaction": {"keep_recent_tokens": 300}}))
    token = "canary-test-token-0123456789"
    err_path = tmp_path / "serve.stderr"
    env = {k: v for k, v in os.environ.items() if k != "CTXC_HTTP_TOKEN"}
    ctxc = str(Path(sys.executable).with_name("ctxc"))
    with open(err_path, "wb") as err_file:
        proc = subprocess.Popen([ctxc, "serve", "--db", databases.url("serve"), "--config", str(config),
                                 "--port", str(port), "--token", token, "-v"],
                                env=env, stdout=subprocess.DEVNULL, stderr=err_file)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, err_path.read_text()
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "ctxc serve did not start"
            time.sleep(0.1)
        auth = {"Authorization": f"Bearer {token}"}
        # (a generous timeout: the first summary imports litellm in the server)
        with httpx.Client(base_url=base, headers=auth, timeout=120) as client:
            for step in session_steps():
                if step[0] == "queue":
                    provider.queue(step[1])
                    continue
                envelope = client.post("/v1/commands", json=step[1]).json()
                assert envelope["ok"] if step[2] is None else envelope["error"]["code"] == step[2], envelope
            c = CANARIES["content"]
            assert client.post("/v1/commands", content=f'{{"content": "{c}"'.encode()).status_code == 400
            assert client.get(f"/v1/{c}").status_code == 404
        assert httpx.post(f"{base}/v1/commands", headers={"Authorization": f"Bearer {c}"},
                          json={"type": "get_history", "session_id": c}).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    assert "checkpoint committed" in stderr and "canary" in stderr, f"ctxc serve -v logged too little:\n{stderr}"
    for what, canary in CANARIES.items():
        assert canary not in stderr, f"{what} leaked into the stderr of ctxc serve:\n{stderr[-3000:]}"
