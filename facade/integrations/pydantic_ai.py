"""pydantic-ai: ``CompactionProcessor``, a capability whose ``before_model_request``
sends the model our projection (extra ``[pydantic-ai]``, ADR 0074).

    agent = Agent(model, capabilities=[CompactionProcessor(bus, session_id="s1", model="gpt-4o")])

It appends the run's messages the log lacks and replaces only the request's messages
(``ModelRequestContext.messages`` is request-only in pydantic-ai 2.x): the run's
``all_messages()`` keeps the full history. Tool call and return parts stay together.
"""

from __future__ import annotations

import json
from dataclasses import replace
from hashlib import sha256
from itertools import groupby
from typing import Any

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(f"{exc}: pip install 'context-compaction[pydantic-ai]'") from exc

from context_compaction.application.runtime.bus import MessageBus

from ._link import Keyed, SessionLink, converted, join_content, restore_block, split_content, unstash

STASH = "x_pydantic_ai"


def message_key(message: dict[str, Any]) -> str:
    """A message's identity: its kind, timestamps and parts' identities (not fields the
    run fills in later, such as ``state`` or re-rendered instructions)."""
    parts = [(p.get("part_kind"), p.get("tool_call_id"), p.get("timestamp")) for p in message["parts"]]
    body = [message["kind"], message.get("timestamp"), message.get("run_id"), parts]
    return sha256(json.dumps(body, default=str).encode()).hexdigest()[:32]


_KINDS = frozenset({"kind", "part_kind"})


def _with_kinds(full: Any, lean: Any) -> Any:
    """``lean`` (the dump without default values: the stash is counted in the budget, a
    response's zero usage alone was ~300 tokens) with the type tags put back, which are
    defaults too but say which class a dict is."""
    if isinstance(full, dict) and isinstance(lean, dict):
        return {**{k: v for k, v in full.items() if k in _KINDS},
                **{k: _with_kinds(full.get(k), v) for k, v in lean.items()}}
    if isinstance(full, list) and isinstance(lean, list) and len(full) == len(lean):
        return [_with_kinds(f, m) for f, m in zip(full, lean, strict=True)]
    return lean


def _user_part(block: Any) -> Any:
    if not isinstance(block, dict):
        return None
    if block.get("kind") == "image-url" and isinstance(block.get("url"), str):
        return converted({"type": "image_url", "image_url": {"url": block["url"]}}, block, "url")
    return None


def to_chat(messages: list[ModelMessage]) -> list[Keyed]:
    """pydantic-ai messages as chat messages: a request's parts one message each, a
    response one assistant message; each carries its message's fields in the stash."""
    out: list[Keyed] = []
    full = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    lean = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json", exclude_defaults=True)
    for message in (_with_kinds(f, m) for f, m in zip(full, lean, strict=True)):
        key = message_key(message)
        rest = {k: v for k, v in message.items() if k != "parts"}
        if message["kind"] == "response":
            out.append((key, _response(message["parts"], {"mkey": key, "msg": rest})))
            continue
        for index, part in enumerate(message["parts"]):
            stash = {"mkey": key, "msg": rest, "i": index}
            out.append((f"{key}#{index}", _request_part(part, stash)))
    return out


def _request_part(part: dict[str, Any], stash: dict[str, Any]) -> dict[str, Any]:
    kind = part["part_kind"]
    content = part.get("content")
    shell = {k: v for k, v in part.items() if k != "content"}
    if kind in ("tool-return", "retry-prompt") and part.get("tool_call_id") and part.get("tool_name"):
        text = content if isinstance(content, str) else json.dumps(content)
        return {"role": "tool", "tool_call_id": part["tool_call_id"], "content": text,
                STASH: {**stash, "part": shell, "json": not isinstance(content, str)}}
    if kind in ("user-prompt", "system-prompt", "retry-prompt"):
        chat, shape = split_content(content if isinstance(content, (str, list)) else json.dumps(content), _user_part)
        if not chat:
            chat, shape = "[non-text content]", {**shape, "stub": True}
        shape["json"] = not isinstance(content, (str, list))
        return {"role": "system" if kind == "system-prompt" else "user", "content": chat,
                STASH: {**stash, "part": shell, "content": shape}}
    return {"role": "user", "content": f"[{kind}]", STASH: {**stash, "part": part, "whole": True}}


