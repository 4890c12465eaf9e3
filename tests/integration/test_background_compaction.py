"""Background compaction (issue 17, ADR 0038): the TurnRunner summarizes before the threshold.

The summary goes through litellm over real HTTP to the local fake provider, with a
delayed (or gated) reply, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from context_compaction.application.state.background import BackgroundJob
from context_compaction.application.compacting.background_compaction import start_background_compaction
from context_compaction.application.contracts import commands as c
from context_compaction.application.agent.runner import TurnResult, TurnRunner
from context_compaction.domain.summary import HEADINGS
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.providers import LiteLLMChatProvider
from backends import MakeHarness
from fakeprovider import FakeProvider, Recorded, Reply
from helpers import FAKE_MODEL, Harness, attempt_count, llm_settings, ok

SID = "s"
SYSTEM = "You are an agent."
SUMMARY = "\n\n".join(f"## {h}\nNone." for h in HEADINGS).replace(
    "## Objective\nNone.", "## Objective\nFix the flaky refund test in /srv/payments-api."
)
THRESHOLD = 24_000  # token_limit 32,000 - reserve 8,000
RATIO = 0.6


def is_summary(request: Recorded) -> bool:
    """The summarizer's request (a chat step of the runner sends no temperature)."""
    return request.body.get("temperature") is not None


class Route:
    """Summary requests get ``SUMMARY`` after ``delay`` (or once ``gate`` is set, or a 500);
    chat steps answer at once."""

    def __init__(self, provider: FakeProvider, delay: float = 0.3) -> None:
        self.provider = provider
        self.delay = delay
        self.gate: threading.Event | None = None
        self.fail = False
        self.bus: Any = None
        provider.default = self  # type: ignore[assignment]

    def __call__(self, request: Recorded) -> Reply:
        if is_summary(request):
            if self.fail:
                return Reply(status=500)
            return Reply(text=SUMMARY, delay=self.delay, gate=self.gate)
        return Reply(text="Done.", prompt_tokens=self.measured(request.messages))

    def measured(self, messages: list[dict[str, Any]]) -> int:
        """What a provider would count: our own count (so usage stays comparable)."""
        tokens = self.bus.services.tokens
        encoding = tokens.encoding_for(FAKE_MODEL)
        return tokens.request_overhead + sum(tokens.count_message(m, encoding) for m in messages)

    def release(self) -> None:
        if self.gate is not None:
            self.gate.set()

    def summaries(self) -> int:
        return sum(1 for r in self.provider.requests if is_summary(r))


def make(make_harness: MakeHarness, route: Route, ratio: float | None = RATIO) -> Harness:
    provider = route.provider
    h = make_harness("bg", **llm_settings(provider.base_url), context_compaction={
        "keep_recent_tokens": 2_000, "reserve_tokens": 8_000, "background_ratio": ratio})
    route.bus = h.bus
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    assert fill(h, 0.65 * THRESHOLD) <= THRESHOLD, "the fixture must stay under the threshold"
    return h


def usage(h: Harness) -> dict[str, Any]:
    return ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": SYSTEM}))


def fill(h: Harness, at_least: float, seed: int = 0) -> int:
    """Append whole coding turns until the context uses ``at_least`` tokens; returns them."""
    turns = iter(coding_session(40, big_output_chars=2_000))
    used = usage(h)["used_tokens"]
    while used < at_least:
        messages = next(turns).messages()
        for m in messages:
            m["turn_id"] = f"{seed}-{m.get('turn_id', 'x')}"
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": messages}))
        used = usage(h)["used_tokens"]
    return used


def runner(h: Harness) -> TurnRunner:
    return TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), _no_tools)


async def _no_tools(call: dict[str, Any]) -> str:
    raise AssertionError("no tool is called in these turns")


def turn(r: TurnRunner, text: str = "Go on.") -> TurnResult:
    return asyncio.run(r.run(SID, text, system_prompt=SYSTEM))


def job(h: Harness) -> BackgroundJob:
    found = h.bus.services.turns.background.running(SID)
    assert found is not None, "a background summary should be running"
    return found


def checkpoints(h: Harness) -> list[dict[str, Any]]:
    return ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]


def attempts(h: Harness) -> list[dict[str, Any]]:
    return ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


@pytest.fixture
def route(provider: FakeProvider):
    """Torn down before the harness: a gated summary is released before the bus closes."""
    found = Route(provider)
    yield found
    found.release()


# ------------------------------------------------------------------- tests
def test_background_commit_keeps_the_messages_appended_during_the_summary(make_harness: MakeHarness, route: Route) -> None:
    route.gate = threading.Event()
    h = make(make_harness, route)
    result = turn(runner(h))
    assert result.background_started and result.compactions == []
    running = job(h)
    wait_for(lambda: route.summaries() == 1)  # the summary call is in flight
    late = ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        {"role": "user", "content": "Meanwhile: the refund limit is 500 EUR."},
        {"role": "assistant", "content": "Noted."}]}))["seqs"]
    route.gate.set()
    assert running.done.wait(10)
    [checkpoint] = checkpoints(h)
    assert checkpoint["trigger_reason"] == "auto" and checkpoint["first_retained_seq"] < late[0]
    request = ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM}))
    assert request["checkpoint_id"] == checkpoint["checkpoint_id"]
    assert [m["content"] for m in request["messages"][-2:]] == ["Meanwhile: the refund limit is 500 EUR.", "Noted."]
    assert attempts(h)[0]["outcome"] == "compacted" and attempts(h)[0]["reason"] == "auto"


