"""Staged compaction (issue 17): summary calls and tokens sent, tool-result clearing on vs off.

The coding-agent workload (``infrastructure/demo/scenario.py``) is driven as an agent
host drives it: ``prepare_turn`` after the user's request and after every complete
tool group, the scripted replies appended in between. The summarizer is a fake LLM: a
fixed delay per call and a short summary (no network). Both variants run the same
turns on their own SQLite file, with a small window so compaction happens often:

* summary calls per 1,000 turns (target: clearing makes at least 50 % fewer);
* tokens sent: the sum of our estimate of every prepared request (what a provider
  would be sent over the whole session), and the time spent waiting for summaries;
* the turn that crosses the threshold (``crossing.py``): the same workload through the
  ``TurnRunner``, with background compaction (``background_ratio``) vs without, its
  latency against a normal turn.

Runs in its own process and prints JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from itertools import islice
from pathlib import Path
from typing import Any

from crossing import crossing_latency, crossing_rows
from workload import MODEL, SYSTEM, TOOLS, relabel

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction.application.contracts.ports import SummaryRequest, SummaryResult  # noqa: E402
from context_compaction.infrastructure.demo.scenario import iter_turns  # noqa: E402

WINDOW = 32_000
BACKGROUND_RATIO = 0.8
SUMMARY_WORDS = 500


class FakeLlmSummarizer:
    """A summary call that takes ``delay`` seconds and returns a short summary."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self.waited = 0.0
        self._lock = threading.Lock()

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        start = time.perf_counter()
        time.sleep(self.delay)
        with self._lock:
            self.calls += 1
            self.waited += time.perf_counter() - start
        entries = len(request.source.entries)
        # About as long as a real summary of this work (~1,000 tokens), within its limit.
        words = min(SUMMARY_WORDS, request.max_output_tokens // 2)
        text = (f"Summary {self.calls}: the agent worked on the payments-api refund fix over "
                f"{entries} earlier messages; tests were run, patches applied, decisions kept. "
                + " ".join(f"fact{i % 97}" for i in range(words)))
        return SummaryResult(text=text, provider_kind="fake-llm", model=request.model)


def settings(path: Path, clear: bool) -> Settings:
    return Settings(
        database_url=f"sqlite:///{path}",
        models={MODEL: {"token_limit": WINDOW}},
        context_compaction={
            "reserve_tokens": 4_096,
            "keep_recent_tokens": 6_000,
            "tool_results": {"clear": clear, "keep_recent_tokens": 4_000, "clear_at_least_tokens": 2_000},
        },
    )


def drive(path: Path, clear: bool, turns: int, delay: float) -> dict[str, Any]:
    summarizer = FakeLlmSummarizer(delay)
    bus = bootstrap(settings(path, clear), summarizer=summarizer)
    bus.dispatch_json({"type": "start_session", "session_id": "s", "model": MODEL})
    sent = requests = uncached = 0
    previous: list[dict[str, Any]] = []
    stages: dict[str, int] = {}
    start = time.perf_counter()
    for n, turn in enumerate(islice(iter_turns(seed=17, big_output_chars=12_000), turns)):
        messages = relabel(turn.messages(), f"t{n}")
        for index, message in enumerate(messages):
            bus.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [message]})
            following = messages[index + 1]["role"] if index + 1 < len(messages) else None
            if message["role"] == "assistant" or following == "tool":
                continue
            envelope = bus.dispatch_json({"type": "prepare_turn", "session_id": "s",
                                          "system_prompt": SYSTEM, "tools": TOOLS})
            assert envelope["ok"], envelope
            result = envelope["result"]
            sent += result["usage"]["estimated_tokens"]
            uncached += _new_tokens(bus, previous, result["messages"])
            previous = result["messages"]
            requests += 1
            if result["compaction"]:
                stage = result["compaction"]["stage"] or result["compaction"]["status"]
                stages[stage] = stages.get(stage, 0) + 1
    elapsed = time.perf_counter() - start
    bus.close()
    return {
        "clear": clear, "turns": turns, "requests": requests,
        "summary_calls": summarizer.calls,
        "summary_calls_per_1000_turns": round(summarizer.calls * 1000 / turns, 1),
        "tokens_sent": sent, "tokens_after_shared_prefix": uncached, "summary_wait_s": round(summarizer.waited, 2),
        "stages": stages, "elapsed_s": round(elapsed, 2),
    }


def _new_tokens(bus: Any, previous: list[dict[str, Any]], messages: list[dict[str, Any]]) -> int:
    """Tokens of ``messages`` after the prefix they share with the previous request: what
    a provider's prefix cache could not serve (an upper bound on the uncached part)."""
    shared = 0
    for old, new in zip(previous, messages):
        if old != new:
            break
        shared += 1
    tokens = bus.services.tokens
    encoding = tokens.encoding_for(MODEL)
    return sum(tokens.count_message(m, encoding) for m in messages[shared:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per fake summary call")
    parser.add_argument("--crossing-turns", type=int, default=120, help="turns of the crossing-turn runs")
    parser.add_argument("--chat-delay", type=float, default=0.1, help="seconds per scripted chat step")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxc-bench-staged-"))
    try:
        off = drive(work / "off.db", False, args.turns, args.delay)
        on = drive(work / "on.db", True, args.turns, args.delay)
        crossing = {
            key: crossing_latency(settings(work / f"{key}.db", False), FakeLlmSummarizer(args.delay),
                                  args.crossing_turns, ratio, args.chat_delay)
            for key, ratio in (("sync", None), ("background", BACKGROUND_RATIO))
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fewer = 1 - on["summary_calls"] / off["summary_calls"] if off["summary_calls"] else 0.0
    report = {"window": WINDOW, "delay_s": args.delay, "off": off, "on": on,
              "fewer_summary_calls": round(fewer, 3),
              "tokens_sent_ratio": round(on["tokens_sent"] / off["tokens_sent"], 3), "crossing": crossing}
    print(json.dumps(report))
    return 0


def targets(r: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    out = [("staged: fewer summary calls with clearing", r["fewer_summary_calls"], ">= 0.5",
            r["fewer_summary_calls"] >= 0.5)]
    if "crossing" in r:
        ratio = r["crossing"]["background"]["crossing_vs_normal"]
        out.append(("staged: crossing turn with background compaction / normal turn", ratio, "<= 1.3",
                    ratio <= 1.3))
    return out


def markdown(r: dict[str, Any]) -> list[str]:
    rows = ["| tool-result clearing | summary calls per 1,000 turns | tokens sent over the session "
            "| of which after the previous request's prefix | waiting for summaries | compactions by stage |",
            "|---|---|---|---|---|---|"]
    for key in ("off", "on"):
        v = r[key]
        stages = ", ".join(f"{k} {n}" for k, n in sorted(v["stages"].items())) or "none"
        rows.append(f"| {key} | {v['summary_calls_per_1000_turns']:,} | {v['tokens_sent']:,} "
                    f"| {v['tokens_after_shared_prefix']:,} "
                    f"| {v['summary_wait_s']} s | {stages} |")
    rows += ["", f"{r['off']['turns']} turns, window {r['window']:,} tokens, fake LLM summary "
             f"{r['delay_s']} s per call: clearing makes {r['fewer_summary_calls']:.0%} fewer summary "
             f"calls and sends {r['tokens_sent_ratio']:.2f}× the tokens."]
    if "crossing" in r:
        rows += ["", *crossing_rows(r["crossing"], r["delay_s"])]
    return rows


if __name__ == "__main__":
    sys.exit(main())
