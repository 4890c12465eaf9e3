"""Builders of the lossless-compaction tests and their storage twins."""

from __future__ import annotations

from backends import MakeHarness
from fakeprovider import FakeProvider
from helpers import (
    Harness,
    llm_settings,
    ok,
    user,
)

SID = "s"


PLANTED = (
    "The config lives in src/app/settings_prod.py and this is tracked as PAY-4411. "
    "You must never push to the release branch directly. "
    "Actually, the staging host listens on port 8443, not on port 8080."
)


def filler(n: int, chars: int = 3_000) -> str:
    return "\n".join(f"row {n}.{i}: value={i * n} status=pending" for i in range(chars // 36))


def turn(n: int, text: str | None = None) -> list[dict]:
    tid = f"t{n}"
    call = {"id": f"c{n}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    return [
        user(text or f"Step {n}: continue.", turn_id=tid),
        {"role": "assistant", "content": None, "tool_calls": [call], "turn_id": tid},
        {"role": "tool", "tool_call_id": f"c{n}", "content": filler(n), "turn_id": tid},
        {"role": "assistant", "content": f"Step {n} done.", "turn_id": tid},
    ]


def build(h: Harness, turns: int = 10, *, model: str = "gpt-4o", first: str = PLANTED) -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    for n in range(turns):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": turn(n, first if n == 0 else None)}))


def compact(h: Harness) -> dict:
    return ok(h.do({"type": "compact", "session_id": SID}))


def attempts(h: Harness, **extra) -> list[dict]:
    return ok(h.do({"type": "list_compaction_attempts", "session_id": SID, **extra}))["attempts"]


def llm(make_harness: MakeHarness, provider: FakeProvider, **extra) -> Harness:
    return make_harness("llm", **llm_settings(provider.base_url, **extra),
                        context_compaction={"keep_recent_tokens": 2000})
