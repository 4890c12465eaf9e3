"""Incremental accounting (seed 003 rule 6): one more turn costs O(new messages), not O(N).

The one deliberately timed test of the suite: it compares ratios, not absolute times.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from context_compaction import commands
from context_compaction.infrastructure.tokens import TiktokenCounter
from helpers import Harness


class CountingTokens(TiktokenCounter):
    """The real counter, recording which messages it tokenized."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[int] = []

    def count_record(self, record, encoding):  # type: ignore[override]
        self.records.append(record["seq"])
        return super().count_record(record, encoding)


def turn(n: int, subject: int | None = None) -> list[dict]:
    """Turn ``n``, about handler and file ``subject`` (``n`` unless given)."""
    f = n if subject is None else subject
    body = f"def handler_{f}(event):\n    return process(event, retries={n % 7})\n" * 12
    return [
        {"role": "user", "content": f"Turn {n}: please refactor handler_{f} in src/h{f}.py", "turn_id": f"t{n}"},
        {"role": "assistant", "content": None, "turn_id": f"t{n}",
         "tool_calls": [{"id": f"c{n}", "name": "read_file", "arguments": f'{{"path": "src/h{f}.py"}}'}]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": body, "turn_id": f"t{n}"},
        {"role": "assistant", "content": f"Refactored handler_{f}.", "turn_id": f"t{n}"},
    ]


def session_of(tmp_path: Path, messages: int) -> tuple[Harness, CountingTokens]:
    tokens = CountingTokens()
    h = Harness(tmp_path / f"s{messages}.db", adapters={"tokens": tokens}, summarizer="extractive",
                context_compaction={"enabled": False})
    bus = h.bus
    bus.dispatch(commands.StartSession(session_id="s", model="gpt-4o", agent_token_limit=None))
    batch: list[dict] = []
    for n in range(messages // 4):
        batch += turn(n)
        if len(batch) >= 200:
            bus.dispatch(commands.AppendMessages(session_id="s", messages=batch))
            batch = []
    if batch:
        bus.dispatch(commands.AppendMessages(session_id="s", messages=batch))
    bus.dispatch(commands.GetContextUsage(session_id="s"))  # the first budget counts everything once
    return h, tokens


def per_turn_budget_seconds(h: Harness, start: int, rounds: int = 9) -> list[float]:
    times = []
    for k in range(rounds):
        h.bus.dispatch(commands.AppendMessages(session_id="s", messages=turn(start + k)))
        t0 = time.perf_counter()
        h.bus.dispatch(commands.GetContextUsage(session_id="s", system_prompt="You are a careful agent."))
        times.append(time.perf_counter() - t0)
    return times


def test_budgeting_one_more_turn_tokenizes_only_that_turn(tmp_path: Path) -> None:
    h, tokens = session_of(tmp_path, 400)
    assert sorted(tokens.records) == list(range(1, 401))  # each message once
    tokens.records.clear()
    h.bus.dispatch(commands.AppendMessages(session_id="s", messages=turn(1000)))
    h.bus.dispatch(commands.GetContextUsage(session_id="s"))
    h.bus.dispatch(commands.GetContextUsage(session_id="s"))
    assert tokens.records == [401, 402, 403, 404]
    usage = h.bus.dispatch(commands.GetContextUsage(session_id="s"))
    tokens.records.clear()
    h.reopen()  # a restart reads the cached counts instead of tokenizing again
    cached = h.count("rm_token_counts")
    assert cached >= 404, f"only {cached} counts cached for 404 messages"
    assert h.bus.dispatch(commands.GetContextUsage(session_id="s")) == usage
    assert tokens.records == [], f"the restart tokenized {len(tokens.records)} messages again"
    h.close()


def quartile(values: list[float]) -> float:
    return statistics.quantiles(values, n=4)[0]


def test_per_turn_budget_cost_is_flat_from_400_to_4000_messages(tmp_path: Path) -> None:
    small, _ = session_of(tmp_path, 400)
    large, _ = session_of(tmp_path, 4000)
    # Interleave the measurements so machine noise hits both sizes alike.
    small_times, large_times = [], []
    for r in range(3):
        small_times += per_turn_budget_seconds(small, 10_000 + r * 100, rounds=5)
        large_times += per_turn_budget_seconds(large, 10_000 + r * 100, rounds=5)
    # The lower quartile, as in the JSON-path test below: under ``-n 2`` a neighbour slowed
    # enough turns of one size for the medians to read 2.04 (alone: ~1.0).
    ratio = quartile(large_times) / quartile(small_times)
    assert ratio < 1.8, f"per-turn budget at 4,000 messages is {ratio:.2f}x the 400-message cost"
    small.close()
    large.close()


# ------------------------------------------------------------------ JSON path
# The compacted sessions' turns cycle through 50 handlers and files. With one per turn the
# summary's must-keep ledger grew with N (9,600 characters at 400 messages, 29,500 at
# 1,200), so the large session's requests were not the same size as the small one's, and
# its one compaction merged 1,000 distinct requests pairwise (~23 s of this test's ~30 s,
# ADR 0104). Cycled, the summary is ~6,400 characters at 400, 1,200 and 4,000 messages.
SUBJECTS = 50


def cycled_turn(n: int) -> list[dict]:
    return turn(n, n % SUBJECTS)


def compacted_session(tmp_path: Path, messages: int) -> Harness:
    """``messages`` fixture messages, then one compaction keeping ~2k tokens: the
    projection (and so every prepare_turn result) is the same size at any N."""
    h = Harness(tmp_path / f"j{messages}.db", summarizer="extractive",
                context_compaction={"enabled": False, "keep_recent_tokens": 2000})
    h.bus.dispatch(commands.StartSession(session_id="s", model="gpt-4o", agent_token_limit=None))
    for start in range(0, messages // 4, 50):
        batch = [m for n in range(start, min(start + 50, messages // 4)) for m in cycled_turn(n)]
        h.bus.dispatch(commands.AppendMessages(session_id="s", messages=batch))
    outcome = h.do({"type": "compact", "session_id": "s"})
    assert outcome["ok"] and outcome["result"]["status"] == "compacted", outcome
    return h


def json_turn_seconds(h: Harness, start: int, rounds: int) -> tuple[list[float], list[float]]:
    """Turns through the JSON path as a service drives it (the HTTP edge's
    ``dispatch_json_reply``: JSON text in, response bytes out): seconds of each
    ``append_messages`` and of each ``prepare_turn``."""
    appends, prepares = [], []
    prepare = json.dumps({"type": "prepare_turn", "session_id": "s", "system_prompt": "You are a careful agent."})
    for k in range(rounds):
        append = json.dumps({"type": "append_messages", "session_id": "s", "messages": cycled_turn(start + k)})
        t0 = time.perf_counter()
        appended = h.bus.dispatch_json_bytes(append)
        t1 = time.perf_counter()
        request = h.bus.dispatch_json_bytes(prepare)
        t2 = time.perf_counter()
        appends.append(t1 - t0)
        prepares.append(t2 - t1)
        assert appended.startswith(b'{"ok":true') and request.startswith(b'{"ok":true'), (appended[:300], request[:300])
    return appends, prepares


def test_json_path_append_and_prepare_turn_are_flat_from_400_to_4000_messages(tmp_path: Path) -> None:
    """Issue 18 (d): each JSON command's cost at 4,000 messages over its cost at 400,
    on compacted sessions whose requests are the same size (ratios, not times)."""
    small = compacted_session(tmp_path, 400)
    large = compacted_session(tmp_path, 4000)
    projections = [h.do({"type": "get_projection", "session_id": "s"})["result"] for h in (small, large)]
    sizes = [len(p["messages"]) for p in projections]
    assert sizes[0] == sizes[1] and sizes[0] < 100, sizes  # the same bounded tail at both sizes
    chars = [len(json.dumps(p)) for p in projections]
    assert chars[1] < 1.1 * chars[0], chars  # and as long: the summary does not grow with N either
    json_turn_seconds(small, 20_000, 2)  # warm: handlers, schemas, caches
    json_turn_seconds(large, 20_000, 2)
    times: dict[str, list[float]] = {"small append": [], "small prepare": [], "large append": [],
                                     "large prepare": []}
    for r in range(15):  # interleaved turn by turn, so machine noise hits both sizes alike
        for name, h in (("small", small), ("large", large)):
            appends, prepares = json_turn_seconds(h, 30_000 + r * 100, 1)
            times[f"{name} append"] += appends
            times[f"{name} prepare"] += prepares
    for kind in ("append", "prepare"):
        # The lower quartile: a test worker beside this one (``-n 2``) slows some turns of
        # either size; a cost that grows with N slows all of the large ones.
        ratio = quartile(times[f"large {kind}"]) / quartile(times[f"small {kind}"])
        assert ratio < 1.8, f"a JSON {kind} at 4,000 messages costs {ratio:.2f}x the 400-message one"
    small.close()
    large.close()
