"""The framework integrations' per-turn cost against each framework's own memory (issue 40).

Per turn at N messages of history, with each framework's test model answering at once
(so what is timed is the framework plus its memory, never a provider):

- Agents SDK: what the Runner asks of a session per run — ``get_items()`` then
  ``add_items(the run's 4 items)`` — on ``CompactingSession`` (SQLite file) against the
  SDK's ``SQLiteSession`` (SQLite file).
- LangGraph: ``create_agent(...).invoke`` of one question (a tool call, its result, an
  answer) with ``CompactionMiddleware`` and no checkpointer (our log is the memory)
  against the same agent with the SDK's ``InMemorySaver`` holding the thread.
- pydantic-ai: ``agent.run_sync`` of one question with ``CompactionProcessor`` (our log is
  the memory) against the same agent given the whole history as a plain
  ``message_history`` list.

Targets (issue 40): at 1,000 messages ours within 1.5x of theirs; at 10,000 ours faster.

Run alone: ``python benchmarks/integrations.py --sizes 1000,10000 --turns 20`` (prints JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MODEL = "gpt-4o"
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def text(n: int, words: int) -> str:
    return f"item {n}: " + " ".join(WORDS[(n + i) % len(WORDS)] for i in range(words))


def _bus(path: Path) -> Any:
    from context_compaction import Settings, bootstrap

    return bootstrap(Settings(database_url=f"sqlite:///{path}", summarizer="extractive"))


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


# ---------------------------------------------------------------- Agents SDK
def _items(n: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "question " + text(n, 25)},
            {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "lookup",
             "arguments": json.dumps({"n": n}), "status": "completed"},
            {"type": "function_call_output", "call_id": f"call_{n}", "output": "record " + text(n, 60)},
            {"type": "message", "role": "assistant", "id": f"msg_{n}", "status": "completed",
             "content": [{"type": "output_text", "text": "answer " + text(n, 20), "annotations": []}]}]


async def _agents(size: int, turns: int, work: Path) -> dict[str, Any]:
    from agents import SQLiteSession

    from context_compaction.integrations.openai_agents import CompactingSession

    prefill = [i for n in range(size // 4) for i in _items(n)]
    theirs = SQLiteSession("s", db_path=str(work / f"agents-theirs-{size}.db"))
    await theirs.add_items(prefill)
    bus = _bus(work / f"agents-ours-{size}.db")
    ours = CompactingSession(bus, "s", model=MODEL)
    for start in range(0, len(prefill), 800):
        await ours.add_items(prefill[start:start + 800])
    await ours.get_items()  # the first view compacts the prefilled history (not timed)
    out: dict[str, list[float]] = {"ours": [], "theirs": []}
    for k in range(turns):  # interleaved, so both see the same machine minutes
        n = size // 4 + k
        for name, session in (("theirs", theirs), ("ours", ours)):
            t0 = time.perf_counter()
            await session.get_items()
            await session.add_items(_items(n))
            out[name].append(time.perf_counter() - t0)
    bus.close()
    theirs.close()
    return {k: _median_ms(v) for k, v in out.items()}


# ---------------------------------------------------------------- LangGraph
def _langgraph(size: int, turns: int, work: Path) -> dict[str, Any]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.checkpoint.memory import InMemorySaver

    from context_compaction.integrations.langchain import CompactionMiddleware, message_key, to_chat

    class Instant(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            n = len(messages)
            if isinstance(messages[-1], HumanMessage):
                reply = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"n": n}, "id": f"c{n}"}])
            else:
                reply = AIMessage(content="answer " + text(n, 20))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    def lookup(n: int) -> str:
        """Look a record up."""
        return "record " + text(n, 60)

    prefill: list[Any] = []
    for n in range(size // 4):
        prefill += [HumanMessage(content="question " + text(n, 25), id=f"h{n}"),
                    AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"n": n}, "id": f"p{n}"}],
                              id=f"a{n}"),
                    ToolMessage(content="record " + text(n, 60), tool_call_id=f"p{n}", id=f"t{n}"),
                    AIMessage(content="answer " + text(n, 20), id=f"b{n}")]
    theirs = create_agent(Instant(responses=[]), [lookup], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "s"}}
    theirs.update_state(config, {"messages": prefill})
    bus = _bus(work / f"langgraph-{size}.db")
    middleware = CompactionMiddleware(bus, model=MODEL, session_id="s")
    link = middleware.link("s")
    for start in range(0, len(prefill), 800):
        link.append([(message_key(m), to_chat(m)) for m in prefill[start:start + 800]])
    link.prepare()  # compacts the prefilled history (not timed)
    ours = create_agent(Instant(responses=[]), [lookup], middleware=[middleware])
    out: dict[str, list[float]] = {"ours": [], "theirs": []}
    for k in range(turns):
        question = {"messages": [HumanMessage(content="question " + text(size + k, 25))]}
        t0 = time.perf_counter()
        theirs.invoke(question, config)
        out["theirs"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours.invoke(question)
        out["ours"].append(time.perf_counter() - t0)
    bus.close()
    return {k: _median_ms(v) for k, v in out.items()}


# ---------------------------------------------------------------- pydantic-ai
def _pydantic_ai(size: int, turns: int, work: Path) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from context_compaction.integrations.pydantic_ai import CompactionProcessor, to_chat

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        n = len(messages)
        if messages[-1].parts[-1].part_kind == "tool-return":
            return ModelResponse(parts=[TextPart("answer " + text(n, 20))])
        return ModelResponse(parts=[ToolCallPart("lookup", {"n": n}, tool_call_id=f"c{n}")])

    def agent(capabilities: list[Any]) -> Agent:
        made = Agent(FunctionModel(respond), capabilities=capabilities)

        @made.tool_plain
        def lookup(n: int) -> str:
            """Look a record up."""
            return "record " + text(n, 60)

        return made

    past: list[Any] = []
    for n in range(size // 4):
        past += [ModelRequest(parts=[UserPromptPart("question " + text(n, 25))]),
                 ModelResponse(parts=[ToolCallPart("lookup", {"n": n}, tool_call_id=f"p{n}")]),
                 ModelRequest(parts=[ToolReturnPart("lookup", "record " + text(n, 60), tool_call_id=f"p{n}")]),
                 ModelResponse(parts=[TextPart("answer " + text(n, 20))])]
    bus = _bus(work / f"pydantic-ai-{size}.db")
    processor = CompactionProcessor(bus, session_id="s", model=MODEL)
    for start in range(0, len(past), 800):
        processor.link.append(to_chat(past[start:start + 800]))
    processor.link.prepare()  # compacts the prefilled history (not timed)
    ours, theirs = agent([processor]), agent([])
    out: dict[str, list[float]] = {"ours": [], "theirs": []}
    for k in range(turns):
        prompt = "question " + text(size + k, 25)
        t0 = time.perf_counter()
        past = theirs.run_sync(prompt, message_history=past).all_messages()
        out["theirs"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours.run_sync(prompt)
        out["ours"].append(time.perf_counter() - t0)
    bus.close()
    return {k: _median_ms(v) for k, v in out.items()}


def measure(sizes: list[int], turns: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="ctxc-integrations-"))
    result: dict[str, Any] = {"turns": turns, "sizes": {}}
    for size in sizes:
        row: dict[str, Any] = {}
        for name, fn in (("openai_agents", lambda: asyncio.run(_agents(size, turns, work))),
                         ("langgraph", lambda: _langgraph(size, turns, work)),
                         ("pydantic_ai", lambda: _pydantic_ai(size, turns, work))):
            try:
                row[name] = fn()
            except ImportError as exc:  # the framework is not installed in this venv
                row[name] = {"skipped": str(exc)}
            print(f"integrations {name} at {size}: {row[name]}", file=sys.stderr, flush=True)
        result["sizes"][str(size)] = row
    return result


def markdown(result: dict[str, Any]) -> list[str]:
    lines = ["| framework (their memory) | messages | ours ms/turn | theirs ms/turn | ours / theirs |",
             "|---|---|---|---|---|"]
    names = {"openai_agents": "Agents SDK (SQLiteSession)", "langgraph": "LangGraph (InMemorySaver)",
             "pydantic_ai": "pydantic-ai (message list)"}
    for size, row in result["sizes"].items():
        for name, cell in row.items():
            if "skipped" in cell:
                lines.append(f"| {names[name]} | {int(size):,} | skipped | | |")
            else:
                lines.append(f"| {names[name]} | {int(size):,} | {cell['ours']} | {cell['theirs']} | "
                             f"{cell['ours'] / cell['theirs']:.2f} |")
    return lines


def targets(result: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    found = []
    for size, row in result["sizes"].items():
        limit, bound = ("<= 1.5x theirs", 1.5) if int(size) <= 1000 else ("< 1.0x theirs", 1.0)
        for name, cell in row.items():
            if "skipped" in cell:
                found.append((f"integration {name} at {int(size):,} msgs ran", 0, "framework installed", False))
                continue
            ratio = round(cell["ours"] / cell["theirs"], 2)
            ok = ratio <= bound if bound == 1.5 else ratio < bound
            found.append((f"integration {name} per turn at {int(size):,} msgs, ours/theirs", ratio, limit, ok))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(measure([int(x) for x in args.sizes.split(",")], args.turns)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
