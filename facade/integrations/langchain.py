"""LangChain v1 / LangGraph: ``CompactionMiddleware`` for ``create_agent`` (extra
``[langchain]``, ADR 0074).

    agent = create_agent(model, tools, middleware=[CompactionMiddleware(bus, model="gpt-4o")])

Before each model call it appends the state's messages the log lacks (by message id),
builds the turn with ``prepare_turn`` and calls the model with
``request.override(messages=...)``: the graph state is never rewritten. The session id
is the run's ``thread_id`` unless given.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from hashlib import sha256
from typing import Any

try:
    from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(f"{exc}: pip install 'context-compaction[langchain]'") from exc

from context_compaction.application.runtime.bus import MessageBus
from context_compaction.domain.errors import InvalidCommand

from ._link import Keyed, SessionLink, history_without_system, join_content, split_content, unstash

STASH = "x_langchain"
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
_CLASSES: dict[str, type[BaseMessage]] = {"human": HumanMessage, "ai": AIMessage, "tool": ToolMessage,
                                          "system": SystemMessage}


def _keep(block: Any) -> Any:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and block.keys() == {"type", "text"} and isinstance(block["text"], str):
        return block
    if kind == "image_url" and block.keys() == {"type", "image_url"}:
        image = block["image_url"]
        if isinstance(image, dict) and image.keys() <= {"url", "detail"} and all(
                isinstance(v, str) for v in image.values()) and image.get("url"):
            return block
    if kind == "image" and isinstance(block.get("url") or block.get("base64"), str):
        # LangChain's standard image block: the model sees it as an image part.
        if isinstance(block.get("url"), str):
            url, payload = block["url"], "url"
        else:
            url, payload = f"data:{block.get('mime_type') or 'image/png'};base64,{block['base64']}", "base64"
        return {"type": "image_url", "image_url": {"url": url}}, {
            "payload": payload, "block": {k: v for k, v in block.items() if k != payload}}
    return None


def _restore(part: dict[str, Any], undo: dict[str, Any]) -> dict[str, Any]:
    url = part["image_url"]["url"]
    payload = undo["payload"]
    return {**undo["block"], payload: url if payload == "url" else url.split(",", 1)[1]}


def message_key(message: BaseMessage) -> str:
    if message.id:
        return str(message.id)
    return "h:" + sha256(json.dumps(message.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def _without_defaults(message: BaseMessage) -> dict[str, Any]:
    """The message's fields minus those at their defaults: the stash is counted in the
    budget like any provider field (biased high), so it carries what it must only."""
    dump = message.model_dump(mode="json")
    for name, field in type(message).model_fields.items():
        if name in dump and name != "content" and not field.is_required():
            default = field.get_default(call_default_factory=True)
            if dump[name] == default and name != "tool_calls":
                del dump[name]
    return dump


def to_chat(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as a chat message, its other fields in the stash."""
    role = _ROLES.get(message.type)
    if role is None:
        raise InvalidCommand(f"LangChain message type {message.type!r} has no chat role")
    dump = _without_defaults(message)
    content, shape = split_content(dump.pop("content"), _keep)
    if role in ("user", "system") and not content:
        content, shape = "[non-text content]", {**shape, "stub": True}
    out: dict[str, Any] = {"role": role, "content": content}
    calls = dump.pop("tool_calls", None) or []
    if calls:
        out["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": json.dumps(c["args"])}} for c in calls]
    if role == "tool":
        out["tool_call_id"] = message.tool_call_id  # type: ignore[attr-defined]
        if out["content"] in (None, []):
            out["content"] = ""
    key = message_key(message)
    if dump.get("id") == key:
        del dump["id"]  # (the key is the id: stored once)
    fields: dict[str, Any] = {"key": key, "type": message.type, "fields": dump}
    if shape:
        fields["content"] = shape
    if calls:
        fields["calls"] = {c["id"]: {k: v for k, v in c.items() if k not in ("id", "name", "args")} for c in calls}
    return {**out, STASH: fields}


