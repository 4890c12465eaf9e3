"""Hand-outs edited in place while other commands extend the cached projection (issue 38,
ADR 0098): the builder's record of which messages are flat is taken under the cache's
lock, so no copy made during an append trusts a record of messages it does not hold,
and no edit reaches what a fresh process would project.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from helpers import Harness

from context_compaction.application.contracts.commands import AppendMessages, GetProjection, PrepareTurn, StartSession

#: Both of the hand-out copy's paths (``handout_path``, issue 38).
pytestmark = pytest.mark.usefixtures("handout_path")
SID = "concurrent-handout"


def _vandalize(value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            if isinstance(value[key], (dict, list)):
                _vandalize(value[key])
            elif isinstance(value[key], str):
                value[key] += " EDITED"
        value["edited"] = {"by": ["host"]}
    elif isinstance(value, list):
        for item in value:
            _vandalize(item)
        value.append({"edited": True})


def _batch(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": f"question {n}"}]},
        {"role": "assistant", "content": None, "provider_specific_fields": {"seen": [n]},
         "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": "file text"},
        {"role": "assistant", "content": f"answer {n}"},
    ]


def test_async_hand_outs_edited_during_appends_leave_the_projection_a_fresh_process_makes(tmp_path: Path) -> None:
    h = Harness(tmp_path / "c.db", summarizer="extractive", context_compaction={"enabled": False})
    h.bus.dispatch(StartSession(session_id=SID, model="gpt-4o"))
    done = threading.Event()

    def append() -> None:
        try:
            for n in range(60):
                h.bus.dispatch(AppendMessages(session_id=SID, messages=_batch(n), model="gpt-4o"))
        finally:
            done.set()

    async def edit(i: int) -> int:
        taken = 0
        while not done.is_set():
            command = PrepareTurn(session_id=SID, system_prompt="Be brief.") if i % 2 \
                else GetProjection(session_id=SID)
            _vandalize((await h.bus.adispatch(command)).messages)
            taken += 1
        return taken

    async def editors() -> list[int]:
        return await asyncio.gather(*(edit(i) for i in range(4)))

    appender = threading.Thread(target=append)
    appender.start()
    taken = asyncio.run(editors())
    appender.join()
    assert sum(taken) > 4, "the hand-outs never overlapped the appends"
    ours = h.bus.dispatch(GetProjection(session_id=SID)).messages
    fresh = Harness(tmp_path / "c.db", summarizer="extractive", context_compaction={"enabled": False})
    assert json.dumps(ours) == json.dumps(fresh.bus.dispatch(GetProjection(session_id=SID)).messages)
    assert len(ours) == 240 and "EDITED" not in json.dumps(ours)
