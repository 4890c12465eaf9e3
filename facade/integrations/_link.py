"""What every adapter does with the bus: start the session once, append the messages
the log lacks (by the framework's own key), build the turn, record usage.

Framework fields that the chat format has no place for travel in the message's
``provider_state`` under the adapter's stash key, bound to the session's model: the
projection hands them back to the adapter (which turns them into framework objects
again), no other provider or model ever sees them (ADR 0074, ADR 0017).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from context_compaction.application.contracts import commands
from context_compaction.application.runtime.bus import MessageBus
from context_compaction.application.contracts.results import TurnRequest
from context_compaction.domain.errors import SessionExists
from context_compaction.domain.messages import parse_message
from context_compaction.domain.projection import SUMMARY_HEADER

#: (framework key, chat message) — the key says whether the log has the message; None:
#: the framework gives the message no identity (a user's input), it is always new.
Keyed = tuple[str | None, dict[str, Any]]


def unstash(value: Any) -> dict[str, Any] | None:
    """The adapter's fields of a message: stored as JSON text, given as a dict before
    the message reached the log."""
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else None


def is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_HEADER)


class SessionLink:
    """One session of the log as an adapter sees it (sync and async).

    ``stash`` names the ``provider_state.data`` entry that carries the framework's own
    fields and key; the keys already in the log are read once per process (a restart
    resumes where the last process stopped).
    """

    def __init__(self, bus: MessageBus, session_id: str, model: str, stash: str, *, prefix_match: bool = False) -> None:
        self.bus = bus
        #: A host may re-send the whole history as new objects (LangChain: dicts, given
        #: fresh ids each run): a list whose keys are all unknown and which starts with
        #: the log's visible history, message for message, appends only what follows.
        self.prefix_match = prefix_match
        self._canon: list[str] | None = None
        self.session_id = session_id
        self.model = model
        self.stash = stash
        self._known: set[str] | None = None
        self._identity: Any = None
        self.last_request: TurnRequest | None = None

    # ------------------------------------------------------------------ helpers
    def bind(self, fields: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        """``message`` carrying ``fields`` under the stash key, bound to the session's model."""
        if self._identity is None:
            self._identity = self.bus.services.identity(self.model)
        identity = self._identity
        state = message.get("provider_state") or {"provider": identity.provider, "model": identity.model,
                                                  "data": {}}
        # JSON text, not a nested object: every request hands out a copy of the projection
        # that shares no dict or list with the cache (application/runtime/handout.py), and a flat
        # message is copied in one step where nested fields are walked one by one.
        state = {**state, "data": {**state.get("data", {}), self.stash: json.dumps(fields, ensure_ascii=False)}}
        return {**message, "provider_state": state}

    def _start(self) -> commands.StartSession:
        return commands.StartSession(session_id=self.session_id, model=self.model)

    def _history(self) -> commands.GetHistory:
        # Visible messages only: an item the host removed (pop, clear) may come again.
        return commands.GetHistory(session_id=self.session_id)

    def forget(self, keys: Iterable[str] | None = None) -> None:
        """The log no longer shows these keys (all keys: None) to the model."""
        self._canon = None  # (the visible history changed: no prefix match until reread)
        if self._known is not None:
            if keys is None:
                self._known.clear()
            else:
                self._known.difference_update(keys)

    def _learn(self, history: Any) -> set[str]:
        if self.prefix_match:
            self._canon = [_digest(record.model_dump()) for record in history.messages]
        known: set[str] = set()
        for record in history.messages:
            state = record.provider_state or {}
            fields = unstash((state.get("data") or {}).get(self.stash))
            if isinstance(fields, dict):
                known.update(k for k in [fields.get("key"), *(fields.get("keys") or ())] if isinstance(k, str))
        return known

    def _settle(self, learned: set[str]) -> None:
        # Another task may have learned (and reserved keys) while this one read the log.
        if self._known is None:
            self._known = learned
        else:
            self._known |= learned

    def _new(self, keyed: Iterable[Keyed]) -> tuple[list[str], list[dict[str, Any]]]:
        assert self._known is not None
        keyed = list(keyed)
        canon = self._canon
        if (self.prefix_match and canon and len(keyed) >= len(canon)
                and all(k is not None and k not in self._known for k, _ in keyed)
                and all(_digest(_chat_record(m, self.stash)) == c for (_, m), c in zip(keyed, canon, strict=False))):
            self._known.update(k for k, _ in keyed[:len(canon)] if k is not None)
            keyed = keyed[len(canon):]
        keys: list[str] = []
        fresh: list[dict[str, Any]] = []
        seen: set[str] = set()
        for key, message in keyed:
            if key is not None:
                if key in self._known or key in seen:
                    continue
                seen.add(key)
                keys.append(key)
            if self.stash in message:
                message = dict(message)
                fields = message.pop(self.stash)
                keys.extend(k for k in fields.get("keys") or () if isinstance(k, str))
                message = self.bind({**fields, "key": key} if key is not None else fields, message)
            fresh.append(message)
        return keys, fresh

    def _reserve(self, keyed: Iterable[Keyed]) -> tuple[list[str], list[dict[str, Any]]]:
        """The messages to append, their keys marked known before the append is awaited:
        a second call for the same session meanwhile (two tasks, the SDK sending an item
        again) does not append them again. A failed append forgets them."""
        keys, fresh = self._new(keyed)
        assert self._known is not None
        self._known.update(keys)
        if self._canon is not None and fresh:
            self._canon.extend(_digest(_chat_record(m, self.stash)) for m in fresh)
        return keys, fresh

    def _append(self, fresh: list[dict[str, Any]]) -> commands.AppendMessages:
        return commands.AppendMessages(session_id=self.session_id, messages=fresh, model=self.model)

    def _prepare(self, system_prompt: str | None, tools: Sequence[dict[str, Any]] | None) -> commands.PrepareTurn:
        return commands.PrepareTurn(session_id=self.session_id, system_prompt=system_prompt,
                                    tools=list(tools) if tools else None)

    # ------------------------------------------------------------------ sync
    def ensure(self) -> None:
        if self._known is None:
            try:
                self.bus.dispatch(self._start())
            except SessionExists:
                pass
            self._settle(self._learn(self.bus.dispatch(self._history())))

    def append(self, keyed: Iterable[Keyed]) -> int:
        """Append what the log lacks; how many messages that was."""
        self.ensure()
        keys, fresh = self._reserve(keyed)
        if fresh:
            try:
                self.bus.dispatch(self._append(fresh))
            except BaseException:
                self.forget(keys)
                raise
        return len(fresh)

    def prepare(self, system_prompt: str | None = None, tools: Sequence[dict[str, Any]] | None = None) -> TurnRequest:
        self.ensure()
        self.last_request = self.bus.dispatch(self._prepare(system_prompt, tools))
        return self.last_request

    def record_usage(self, prompt_tokens: int | None, completion_tokens: int | None = None) -> None:
        """The provider's count for the request ``prepare`` built last, once: a later call
        of the same turn sends more than that request held."""
        request = self.last_request
        if request is None or prompt_tokens is None or prompt_tokens <= 0:
            return
        self.last_request = None
        self.bus.dispatch(commands.RecordUsage(session_id=self.session_id, request_id=request.request_id,
                                               prompt_tokens=prompt_tokens, completion_tokens=completion_tokens))

    # ------------------------------------------------------------------ async
    async def aensure(self) -> None:
        if self._known is None:
            try:
                await self.bus.adispatch(self._start())
            except SessionExists:
                pass
            self._settle(self._learn(await self.bus.adispatch(self._history())))

    async def aappend(self, keyed: Iterable[Keyed]) -> int:
        await self.aensure()
        keys, fresh = self._reserve(keyed)
        if fresh:
            try:
                await self.bus.adispatch(self._append(fresh))
            except BaseException:
                self.forget(keys)
                raise
        return len(fresh)

    async def aprepare(self, system_prompt: str | None = None,
                       tools: Sequence[dict[str, Any]] | None = None) -> TurnRequest:
        await self.aensure()
        self.last_request = await self.bus.adispatch(self._prepare(system_prompt, tools))
        return self.last_request

    async def arecord_usage(self, prompt_tokens: int | None, completion_tokens: int | None = None) -> None:
        request = self.last_request
        if request is None or prompt_tokens is None or prompt_tokens <= 0:
            return
        self.last_request = None
        await self.bus.adispatch(commands.RecordUsage(
            session_id=self.session_id, request_id=request.request_id, prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens))


