"""One bus, several threads on one session: the in-memory context is never shared
half-extended (issue 13, item 1).

Appenders extend the session and read it back (each read extends the cached context),
while another thread compacts it and another prepares turns: every command must end in
a contract result, never ``internal_error`` (a KeyError when compaction read token
counts of records a reader had just added).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from helpers import Harness, assistant, ok, tool, user

SESSION = "race"
#: Codes a command may legitimately end with while others change the session.
EXPECTED = {"stale_candidate", "summary_failed", "turn_in_progress"}


def _turn(tag: str) -> list[dict[str, Any]]:
    call = f"{tag}-call"
    return [
        user(f"{tag}: please look at src/{tag}.py and tell me what port it uses", turn_id=tag),
        assistant(None, calls=[(call, "read_file", '{"path": "src/x.py"}')], turn_id=tag),
        tool(call, f"{tag} contents " + "lorem ipsum " * 30),
        assistant(f"{tag}: it listens on port 8080", turn_id=tag),
    ]


def _run(harness: Harness, seconds: float, at_least: int = 0) -> tuple[Counter[str], int]:
    """Run for ``seconds``, and on until ``at_least`` operations and 5 compactions
    (a loaded machine gets more time, not a weaker test), for 60 s at most."""
    bus = harness.bus
    ok(bus.dispatch_json({"type": "start_session", "session_id": SESSION, "model": "gpt-4o-mini"}))
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    started = time.monotonic()
    failures: list[dict[str, Any]] = []

    def running() -> bool:
        elapsed = time.monotonic() - started
        with lock:
            enough = sum(outcomes.values()) >= at_least and outcomes["compact:ok"] >= 5
        return elapsed < seconds or (not enough and elapsed < 60)

    def record(kind: str, envelope: dict[str, Any]) -> None:
        code = "ok" if envelope["ok"] else envelope["error"]["code"]
        with lock:
            outcomes[f"{kind}:{code}"] += 1
            if code != "ok" and code not in EXPECTED:
                failures.append(envelope)

    def appender(worker: int) -> None:
        i = 0
        while running():
            i += 1
            record("append", bus.dispatch_json({
                "type": "append_messages", "session_id": SESSION, "messages": _turn(f"w{worker}i{i}")}))
            record("usage", bus.dispatch_json({"type": "get_context_usage", "session_id": SESSION}))
            record("projection", bus.dispatch_json({"type": "get_projection", "session_id": SESSION}))

    def compacter() -> None:
        while running():
            record("compact", bus.dispatch_json({"type": "compact", "session_id": SESSION}))

    def preparer() -> None:
        while running():
            record("prepare", bus.dispatch_json({
                "type": "prepare_turn", "session_id": SESSION, "system_prompt": "You are terse.",
                "tools": []}))

    threads = [threading.Thread(target=appender, args=(n,)) for n in range(2)]
    threads += [threading.Thread(target=compacter), threading.Thread(target=preparer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, (failures[:3], outcomes)
    return outcomes, sum(outcomes.values())


def test_compaction_beside_appends_and_reads_on_one_bus_never_fails_internally(
    make_harness: Any, record_property: Any
) -> None:
    # A small keep budget so that nearly every manual compaction has something to do.
    harness = make_harness("main", context_compaction={"keep_recent_tokens": 300})
    outcomes, total = _run(harness, seconds=3.0, at_least=250)
    compactions = outcomes["compact:ok"]
    assert total >= 200, outcomes  # a meaningful number of concurrent operations
    assert compactions >= 5, outcomes  # compaction really ran beside the others
    assert outcomes["prepare:ok"] >= 5, outcomes
    record_property("operations", total)
    record_property("compactions_committed", compactions)
    print(f"\nFIGURE context race[{'postgres' if harness.is_postgres else 'sqlite'}]: {total} operations "
          f"on one session, {compactions} compactions, 0 internal_error: {dict(outcomes)}")
    # What the threads saw is what is stored: the projection equals a replay.
    projection = ok(harness.do({"type": "get_projection", "session_id": SESSION}))
    replay = ok(harness.do({"type": "replay_session", "session_id": SESSION}))
    assert replay["projection"]["messages"] == projection["messages"]


def test_a_host_changing_the_request_it_was_given_changes_nothing_cached(harness: Harness) -> None:
    """Typed results are the caller's own: marking a request for prompt caching (or
    editing it before sending) must not reach the projection later commands get."""
    from context_compaction import commands

    bus = harness.bus
    ok(bus.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o-mini"}))
    ok(bus.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [
        *_turn("t1"), user([{"type": "text", "text": "and now?"}], turn_id="t2")]}))
    before = ok(bus.dispatch_json({"type": "get_projection", "session_id": "s"}))["messages"]
    for request in (bus.dispatch(commands.PrepareTurn(session_id="s", system_prompt="terse", tools=[])).messages,
                    bus.dispatch(commands.GetProjection(session_id="s")).messages):
        for message in request:
            if isinstance(message["content"], list):  # (in place: Anthropic's cache marks)
                message["content"][0]["cache_control"] = {"type": "ephemeral"}
                message["content"].append({"type": "text", "text": "added"})
            else:
                message["content"] = "changed by the host"
            message["cache_control"] = {"type": "ephemeral"}
            for call in message.get("tool_calls") or []:
                call["function"]["arguments"] = "{}changed"
        request.append({"role": "user", "content": "appended by the host"})
    assert ok(bus.dispatch_json({"type": "get_projection", "session_id": "s"}))["messages"] == before
    replay = ok(bus.dispatch_json({"type": "replay_session", "session_id": "s"}))
    assert replay["projection"]["messages"] == before