def _response(parts: list[dict[str, Any]], stash: dict[str, Any]) -> dict[str, Any]:
    texts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    for part in parts:
        kind = part["part_kind"]
        if kind == "text":
            chat, undo = converted({"type": "text", "text": part["content"]}, part, "content")
            texts.append(chat)
            entries.append({"text": undo})
        elif kind == "tool-call":
            args = part["args"]
            calls.append({"id": part["tool_call_id"], "type": "function", "function": {
                "name": part["tool_name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
            entries.append({"call": {k: v for k, v in part.items() if k not in ("tool_name", "args")},
                            "dict": not isinstance(args, str)})
        else:  # thinking, built-in tool parts, files: the model's own, kept whole
            entries.append({"whole": part})
    message: dict[str, Any] = {"role": "assistant", "content": texts or None,
                               STASH: {**stash, "parts": entries}}
    if calls:
        message["tool_calls"] = calls
    return message


def from_chat(messages: list[dict[str, Any]]) -> list[ModelMessage]:
    """Projected chat messages as pydantic-ai messages (a request's parts rejoined)."""
    out: list[dict[str, Any]] = []
    unpacked = [{**m, STASH: unstash(m[STASH])} if STASH in m else m for m in messages]
    for _, run in groupby(unpacked, key=lambda m: (m.get(STASH) or {}).get("mkey") or id(m)):
        group = list(run)
        stash = group[0].get(STASH)
        if not isinstance(stash, dict):
            out.append(_plain(group[0]))
        elif group[0]["role"] == "assistant":
            out.append({**stash["msg"], "parts": _response_parts(group[0], stash)})
        else:
            out.append({**stash["msg"], "parts": [_part(m) for m in group]})
    return ModelMessagesTypeAdapter.validate_python(out)


def _part(message: dict[str, Any]) -> dict[str, Any]:
    stash = message[STASH]
    if stash.get("whole"):
        return dict(stash["part"])
    if message["role"] == "tool":
        content = message.get("content") or ""
        return {**stash["part"], "content": json.loads(content) if stash.get("json") else content}
    shape = stash.get("content") or {}
    chat = ([] if shape.get("list") else "") if shape.get("stub") else message.get("content")
    value = join_content(chat, shape, restore_block)
    return {**stash["part"], "content": json.loads(value) if shape.get("json") else value}


def _response_parts(message: dict[str, Any], stash: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    texts = list(content) if isinstance(content, list) else ([{"type": "text", "text": content}] if content else [])
    calls = {c["id"]: c["function"] for c in message.get("tool_calls") or ()}
    parts: list[dict[str, Any]] = []
    for entry in stash["parts"]:
        if "text" in entry:
            parts.append(restore_block(texts.pop(0), entry["text"]) if texts else {**entry["text"]["block"],
                                                                                   "content": ""})
        elif "call" in entry:
            fn = calls.get(entry["call"]["tool_call_id"])
            if fn is not None:  # (a call the projection dropped as unanswered is left out)
                args = json.loads(fn["arguments"]) if entry.get("dict") else fn["arguments"]
                parts.append({**entry["call"], "tool_name": fn["name"], "args": args})
        else:
            parts.append(entry["whole"])
    return parts


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message without a stash (the summary block, or one another host appended)."""
    role, content = message["role"], message.get("content") or ""
    if role == "assistant":
        parts: list[dict[str, Any]] = [{"part_kind": "text", "content": content}] if content else []
        parts += [{"part_kind": "tool-call", "tool_name": c["function"]["name"], "args": c["function"]["arguments"],
                   "tool_call_id": c["id"]} for c in message.get("tool_calls") or ()]
        return {"kind": "response", "parts": parts}
    if role == "tool":
        return {"kind": "request", "parts": [{"part_kind": "tool-return", "tool_name": message.get("name") or "tool",
                                              "content": content, "tool_call_id": message["tool_call_id"]}]}
    kind = "system-prompt" if role in ("system", "developer") else "user-prompt"
    return {"kind": "request", "parts": [{"part_kind": kind, "content": content}]}


def _tool_schemas(params: Any) -> list[dict[str, Any]] | None:
    """The tool definitions pydantic-ai sends beside the messages, for the budget (the
    instructions need no such place: each request's own ``instructions`` ride in its stash)."""
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                               "parameters": t.parameters_json_schema}}
             for t in [*(getattr(params, "function_tools", None) or ()), *(getattr(params, "output_tools", None) or ())]]
    return tools or None


class CompactionProcessor(AbstractCapability[Any]):
    """A pydantic-ai capability: our log keeps the run's history, the model gets our
    projection of it."""

    def __init__(self, bus: MessageBus, *, session_id: str, model: str) -> None:
        self.link = SessionLink(bus, session_id, model, STASH)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        await self.link.aappend(to_chat(request_context.messages))
        turn = await self.link.aprepare(None, _tool_schemas(request_context.model_request_parameters))
        return replace(request_context, messages=from_chat(turn.messages))

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        usage = getattr(response, "usage", None)
        await self.link.arecord_usage(getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None))
        return response

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        # The final answer reaches the log when the run ends, not at the next request.
        await self.link.aappend(to_chat(result.all_messages()))
        return result
