"""Policy replay (issue 43): the bench workload recorded once, then replayed under our
policy and the peers' default policies (``infrastructure/simulate.py``), side by side.

The workload (``infrastructure/demo/scenario.py``) is recorded as an agent host drives
it: the user's request appended, ``prepare_turn`` (where automatic compaction decides),
then the scripted steps. The store is ``memory://``, the summarizer extractive: no
network, deterministic figures. Runs in its own process and prints JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from itertools import islice
from typing import Any

from workload import MODEL, SYSTEM, TOOLS, relabel

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction import commands as c  # noqa: E402
from context_compaction.infrastructure.demo.scenario import iter_turns  # noqa: E402
from context_compaction.infrastructure.simulate import simulate  # noqa: E402

WINDOW = 64_000
SID = "bench"


def record(turns: int) -> Any:
    bus = bootstrap(Settings(database_url="memory://policies-bench", summarizer="extractive",
                             models={MODEL: {"token_limit": WINDOW}}))
    bus.dispatch(c.StartSession(session_id=SID, model=MODEL))
    prepare = c.PrepareTurn(session_id=SID, system_prompt=SYSTEM, tools=TOOLS)
    for n, turn in enumerate(islice(iter_turns(), turns)):
        messages = relabel(turn.messages(), f"b{n}")
        first = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        bus.dispatch(c.AppendMessages(session_id=SID, messages=messages[:first]))
        bus.dispatch(prepare)
        bus.dispatch(c.AppendMessages(session_id=SID, messages=messages[first:], model=MODEL))
    return bus


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args()
    started = time.perf_counter()
    bus = record(args.turns)
    result = simulate(bus, SID, system_prompt=SYSTEM, tools=TOOLS)
    bus.close()
    out = result.model_dump(mode="json")
    out.update(window=WINDOW, seconds=round(time.perf_counter() - started, 2))
    print(json.dumps(out))


def markdown(result: dict[str, Any]) -> list[str]:
    lines = ["| policy | compactions | summary calls (recorded reused) | tokens sent | prefix-cacheable | cost USD | "
             "facts kept |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        kept = "-" if r["facts_kept"] is None else f"{r['facts_kept']}/{r['facts_total']}"
        lines.append(f"| {r['policy']} | {r['compactions']} | {r['summary_calls']} ({r['recorded_summaries']}) | "
                     f"{r['tokens_sent']:,} | "
                     f"{r['cacheable_share']:.0%} | {r['cost_usd']:.4f} | {kept} |")
    lines += ["", f"{result['turns']} turns of the workload on {result['model']} (window "
              f"{result['window']:,}); recorded compactions {result['recorded_compactions']}, replayed under "
              f"our policy {result['rows'][0]['compactions']}. Sources:", ""]
    lines += [f"- {r['policy']}: {r['source']}" for r in result["rows"]]
    return lines


def targets(result: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    recorded = result["rows"][0]["compactions"]
    return [("policy replay reproduces the recorded compactions", recorded,
             f"= {result['recorded_compactions']}", recorded == result["recorded_compactions"])]


if __name__ == "__main__":
    main()
