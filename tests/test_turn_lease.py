"""One running turn per session, across processes (issue 15, ADR 0041).

A second ``TurnRunner.run`` on a session whose turn is running — in the same process, in
another bus on the same database, or in another OS process — is refused with
``turn_in_progress`` before it appends anything; so is a manual ``compact``. A holder that
crashed blocks the session only until its lease runs out. SQLite file and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from backends import MakeHarness
from context_compaction.application.runner import TurnRunner
from context_compaction.domain.errors import TurnInProgress
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL, Harness, ok

SID = "lease"
WORKER = str(Path(__file__).with_name("turn_worker.py"))


def harness(make_harness: MakeHarness, provider: FakeProvider) -> Harness:
    h = make_harness("lease", summarizer="extractive",
                     models={FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k", "token_limit": 100_000}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    return h


async def no_tools(call: dict) -> str:
    return "unused"


def runner(bus, lease_seconds: float = 30.0) -> TurnRunner:
    return TurnRunner(bus, LiteLLMChatProvider(bus.services.settings, timeout=30), no_tools,
                      lease_seconds=lease_seconds)


def history(h: Harness) -> list[tuple[str, str | None]]:
    return [(m["role"], m["content"]) for m in ok(h.do({"type": "get_history", "session_id": SID}))["messages"]]


def test_the_lease_store_gives_a_session_to_one_owner_until_release_or_expiry(make_harness: MakeHarness, provider) -> None:
    h = harness(make_harness, provider)
    leases = h.bus.services.leases
    assert leases.acquire("s", "A", 30) and not leases.acquire("s", "B", 30)
    assert leases.holder("s") == "A" and leases.acquire("s", "A", 30)  # its own again
    assert leases.renew("s", "A", 30) and not leases.renew("s", "B", 30)
    leases.release("s", "B")  # not B's: nothing happens
    assert leases.holder("s") == "A"
    leases.release("s", "A")
    assert leases.holder("s") is None and leases.acquire("s", "B", 30)
    assert leases.acquire("t", "A", 0.3) and not leases.acquire("t", "B", 30)
    time.sleep(0.5)  # A crashed: its lease runs out
    assert leases.holder("t") is None and leases.acquire("t", "B", 30)
    assert not leases.renew("t", "A", 30) and leases.holder("t") == "B"
    h.close()


def test_a_second_run_on_a_running_session_is_refused_and_appends_nothing(make_harness: MakeHarness, provider) -> None:
    gate = threading.Event()
    provider.queue(Reply(text="First answer.", gate=gate), Reply(text="Second answer."))
    h = harness(make_harness, provider)
    other = h.new_bus()  # another bus on the database: its own process memory

    async def main() -> tuple[object, BaseException | None, object, dict]:
        first = asyncio.create_task(runner(h.bus).run(SID, "first question"))
        async with asyncio.timeout(30):
            while provider.calls == 0:
                await asyncio.sleep(0.005)
        refused = None
        try:
            await runner(h.bus).run(SID, "second question")  # same process
        except TurnInProgress as exc:
            refused = exc
        elsewhere = await asyncio.gather(runner(other).run(SID, "third question"), return_exceptions=True)
        compact = await other.adispatch_json({"type": "compact", "session_id": SID})
        gate.set()
        return await first, refused, elsewhere[0], compact

    first, refused, elsewhere, compact = asyncio.run(main())
    assert first.answer == "First answer."
    assert refused is not None and refused.code == "turn_in_progress"
    assert isinstance(elsewhere, TurnInProgress)
    assert compact["ok"] is False and compact["error"]["code"] == "turn_in_progress"
    assert history(h) == [("user", "first question"), ("assistant", "First answer.")]
    assert h.bus.services.leases.holder(SID) is None  # released at the end
    # serialized: once the turn has finished, the next one runs
    assert asyncio.run(runner(other).run(SID, "second question")).answer == "Second answer."
    assert history(h)[2:] == [("user", "second question"), ("assistant", "Second answer.")]
    h.close()


def test_a_turn_longer_than_its_lease_keeps_the_session_by_renewing(make_harness: MakeHarness, provider) -> None:
    gate = threading.Event()
    provider.queue(Reply(text="Slow answer.", gate=gate))
    h = harness(make_harness, provider)
    other = h.new_bus()

    async def main() -> tuple[object, BaseException | object]:
        first = asyncio.create_task(runner(h.bus, lease_seconds=0.6).run(SID, "slow question"))
        async with asyncio.timeout(30):
            while provider.calls == 0:
                await asyncio.sleep(0.005)
        await asyncio.sleep(1.5)  # 2.5 lease periods: only renewals keep it
        attempt = await asyncio.gather(runner(other).run(SID, "impatient question"), return_exceptions=True)
        gate.set()
        return await first, attempt[0]

    first, attempt = asyncio.run(main())
    assert isinstance(attempt, TurnInProgress)
    assert first.answer == "Slow answer."
    assert history(h) == [("user", "slow question"), ("assistant", "Slow answer.")]
    h.close()


def spawn(h: Harness, provider: FakeProvider, text: str, out: Path, lease: float, go: Path | None) -> subprocess.Popen:
    args = [sys.executable, WORKER, h.url, provider.base_url, SID, text, str(lease), str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    return subprocess.Popen([*args, *([str(go)] if go else [])], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(predicate, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.slow
def test_two_processes_starting_a_turn_at_once_never_interleave(make_harness: MakeHarness, provider, tmp_path: Path) -> None:
    provider.default = Reply(text="The answer.", delay=1.5)
    h = harness(make_harness, provider)
    go = tmp_path / "go"
    outs = [tmp_path / f"w{i}.json" for i in range(2)]
    procs = [spawn(h, provider, f"question {i}", out, 30, go) for i, out in enumerate(outs)]
    try:
        wait_for(lambda: all(Path(f"{o}.ready").exists() for o in outs))
        go.touch()
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err.decode()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = sorted((json.loads(o.read_text()) for o in outs), key=lambda r: not r["ok"])
    assert results[0] == {"ok": True, "answer": "The answer.", "pid": results[0]["pid"]}
    assert results[1]["ok"] is False and results[1]["code"] == "turn_in_progress"
    assert provider.calls == 1
    roles = [role for role, _ in history(h)]
    assert roles == ["user", "assistant"]  # one whole turn, nothing of the refused one
    h.close()


@pytest.mark.slow
def test_a_crashed_holder_blocks_the_session_only_until_its_lease_runs_out(make_harness: MakeHarness, provider, tmp_path: Path) -> None:
    never = threading.Event()
    provider.queue(Reply(text="never sent", gate=never), Reply(text="After the crash."))
    h = harness(make_harness, provider)
    crashing = spawn(h, provider, "question before the crash", tmp_path / "crash.json", 2.0, None)
    try:
        wait_for(lambda: provider.calls == 1)  # the holder waits for its provider
        crashing.send_signal(signal.SIGKILL)
        crashing.wait(timeout=30)
    finally:
        if crashing.poll() is None:
            crashing.kill()
        never.set()
    with pytest.raises(TurnInProgress):  # the dead holder's lease still runs
        asyncio.run(runner(h.bus).run(SID, "question after the crash"))
    started = time.monotonic()
    while True:
        try:
            result = asyncio.run(runner(h.bus).run(SID, "question after the crash"))
            break
        except TurnInProgress:
            assert time.monotonic() - started < 30, "the dead holder's lease never ran out"
            time.sleep(0.2)
    assert result.answer == "After the crash."
    # The crashed turn's user message stays (history is never rewritten); then the new turn.
    assert history(h) == [("user", "question before the crash"), ("user", "question after the crash"),
                          ("assistant", "After the crash.")]
    h.close()