def _chat_record(message: dict[str, Any], stash: str) -> dict[str, Any]:
    """A chat message in the log's stored form (what ``GetHistory`` gives back)."""
    return parse_message({k: v for k, v in message.items() if k not in (stash, "provider_state")}).to_record()


def _digest(record: dict[str, Any]) -> str:
    """A stored message's portable fields, for the prefix match."""
    calls = [[c.get("id"), c.get("name"), c.get("arguments")] for c in record.get("tool_calls") or ()]
    body = [record.get("role"), record.get("content"), calls, record.get("tool_call_id"), record.get("name")]
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def history_without_system(request: TurnRequest, system_prompt: str | None) -> list[dict[str, Any]]:
    """The request's messages minus the system prompt we passed in (the framework sends
    its own system message itself)."""
    messages = list(request.messages)
    if system_prompt is not None and messages and messages[0].get("role") == "system":
        messages = messages[1:]
    return messages


def split_content(content: Any, keep: Callable[[Any], Any]) -> tuple[Any, dict[str, Any]]:
    """A framework's content as chat content plus what the chat format cannot hold.

    ``keep(block)`` gives the chat part for a block, ``(part, undo)`` for a block converted
    (an image as a data URL: ``undo`` rebuilds it), or None to stash the block whole.
    Returns (chat content, stash fields): ``{"blocks": {index: block}, "strs": [index]}``
    say where the stashed blocks and the bare-string blocks sat.
    """
    if content is None or isinstance(content, str):
        return content, {}
    parts: list[dict[str, Any]] = []
    blocks: dict[str, Any] = {}
    strs: list[int] = []
    for index, block in enumerate(content):
        if isinstance(block, str):
            strs.append(index)
            parts.append({"type": "text", "text": block})
            continue
        part = keep(block)
        if part is None:
            blocks[str(index)] = block
        elif isinstance(part, tuple):  # converted: the chat part, and how to undo it
            parts.append(part[0])
            blocks[str(index)] = {"ctxc_part": True, **part[1]}
        else:
            parts.append(part)
    fields: dict[str, Any] = {"list": True}
    if blocks:
        fields["blocks"] = blocks
    if strs:
        fields["strs"] = strs
    return parts, fields


