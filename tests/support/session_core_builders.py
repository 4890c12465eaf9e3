"""Builders of the session core tests (unit) and their storage twins."""

from __future__ import annotations

from helpers import Harness, assistant, ok, tool, user


def start(h: Harness, sid: str = "s1", model: str = "gpt-4o") -> None:
    ok(h.do({"type": "start_session", "session_id": sid, "model": model}))


def append(h: Harness, sid: str, *messages: dict, command_id: str | None = None) -> list[int]:
    cmd = {"type": "append_messages", "session_id": sid, "messages": list(messages)}
    if command_id:
        cmd["command_id"] = command_id
    return ok(h.do(cmd))["seqs"]


def history(h: Harness, sid: str = "s1", include_invalidated: bool = True) -> list[dict]:
    return ok(
        h.do({"type": "get_history", "session_id": sid, "include_invalidated": include_invalidated})
    )["messages"]


def projection(h: Harness, sid: str = "s1") -> dict:
    return ok(h.do({"type": "get_projection", "session_id": sid}))


def coding_turn(n: int) -> list[dict]:
    return [
        user(f"step {n}: fix the failing test in src/app_{n}.py", turn_id=f"t{n}"),
        assistant(
            "Reading the files.",
            [(f"c{n}a", "read_file", f'{{"path": "src/app_{n}.py"}}'),
             (f"c{n}b", "run", '{"cmd": "pytest -q"}')],
            turn_id=f"t{n}",
        ),
        tool(f"c{n}a", "def f():\n    return 1\n" * 20, name="read_file") | {"turn_id": f"t{n}"},
        tool(f"c{n}b", "1 failed, 3 passed", name="run") | {"turn_id": f"t{n}"},
        assistant(f"Fixed app_{n}.", turn_id=f"t{n}"),
    ]
