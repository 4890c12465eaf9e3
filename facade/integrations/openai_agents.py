"""OpenAI Agents SDK: ``CompactingSession``, a ``Session`` whose history is our log and
whose ``get_items`` is our projection (extra ``[openai-agents]``, ADR 0074).

    session = CompactingSession(bus, "ticket-4711", model="gpt-4o")
    result = await Runner.run(agent, "Why does the refund test fail?", session=session)

The Runner calls ``run_compaction`` only after a response with a ``response_id`` and no
local tool outputs (and chat-completions/LiteLLM models have none), so ``get_items``
compacts on its own path too: it builds the view through ``prepare_turn``.
``add_items`` appends (an item the SDK sends again is skipped by its id), ``pop_item``
and ``clear_session`` invalidate history; the raw events stay for audit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from context_compaction.application.contracts import commands
from context_compaction.application.runtime.bus import MessageBus

from ._link import (
    Keyed, SessionLink, converted, history_without_system, join_content, restore_block, split_content, unstash,
)

STASH = "x_openai_agents"
_ASSISTANT_KINDS = frozenset({"function_call", "reasoning"})


#: The SDK's item id for providers that give none (chat completions, LiteLLM): every
#: item of such a model carries it, so it names no item.
FAKE_ID = "__fake_id__"


def item_key(item: dict[str, Any]) -> str | None:
    if item.get("type") == "function_call_output" and item.get("call_id"):
        return f"out:{item['call_id']}"
    value = item.get("id")
    if isinstance(value, str) and value and value != FAKE_ID:
        return value
    if item.get("type") == "function_call" and item.get("call_id"):
        return f"call:{item['call_id']}"
    return None


def _input_part(block: Any) -> Any:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind in ("input_text", "output_text") and isinstance(block.get("text"), str):
        return converted({"type": "text", "text": block["text"]}, block, "text")
    if kind == "input_image" and isinstance(block.get("image_url"), str) and block["image_url"]:
        return converted({"type": "image_url", "image_url": {"url": block["image_url"]}}, block, "image_url")
    return None


def _dump(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):
        return dict(item.model_dump(exclude_unset=True, mode="json"))
    copied: dict[str, Any] = json.loads(json.dumps(item))  # the caller's dict stays untouched
    return copied


def to_chat(items: list[Any]) -> list[Keyed]:
    """Responses input items as chat messages. A model response's items (reasoning,
    message, function calls) become one assistant message, so parallel calls stay one
    tool group; whatever the chat format has no place for rides in the stash."""
    out: list[Keyed] = []
    group: list[dict[str, Any]] = []

    def flush() -> None:
        if group:
            out.append(_assistant(group))
            group.clear()

    for raw in items:
        item = _dump(raw)
        kind = item.get("type") or "message"
        role = item.get("role")
        if kind == "message" and role in ("user", "system", "developer"):
            flush()
            content, shape = split_content(item.get("content"), _input_part)
            if not content:
                content, shape = "[non-text content]", {**shape, "stub": True}
            rest = {k: v for k, v in item.items() if k != "content"}
            out.append((item_key(item), {"role": role, "content": content,
                                     STASH: {"items": [{"item": rest, "content": shape}]}}))
        elif kind == "function_call_output":
            flush()
            output = item.get("output")
            content, shape = split_content(output, _input_part)
            rest = {k: v for k, v in item.items() if k != "output"}
            out.append((item_key(item), {"role": "tool", "tool_call_id": item["call_id"], "content": content or "",
                                     STASH: {"items": [{"item": rest, "content": shape}]}}))
        else:  # the model's output: its message, reasoning, calls, hosted tool items
            group.append(item)
    flush()
    return out


def _assistant(items: list[dict[str, Any]]) -> Keyed:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type") or "message"
        if kind == "message":
            content, shape = split_content(item.get("content"), _input_part)
            mine = content if isinstance(content, list) else ([{"type": "text", "text": content}] if content else [])
            parts.extend(mine)
            entries.append({"item": {k: v for k, v in item.items() if k != "content"}, "content": shape,
                            "parts": len(mine)})
        elif kind == "function_call":
            calls.append({"id": item["call_id"], "type": "function",
                          "function": {"name": item["name"], "arguments": item.get("arguments") or ""}})
            entries.append({"item": {k: v for k, v in item.items() if k not in ("name", "arguments")}})
        else:
            entries.append({"item": item, "whole": True})
    keys = [k for k in (item_key(i) for i in items) if k is not None]
    message: dict[str, Any] = {"role": "assistant", "content": parts or None,
                               STASH: {"items": entries, "keys": keys}}
    if calls:
        message["tool_calls"] = calls
    return (keys[0] if keys else None), message


def from_chat(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A projected chat message as the Responses input items it stands for."""
    stash = unstash(message.get(STASH))
    role = message["role"]
    if not isinstance(stash, dict):  # the summary block, or a message another host appended
        if role == "tool":
            return [{"type": "function_call_output", "call_id": message["tool_call_id"],
                     "output": message.get("content") or ""}]
        items: list[dict[str, Any]] = []
        if message.get("content"):
            items.append({"role": role, "content": message["content"]})
        for call in message.get("tool_calls") or ():
            items.append({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                          "arguments": call["function"]["arguments"]})
        return items
    entries = stash.get("items") or []
    if role in ("user", "system", "developer", "tool"):
        entry = entries[0]
        shape = entry.get("content") or {}
        chat = ([] if shape.get("list") else "") if shape.get("stub") else message.get("content")
        value = join_content("" if chat is None else chat, shape, restore_block)
        field = "output" if role == "tool" else "content"
        return [{**entry["item"], field: value}]
    parts = list(message.get("content") or []) if isinstance(message.get("content"), list) else (
        [{"type": "text", "text": message["content"]}] if message.get("content") else [])
    calls = {c["id"]: c["function"] for c in message.get("tool_calls") or ()}
    out = []
    for entry in entries:
        item = entry["item"]
        if entry.get("whole"):
            out.append(item)
        elif (item.get("type") or "message") == "message":
            mine, parts = parts[:entry["parts"]], parts[entry["parts"]:]
            shape = entry.get("content") or {}
            out.append({**item, "content": join_content(mine if shape.get("list") else (
                mine[0]["text"] if mine else ""), shape, restore_block)})
        elif item["call_id"] in calls:  # (a call the projection dropped as unanswered is left out)
            fn = calls[item["call_id"]]
            out.append({**item, "name": fn["name"], "arguments": fn["arguments"]})
    return out


