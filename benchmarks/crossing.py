"""The turn that crosses the compaction threshold, with and without background compaction
(issue 17, ADR 0038); part of the ``staged`` section (``staged.py`` runs it).

The coding-agent workload goes through the ``TurnRunner``: a scripted chat provider
answers each step at once with the workload's assistant message and the tools return
its outputs, so a turn's time is the model's fixed delay per step, the library's own
work and any wait for a summary.
The summarizer is the section's fake LLM (a fixed delay per call); each chat step takes
a fixed delay too (``--chat-delay``). Per turn:

* normal: no compaction in the turn and no checkpoint committed since the previous one;
* crossing: without background compaction, a turn whose request went over the threshold
  and waited for its summary call; with it, the first turn after a background checkpoint
  committed (the turn that runs on the fresh checkpoint instead of waiting), and any
  turn that waited for a still-running background summary.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import deque
from typing import Any

from workload import SYSTEM, TOOLS, relabel

from context_compaction import Settings, bootstrap
from context_compaction.application.contracts import commands as c
from context_compaction.application.contracts.ports import ProviderReply
from context_compaction.application.agent.runner import TurnRunner
from context_compaction.infrastructure.demo.scenario import iter_turns


class ScriptedProvider:
    """The workload's assistant steps, in order, each after ``delay`` seconds (a model's
    answer takes time too: a background summary runs while the turns go on)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.steps: deque[dict[str, Any]] = deque()

    async def complete(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ProviderReply:
        await asyncio.sleep(self.delay)
        return ProviderReply(message=self.steps.popleft())


def crossing_latency(
    settings: Settings, summarizer: Any, turns: int, ratio: float | None, chat_delay: float
) -> dict[str, Any]:
    cc = settings.context_compaction.model_copy(update={"background_ratio": ratio})
    bus = bootstrap(settings.model_copy(update={"context_compaction": cc}), summarizer=summarizer)
    bus.dispatch(c.StartSession(session_id="x", model=next(iter(settings.models))))
    provider, outputs = ScriptedProvider(chat_delay), {}

    async def execute(call: dict[str, Any]) -> str:
        return outputs[call["id"]]

    runner = TurnRunner(bus, provider, execute)
    rows = asyncio.run(_turns(bus, runner, provider, outputs, turns))
    runner.close()
    bus.close()
    by_kind: dict[str, list[float]] = {}
    for elapsed, kind in rows:
        by_kind.setdefault(kind, []).append(elapsed)
    # The crossing turn: the one that waited for a summary call (without background
    # compaction), or the first one on a background checkpoint (with it).
    crossing = by_kind.get("summary in turn", []) + (by_kind.get("first on checkpoint", []) if ratio else [])
    normal_ms = statistics.median(by_kind["normal"])
    mean = statistics.mean(crossing) if crossing else float("nan")
    return {
        "background_ratio": ratio, "turns": turns, "chat_delay_s": chat_delay, "summary_calls": summarizer.calls,
        "normal_turns": len(by_kind["normal"]), "normal_ms": round(normal_ms, 1),
        "crossing_turns": len(crossing), "crossing_ms": round(mean, 1),
        "crossing_max_ms": round(max(crossing), 1) if crossing else None,
        "crossing_vs_normal": round(mean / normal_ms, 2),
        "summary_in_turn": len(by_kind.get("summary in turn", [])),
        "commit_during_turn_ms": _mean(by_kind.get("commit during turn", [])),
        "commit_during_turns": len(by_kind.get("commit during turn", [])),
    }


def _mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 1) if values else None


async def _turns(bus: Any, runner: TurnRunner, provider: ScriptedProvider, outputs: dict[str, str],
                 turns: int) -> list[tuple[float, str]]:
    """(milliseconds, kind) per turn; kinds: ``summary in turn`` (the turn made or waited
    for a summary), ``first on checkpoint`` (a checkpoint committed between the previous
    turn's start and this one's), ``commit during turn`` (a background checkpoint landed
    while it ran), ``normal``."""
    rows: list[tuple[float, str]] = []
    previous_start = 0
    for n, turn in enumerate(iter_turns(seed=17, big_output_chars=12_000)):
        if n == turns:
            break
        messages = [m for m in relabel(turn.messages(), f"t{n}") if not m.get("steering")]
        provider.steps.extend({k: v for k, v in m.items() if k != "turn_id"}
                              for m in messages if m["role"] == "assistant")
        outputs.update((m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool")
        at_start = _checkpoints(bus)
        start = time.perf_counter()
        result = await runner.run("x", messages[0], system_prompt=SYSTEM, tools=TOOLS,
                                  turn_id=messages[0]["turn_id"])
        elapsed = (time.perf_counter() - start) * 1000
        if result.compactions:
            kind = "summary in turn"
        elif _checkpoints(bus) > at_start:
            kind = "commit during turn"
        elif at_start > previous_start:
            kind = "first on checkpoint"
        else:
            kind = "normal"
        rows.append((elapsed, kind))
        previous_start = at_start
    return rows


def _checkpoints(bus: Any) -> int:
    return len(bus.dispatch(c.ListCheckpoints(session_id="x")).checkpoints)


def crossing_rows(r: dict[str, Any], delay: float) -> list[str]:
    rows = ["| background compaction | normal turn (median) | crossing turn (mean, max) | crossing / normal "
            "| summary calls | turns that waited for a summary |",
            "|---|---|---|---|---|---|"]
    for key in ("sync", "background"):
        v = r[key]
        label = "off" if v["background_ratio"] is None else f"on ({v['background_ratio']:.0%} of the threshold)"
        rows.append(f"| {label} | {v['normal_ms']} ms | {v['crossing_ms']} ms, {v['crossing_max_ms']} ms "
                    f"| {v['crossing_vs_normal']}× | {v['summary_calls']} | {v['summary_in_turn']} |")
    bg = r["background"]
    rows += ["", f"The turn that crosses the threshold, {bg['turns']} turns through the `TurnRunner`, fake "
             f"LLM summary {delay} s per call, each chat step {bg['chat_delay_s']} s (target with background: ≤ 1.3× a normal turn). With "
             f"background compaction the crossing turn is the first one on a background checkpoint; "
             f"{bg['commit_during_turns']} turns had a background checkpoint land while they ran "
             f"(mean {bg['commit_during_turn_ms']} ms)."]
    return rows
