"""The typed API holds for every command and for ``adispatch``.

``tests/typing/user_typed_api.py`` asserts the result type of most commands through
``dispatch``; this script covers the remaining ones and the async path a FastAPI
service takes (the README's recipe): ``await bus.adispatch(PrepareTurn(...))`` is a
``TurnRequest`` to mypy --strict, and a typo in one of its attributes is a type error.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import MYPY_CONFIG, mypy_package_root

HOST_SCRIPT = '''\
from __future__ import annotations

from typing import Any, assert_type

from context_compaction import ModelConfig, Settings, bootstrap, commands
from context_compaction.application.contracts import results as r

bus = bootstrap(Settings(database_url="sqlite:///agent.db"))
ModelConfig(api_kye="sk")  # E: Unexpected keyword argument "api_kye"

assert_type(bus.dispatch(commands.ConfigureSession(session_id="s", agent_token_limit=None)), r.ConfigureSessionResult)
assert_type(bus.dispatch(commands.InvalidateHistory(session_id="s", kind="rewind", to_seq=2)), r.InvalidateHistoryResult)
assert_type(bus.dispatch(commands.UnpinMessages(session_id="s", seqs=[1])), r.PinsResult)
assert_type(bus.dispatch(commands.RevertCheckpoint(session_id="s", checkpoint_id="cp")), r.RevertResult)
assert_type(bus.dispatch(commands.Resummarize(session_id="s", checkpoint_id="cp")), r.ResummarizeResult)


async def service() -> str:
    turn = await bus.adispatch(commands.PrepareTurn(session_id="s"))
    assert_type(turn, r.TurnRequest)
    print(turn.request_idd)  # E: "TurnRequest" has no attribute "request_idd"
    assert_type(await bus.adispatch(commands.Compact(session_id="s")), r.CompactOutcome)
    assert_type(await bus.adispatch(commands.ReadEvents(after=3)), r.EventsResult)
    assert_type(await bus.adispatch_json({"type": "list_sessions"}), dict[str, Any])
    return turn.request_id
'''


@pytest.mark.slow
def test_every_command_and_adispatch_are_typed_under_mypy_strict(tmp_path: Path) -> None:
    script = tmp_path / "host_service.py"
    script.write_text(HOST_SCRIPT, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", "cache", script.name],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
        env={**os.environ, "MYPYPATH": mypy_package_root(tmp_path / "src")},
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    errors: dict[int, list[str]] = {}
    for line in proc.stdout.splitlines():
        if match := re.match(r"^[^:]+:(\d+): error: (.*)$", line):
            errors.setdefault(int(match[1]), []).append(match[2])
    expected = {n: m[1] for n, text in enumerate(HOST_SCRIPT.splitlines(), 1)
                if (m := re.search(r"#\s*E:\s*(.+?)\s*$", text))}
    missing = {n: t for n, t in expected.items() if not any(t in e for e in errors.get(n, []))}
    assert missing == {}, errors
    assert sorted(set(errors) - set(expected)) == [], errors  # no error where none was meant