def from_chat(message: dict[str, Any]) -> BaseMessage:
    """A chat message (as the projection gives it) as a LangChain message."""
    stash = unstash(message.get(STASH))
    role = message["role"]
    content = message.get("content")
    if not isinstance(stash, dict):
        calls = [_lc_call(c, {}) for c in message.get("tool_calls") or ()]
        if role == "assistant":
            return AIMessage(content=content or "", tool_calls=calls)
        if role == "tool":
            return ToolMessage(content=content or "", tool_call_id=message["tool_call_id"])
        if role == "system":
            return SystemMessage(content=content or "")
        return HumanMessage(content=content or "")
    shape = stash.get("content") or {}
    content = "" if shape.get("stub") else content
    if shape.get("stub") and shape.get("list"):
        content = []
    value = join_content(content if content is not None else "", shape, _restore)
    if value is None:
        value = ""
    fields = dict(stash.get("fields") or {})
    if "id" not in fields and not str(stash.get("key", "h:")).startswith("h:"):
        fields["id"] = stash["key"]
    cls = _CLASSES[stash["type"]]
    if cls is AIMessage:
        meta = stash.get("calls") or {}
        fields["tool_calls"] = [_lc_call(c, meta.get(c["id"], {})) for c in message.get("tool_calls") or ()]
    return cls(content=value, **fields)


def _lc_call(call: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    fn = call["function"]
    args = json.loads(fn["arguments"]) if fn.get("arguments") else {}
    return {"name": fn["name"], "args": args, "id": call["id"], "type": "tool_call", **extra}


def _tool_schemas(tools: Sequence[Any]) -> list[dict[str, Any]] | None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    try:
        return [convert_to_openai_tool(t) for t in tools] or None
    except Exception:  # noqa: BLE001 - a tool we cannot describe only makes the budget less exact
        return None


class CompactionMiddleware(AgentMiddleware):
    """Keeps the thread's history in our log and sends the model our projection."""

    def __init__(self, bus: MessageBus, *, model: str, session_id: str | None = None) -> None:
        super().__init__()
        self.bus = bus
        self.model = model
        self.session_id = session_id
        self._links: dict[str, SessionLink] = {}

    def link(self, session_id: str) -> SessionLink:
        if session_id not in self._links:
            self._links[session_id] = SessionLink(self.bus, session_id, self.model, STASH, prefix_match=True)
        return self._links[session_id]

    def _session(self, runtime: Any) -> str:
        if self.session_id:
            return self.session_id
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if not thread:
            try:
                from langgraph.config import get_config

                thread = (get_config().get("configurable") or {}).get("thread_id")
            except RuntimeError:
                thread = None
        if not thread:
            raise InvalidCommand("no session: pass session_id= or run the agent with a thread_id")
        return str(thread)

    @staticmethod
    def _keyed(messages: Sequence[BaseMessage]) -> list[Keyed]:
        return [(message_key(m), to_chat(m)) for m in messages]

    def _request(self, request: ModelRequest, turn: Any) -> ModelRequest:
        messages = [from_chat(m) for m in history_without_system(turn, request.system_prompt)]
        return request.override(messages=messages)  # type: ignore[arg-type]

    @staticmethod
    def _usage(response: Any) -> tuple[int | None, int | None]:
        for message in reversed(getattr(response, "result", None) or [response]):
            usage = getattr(message, "usage_metadata", None)
            if usage:
                return usage.get("input_tokens"), usage.get("output_tokens")
        return None, None

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        link = self.link(self._session(request.runtime))
        link.append(self._keyed(request.messages))
        turn = link.prepare(request.system_prompt, _tool_schemas(request.tools))
        response = handler(self._request(request, turn))
        link.record_usage(*self._usage(response))
        return response

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        link = self.link(self._session(request.runtime))
        await link.aappend(self._keyed(request.messages))
        turn = await link.aprepare(request.system_prompt, _tool_schemas(request.tools))
        response = await handler(self._request(request, turn))
        await link.arecord_usage(*self._usage(response))
        return response

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        # The final answer reaches the log when the run ends, not at the next call.
        self.link(self._session(runtime)).append(self._keyed(state["messages"]))
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        await self.link(self._session(runtime)).aappend(self._keyed(state["messages"]))
        return None