def join_content(chat: Any, fields: dict[str, Any], restore: Callable[[dict[str, Any], Any], Any]) -> Any:
    """The inverse of :func:`split_content`; ``restore(part, stashed)`` rebuilds a block."""
    if not fields.get("list"):
        return chat
    parts = list(chat) if isinstance(chat, list) else ([] if not chat else [{"type": "text", "text": chat}])
    blocks = fields.get("blocks") or {}
    strs = set(fields.get("strs") or ())
    out: list[Any] = []
    size = len(parts) + sum(1 for b in blocks.values() if not (isinstance(b, dict) and b.get("ctxc_part")))
    feed = iter(parts)
    for index in range(size):
        if str(index) in blocks:
            block = blocks[str(index)]
            out.append(restore(next(feed), block) if isinstance(block, dict) and block.get("ctxc_part") else block)
        else:
            part = next(feed, None)
            if part is None:
                break
            out.append(part["text"] if index in strs else part)
    return out


def converted(part: dict[str, Any], block: dict[str, Any], payload: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A block the chat format holds as ``part``; :func:`restore_block` undoes it."""
    return part, {"payload": payload, "block": {k: v for k, v in block.items() if k != payload}}


def restore_block(part: dict[str, Any], undo: dict[str, Any]) -> dict[str, Any]:
    value = part["text"] if part["type"] == "text" else part["image_url"]["url"]
    return {**undo["block"], undo["payload"]: value}
