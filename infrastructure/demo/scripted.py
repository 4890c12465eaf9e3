"""A scripted provider and tools that replay a scenario offline (the demo).

The scripted provider really counts each request and refuses it, like a provider
would, when it is larger than its own window.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from typing import Any

from context_compaction.application.contracts.ports import ContextOverflow, ProviderReply

from ..tokens import TiktokenCounter
from .scenario import Turn


class ScriptedProvider:
    """Answers with the scripted assistant steps of ``turns``, in order, offline."""

    def __init__(self, turns: Iterable[Turn], *, window: int, model_encoding: str = "o200k_base") -> None:
        self.steps = deque(step for turn in turns for step in turn.steps)
        self.window = window
        self.encoding = model_encoding
        self.counter = TiktokenCounter()
        self.calls = 0
        self.overflows = 0
        self.requests: list[int] = []

    async def complete(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ProviderReply:
        await asyncio.sleep(0)
        self.calls += 1
        size = sum(self.counter.count_message(m, self.encoding) for m in messages)
        size += self.counter.count_tools(tools, self.encoding) + self.counter.request_overhead
        self.requests.append(size)
        if size > self.window:
            self.overflows += 1
            raise ContextOverflow(
                f"This model's maximum context length is {self.window} tokens. However, your "
                f"messages resulted in {size} tokens. Please reduce the length of the messages."
            )
        step = self.steps.popleft()
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if step.reasoning:
            message["reasoning"] = step.reasoning
        if step.tool_calls:
            message["tool_calls"] = [dict(c) for c in step.tool_calls]
        return ProviderReply(message=message, prompt_tokens=size)


class ScriptedTools:
    """Returns each scripted tool output, and records every call it ran."""

    def __init__(self, turns: Iterable[Turn]) -> None:
        self.outputs: dict[str, str] = {}
        for turn in turns:
            self.outputs.update(turn.tool_outputs)
        self.executed: list[str] = []

    async def __call__(self, call: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        self.executed.append(call["id"])
        return self.outputs.get(call["id"], "error: unknown tool call")
