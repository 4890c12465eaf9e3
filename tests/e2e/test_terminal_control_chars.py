"""What an attacker's stored text can do to an operator's terminal.

Message content, turn ids, tool names and session ids are the host's (and its users')
data; ``ctxc`` prints them in its text views. A control character there must arrive
on the terminal as visible text, never as a command to it (ESC sequences can retitle
the window, write the clipboard or hide lines; bidi overrides reorder what is shown).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from cli_inprocess import run_cli
from helpers import Harness, assistant, ok, tool, user

ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
HIDDEN = "\x9b31m\u202e\x08\r"
#: What must never reach the terminal raw: C0 controls but newline, DEL, C1 controls,
#: bidi embeddings/overrides/isolates.
_RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_cli_text_views_show_control_characters_as_text(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    h = Harness(tmp_path / "esc.db", summarizer="extractive", context_compaction={"keep_recent_tokens": 200})
    session = f"s{ESC}"
    ok(h.do({"type": "start_session", "session_id": session, "model": "gpt-4o-mini"}))
    for i in range(4):
        ok(h.do({"type": "append_messages", "session_id": session, "messages": [
            user(f"look at this {ESC}{HIDDEN} file " + "please " * 60, turn_id=f"t{i}{ESC}"),
            assistant(None, calls=[(f"c{i}{ESC}", f"read{ESC}", f"{{{ESC}}}")], turn_id=f"t{i}"),
            tool(f"c{i}{ESC}", f"contents {ESC}{HIDDEN} " + "lorem ipsum " * 80),
            assistant(f"done {ESC}", turn_id=f"t{i}")]}))
    assert ok(h.do({"type": "compact", "session_id": session}))["status"] == "compacted"
    h.close()
    capsys.readouterr()
    for argv in (["sessions"], ["history", session, "--all"], ["timeline", session], ["checkpoints", session],
                 ["projection", session], ["replay", session, "--at-version", "3"], ["info", session]):
        assert run_cli([*argv, "--db", h.url]) == 0, argv
        out = capsys.readouterr().out
        assert not _RAW.search(out), (argv, [m for m in _RAW.findall(out)][:5])
        if argv[0] in ("history", "timeline"):
            assert "\\x1b" in out, (argv, out[:500])  # shown, escaped