@pytest.mark.parametrize("kind", ["clear", "rewind", "delete"])
def test_an_invalidation_during_the_background_summary_makes_it_stale(make_harness: MakeHarness, route: Route, kind) -> None:
    route.gate = threading.Event()
    h = make(make_harness, route)
    turn(runner(h))
    running = job(h)
    wait_for(lambda: route.summaries() == 1)
    command: dict[str, Any] = {"type": "invalidate_history", "session_id": SID, "kind": kind}
    if kind == "rewind":
        command["to_seq"] = 3
    if kind == "delete":
        command["seqs"] = [1]
    ok(h.do(command))
    route.gate.set()
    assert running.done.wait(10)
    assert checkpoints(h) == []
    newest = attempts(h)[0]
    assert newest["outcome"] == "stale_candidate" and newest["reason"] == "auto"


def test_only_one_background_summary_runs_per_session(make_harness: MakeHarness, route: Route) -> None:
    route.gate = threading.Event()
    h = make(make_harness, route)
    r = runner(h)
    first = turn(r)
    running = job(h)
    second = turn(r, "And now?")  # still under the threshold: no wait, no second attempt
    assert first.background_started and second.background_started
    prepare = c.PrepareTurn(session_id=SID, system_prompt=SYSTEM)
    assert start_background_compaction(h.bus.services, prepare) is False
    assert job(h) is running
    route.gate.set()
    assert running.done.wait(10)
    time.sleep(0.2)  # a second attempt, had one started, would have asked by now
    assert route.summaries() == 1 and len(checkpoints(h)) == 1


def test_closing_the_runner_cancels_its_background_summary_without_a_commit(make_harness: MakeHarness, route: Route) -> None:
    route.gate = threading.Event()
    h = make(make_harness, route)
    r = runner(h)
    turn(r)
    running = job(h)
    wait_for(lambda: route.summaries() == 1)  # the summary call is in flight
    before = attempt_count(h.bus)
    threading.Timer(0.3, route.gate.set).start()  # its answer comes while close() waits
    r.close()
    assert running.done.is_set() and not running.thread.is_alive()  # joined: no thread left
    assert checkpoints(h) == [] and attempt_count(h.bus) == before  # nothing committed or recorded
    assert h.bus.services.turns.background.running(SID) is None
    # The bus still works, and a new runner may start a new attempt.
    turn(runner(h))
    wait_for(lambda: len(checkpoints(h)) == 1)


def test_closing_the_bus_cancels_the_background_summary_and_refuses_new_ones(make_harness: MakeHarness, route: Route) -> None:
    route.gate = threading.Event()
    h = make(make_harness, route)
    turn(runner(h))
    running = job(h)
    wait_for(lambda: route.summaries() == 1)
    background = h.bus.services.turns.background
    threading.Timer(0.3, route.gate.set).start()
    h.bus.close()
    assert not running.thread.is_alive() and background.running(SID) is None
    assert background.start(SID, lambda job: None) is None  # closed: nothing new starts
    h.reopen()
    assert checkpoints(h) == []


@pytest.mark.parametrize("background", [False, True])
def test_the_crossing_turn_uses_the_background_checkpoint_without_a_summary_call(
    make_harness: MakeHarness, route: Route, background: bool
) -> None:
    h = make(make_harness, route, ratio=RATIO if background else None)
    r = runner(h)
    first = turn(r)
    assert first.background_started is background
    if background:
        wait_for(lambda: len(checkpoints(h)) == 1)
    grown = usage(h)["used_tokens"]
    fill(h, grown + THRESHOLD * 0.4, seed=1)  # over the threshold without a checkpoint
    summaries = route.summaries()
    crossing = turn(r, "Next step?")
    if background:  # the fresh checkpoint makes the turn fit: no summary call in it
        assert crossing.compactions == [] and summaries == 1
        # Any summary asked for during the turn is the next background one, not the turn's
        # (its thread may reach the provider after the turn returned: wait for it).
        wait_for(lambda: route.summaries() - summaries == int(crossing.background_started))
        assert route.summaries() - summaries == int(crossing.background_started)
    else:  # without it, the turn waits for its own summary call
        assert [x.trigger_reason for x in crossing.compactions] == ["auto"]
        assert route.summaries() == summaries + 1


def test_the_crossing_turn_waits_for_a_running_background_summary_instead_of_a_second(
    make_harness: MakeHarness, route: Route
) -> None:
    route.gate = threading.Event()
    h = make(make_harness, route)
    r = runner(h)
    turn(r)
    running = job(h)
    fill(h, THRESHOLD * 1.1, seed=1)
    threading.Timer(0.3, route.gate.set).start()
    crossing = turn(r, "Next step?")
    assert running.done.is_set()
    assert [x.checkpoint_id for x in crossing.compactions] == [checkpoints(h)[0]["checkpoint_id"]]
    assert route.summaries() == 1


def test_a_failed_background_summary_is_a_failed_automatic_attempt(make_harness: MakeHarness, route: Route) -> None:
    route.fail = True
    h = make(make_harness, route)
    turn(runner(h))
    wait_for(lambda: h.bus.services.turns.background.running(SID) is None and attempts(h) != [])
    newest = attempts(h)[0]
    assert (newest["outcome"], newest["reason"]) == ("summary_failed", "auto")
    assert usage(h)["compaction_breaker"]["failures_in_a_row"] == 1