class CompactingSession:
    """An Agents SDK ``Session`` (and compaction-aware session) on our log."""

    session_settings: Any = None

    def __init__(self, bus: MessageBus, session_id: str, *, model: str, system_prompt: str | None = None,
                 session_settings: Any = None, tools: Sequence[Any] | None = None) -> None:
        self.session_id = session_id
        self.system_prompt = system_prompt
        self.session_settings = session_settings
        # The agent's tools reach the model beside the items: the budget counts them.
        self.tools = [_tool_schema(t) for t in tools or ()] or None
        self.link = SessionLink(bus, session_id, model, STASH)

    def usage_hooks(self) -> Any:
        """``RunHooks`` that record the provider's prompt count of the run's first model
        call (the request ``get_items`` built): ``Runner.run(..., hooks=session.usage_hooks())``.
        The SDK hands a session no usage of its own."""
        from agents import RunHooks

        link = self.link

        class UsageHooks(RunHooks):
            async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
                usage = getattr(response, "usage", None)
                await link.arecord_usage(getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))

        return UsageHooks()

    async def get_items(self, limit: int | None = None) -> list[Any]:
        turn = await self.link.aprepare(self.system_prompt, self.tools)
        items = [i for m in history_without_system(turn, self.system_prompt) for i in from_chat(m)]
        return items[-limit:] if limit else items

    async def add_items(self, items: list[Any]) -> None:
        if items:
            await self.link.aappend(to_chat(list(items)))

    async def pop_item(self) -> Any:
        await self.link.aensure()
        bus, sid = self.link.bus, self.session_id
        before = (await bus.adispatch(commands.GetHistory(session_id=sid))).messages
        if not before:
            return None
        newest = before[-1].seq
        await bus.adispatch(commands.InvalidateHistory(session_id=sid, kind="delete", seqs=[newest],
                                                       expand_tool_groups=True, reason="pop_item"))
        # The log deletes a tool group whole; the SDK pops one item: what went with the
        # popped item (the call, its other outputs, the response's other items) comes back.
        left = {m.seq for m in (await bus.adispatch(commands.GetHistory(session_id=sid))).messages}
        popped: Any = None
        restore: list[dict[str, Any]] = []
        for record in (m.model_dump() for m in before if m.seq not in left):
            stash = unstash((record.get("provider_state") or {}).get("data", {}).get(STASH)) or {}
            self.link.forget([k for k in [stash.get("key"), *(stash.get("keys") or ())] if isinstance(k, str)])
            items = from_chat(_record_message(record))
            if record["seq"] == newest:
                popped, items = (items[-1] if items else None), items[:-1]
            restore.extend(items)
        if restore:
            await self.link.aappend(to_chat(restore))
        return popped

    async def clear_session(self) -> None:
        await self.link.aensure()
        await self.link.bus.adispatch(commands.InvalidateHistory(session_id=self.session_id, kind="clear",
                                                                 reason="clear_session"))
        self.link.forget()

    async def run_compaction(self, args: dict[str, Any] | None = None) -> None:
        await self.link.aensure()
        bus = self.link.bus
        if not (args or {}).get("force"):
            usage = await bus.adispatch(commands.GetContextUsage(session_id=self.session_id,
                                                                 system_prompt=self.system_prompt, tools=self.tools))
            if not usage.would_compact:
                return
        await bus.adispatch(commands.Compact(session_id=self.session_id))


def _tool_schema(tool: Any) -> dict[str, Any]:
    """An Agents SDK ``FunctionTool`` (or a chat tool schema as it is) for the budget."""
    if isinstance(tool, dict):
        return tool
    return {"type": "function", "function": {"name": str(getattr(tool, "name", "tool")),
                                             "description": str(getattr(tool, "description", "") or ""),
                                             "parameters": getattr(tool, "params_json_schema", None) or {}}}


def _record_message(record: dict[str, Any]) -> dict[str, Any]:
    """A raw-log record as the projection would give the message (stash merged in)."""
    message: dict[str, Any] = {"role": record["role"], "content": record["content"]}
    if record.get("tool_calls"):
        message["tool_calls"] = [c if "function" in c else {
            "id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in record["tool_calls"]]
    if record.get("tool_call_id"):
        message["tool_call_id"] = record["tool_call_id"]
    data = (record.get("provider_state") or {}).get("data") or {}
    if STASH in data:
        message[STASH] = data[STASH]
    return message
