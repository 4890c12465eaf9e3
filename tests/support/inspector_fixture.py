"""A session that exercises every part of the inspector (issue 41): facts a small
window's ledger must drop, two checkpoints, a tool call and its result, a pin, a deleted
message, and an XSS canary in a user message."""

from __future__ import annotations

from typing import Any

SID = "inspect-me"
#: A title the canary would set if any of its markup ran.
FIRED = "XSS-FIRED"
CANARY = ("canary check " f"<script>document.title='{FIRED}'</script>"
          f"<img src=x onerror=\"document.title='{FIRED}'\">"
          "<img src=\"http://evil.invalid/pixel.png\"><b>bold?</b> & \"quotes\"")
SETTINGS: dict[str, Any] = {
    "summarizer": "extractive",
    "models": {"tiny": {"token_limit": 4000}},
    "context_compaction": {"reserve_tokens": 1000, "keep_recent_tokens": 300},
}


def _ok(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["ok"], envelope
    return envelope["result"]


def facts(lo: int, hi: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(lo, hi):
        out.append({"role": "user", "content": f"Edit src/pkg/module_{n}.py and set PORT_{n}=80{n:02d}; "
                                               f"see https://example.com/issue/{n} " + "filler text " * 8})
        out.append({"role": "assistant", "content": f"Done with module_{n}."})
    return out


def build(bus: Any, sid: str = SID) -> dict[str, Any]:
    d = bus.dispatch_json
    _ok(d({"type": "start_session", "session_id": sid, "model": "tiny"}))
    _ok(d({"type": "append_messages", "session_id": sid, "messages": facts(1, 40)}))
    _ok(d({"type": "append_messages", "session_id": sid, "messages": [
        {"role": "user", "content": CANARY},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_read_1", "name": "read_file", "arguments": "{\"path\": \"src/pkg/module_3.py\"}"}]},
        {"role": "tool", "tool_call_id": "call_read_1", "name": "read_file", "content": "print('module 3')"},
    ]}))
    first = _ok(d({"type": "compact", "session_id": sid}))
    _ok(d({"type": "append_messages", "session_id": sid, "messages": facts(40, 70)}))
    second = _ok(d({"type": "compact", "session_id": sid}))
    tail = _ok(d({"type": "append_messages", "session_id": sid, "messages": facts(70, 74)}))["seqs"]
    _ok(d({"type": "pin_messages", "session_id": sid, "seqs": [tail[0]]}))
    _ok(d({"type": "invalidate_history", "session_id": sid, "kind": "delete", "seqs": [tail[-1]]}))
    return {"first": first, "second": second, "pinned": tail[0], "deleted": tail[-1]}
