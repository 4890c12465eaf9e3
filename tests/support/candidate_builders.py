"""Builders of the compaction-candidate tests (issue 43: dry runs, partial compaction)
and their edge cases."""

from __future__ import annotations

from backends import MakeHarness
from helpers import Harness, assistant, ok, tool, user

SID = "p"


def projection(h: Harness, sid: str = SID) -> dict:
    return ok(h.do({"type": "get_projection", "session_id": sid}))


def tool_session(make_harness: MakeHarness) -> Harness:
    """Turns of user → assistant(tool call) → tool → assistant; seqs 4k+1 .. 4k+4."""
    h = make_harness("part", context_compaction={"keep_recent_tokens": 100})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for k in range(6):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"step {k}: read the file"),
            assistant(calls=[(f"c{k}", "read_file", '{"path": "a.py"}')]),
            tool(f"c{k}", f"contents {k} " + "x " * 300, name="read_file"),
            assistant(f"done with step {k}"),
        ]}))
    return h
