"""LiteLLM proxy: ``CompactionHook``, a ``CustomLogger`` whose pre-call hook sends the
model our projection of the session named in the request's metadata (extra
``[litellm-proxy]``, ADR 0074).

    # proxy_hooks.py, named in the proxy config's `litellm_settings: callbacks:`
    compaction = CompactionHook(bootstrap(Settings(database_url="postgresql://...")))

A client sends ``metadata: {"session_id": ...}`` (``litellm_metadata`` on the routes that
use it) and, as chat clients do, its whole growing message list: the part the log
already has (an exact prefix) is recognised and only the new suffix is appended; a
client that changed its earlier messages gets the log rewound to where they agree (the
raw events stay). Its system messages reach the model as the system prompt. Requests
without a session id pass through unchanged.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from context_compaction.application.contracts import commands
from context_compaction.application.runtime.bus import MessageBus
from context_compaction.domain.errors import SessionExists
from context_compaction.domain.messages import parse_message

_META_KEYS = ("metadata", "litellm_metadata")
_CHAT_CALLS = frozenset({"completion", "acompletion"})
REQUEST_ID_KEY = "ctxc_request_id"
SEEN_KEY = "ctxc_seen"


def _session_of(data: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    for key in _META_KEYS:
        meta = data.get(key)
        if isinstance(meta, dict) and isinstance(meta.get("session_id"), str) and meta["session_id"]:
            return meta["session_id"], meta
    return None, None


def _canonical(record: dict[str, Any]) -> str:
    """What a message is, for the exact-prefix rule: the stored form's portable fields."""
    calls = [{"id": c["id"], "name": c.get("name") or c["function"]["name"],
              "arguments": c.get("arguments") if "function" not in c else c["function"]["arguments"]}
             for c in record.get("tool_calls") or ()]
    body = {"role": record["role"], "content": record.get("content"), "tool_calls": calls,
            "tool_call_id": record.get("tool_call_id"), "name": record.get("name")}
    return json.dumps(body, sort_keys=True, ensure_ascii=False)


def _text_of(content: Any) -> str:
    """A system message's text: a string, or the text of its parts (a client that sends
    its system prompt as parts, say with ``cache_control``, is not sent their repr)."""
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return str(content or "")


class _Transcript:
    """The session's visible messages as this process last saw them (canonical form)."""

    def __init__(self) -> None:
        self.canon: list[str] = []
        self.seqs: list[int] = []
        # The pre-call hook and litellm's success logging (another thread, maybe another
        # loop) both append: one at a time, each seeing what the other did.
        self.lock = threading.Lock()


class CompactionHook(CustomLogger):
    """A LiteLLM ``CustomLogger``: our projection in, the provider's usage recorded."""

    def __init__(self, bus: MessageBus, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bus = bus
        self._seen: dict[str, _Transcript] = {}

    async def _transcript(self, session_id: str, model: str) -> _Transcript:
        seen = self._seen.get(session_id)
        if seen is None:
            # Started before it is shared: a second request meanwhile must not read or
            # append to a session that does not exist yet.
            try:
                await self.bus.adispatch(commands.StartSession(session_id=session_id, model=model))
            except SessionExists:
                pass
            seen = self._seen.setdefault(session_id, _Transcript())
        return seen

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict[str, Any],
                                  call_type: Any) -> dict[str, Any]:
        session_id, meta = _session_of(data)
        if session_id is None or meta is None or call_type not in _CHAT_CALLS or not data.get("messages"):
            return data
        model = str(data["model"])
        messages = list(data["messages"])
        system = [m for m in messages if m.get("role") in ("system", "developer")]
        rest = [m for m in messages if m.get("role") not in ("system", "developer")]
        seen = await self._transcript(session_id, model)
        parsed = [parse_message(m, i) for i, m in enumerate(rest)]
        canon = [_canonical(p.to_record()) for p in parsed]
        await asyncio.to_thread(self._sync, session_id, seen, rest, canon, model)
        prompt = "\n\n".join(_text_of(m.get("content")) for m in system) if system else None
        turn = await self.bus.adispatch(commands.PrepareTurn(
            session_id=session_id, system_prompt=prompt, tools=data.get("tools") or None, model=model))
        meta[REQUEST_ID_KEY] = turn.request_id
        meta[SEEN_KEY] = len(seen.canon)
        return {**data, "messages": turn.messages}

    def _sync(self, session_id: str, seen: _Transcript, rest: list[Any], canon: list[str], model: str) -> None:
        """Make the log's visible history ``rest``: append the new suffix, or rewind to
        where the client's list and the log agree first."""
        with seen.lock:
            # What other proxy workers appended since: read from the newest seq we know on.
            after = seen.seqs[-1] + 1 if seen.seqs else None
            for record in self.bus.dispatch(commands.GetHistory(session_id=session_id, from_seq=after)).messages:
                seen.canon.append(_canonical(record.model_dump()))
                seen.seqs.append(record.seq)
            agree = self._agree(canon, seen)
            if agree < len(seen.canon):
                # Another worker may have rewound the log: read it whole before deciding.
                seen.canon.clear()
                seen.seqs.clear()
                for record in self.bus.dispatch(commands.GetHistory(session_id=session_id)).messages:
                    seen.canon.append(_canonical(record.model_dump()))
                    seen.seqs.append(record.seq)
                agree = self._agree(canon, seen)
            if agree < len(seen.canon):  # the client changed (or left out) earlier messages
                self.bus.dispatch(commands.InvalidateHistory(
                    session_id=session_id, kind="rewind", to_seq=seen.seqs[agree - 1] if agree else 0,
                    reason="litellm proxy client sent other history"))
                del seen.canon[agree:], seen.seqs[agree:]
            if agree < len(rest):
                appended = self.bus.dispatch(commands.AppendMessages(
                    session_id=session_id, messages=rest[agree:], model=model))
                seen.canon.extend(canon[agree:])
                seen.seqs.extend(appended.seqs)

    @staticmethod
    def _agree(canon: list[str], seen: _Transcript) -> int:
        agree = 0
        while agree < min(len(canon), len(seen.canon)) and canon[agree] == seen.canon[agree]:
            agree += 1
        return agree

    def _answer(self, session_id: str, seen: _Transcript, at: int, message: Any, model: str) -> None:
        """The provider's answer, as it came back, unless the client sent it already."""
        with seen.lock:
            if len(seen.canon) != at:
                return
            parsed = parse_message(message)
            appended = self.bus.dispatch(commands.AppendMessages(session_id=session_id, messages=[message],
                                                                 model=model))
            seen.canon.append(_canonical(parsed.to_record()))
            seen.seqs.extend(appended.seqs)

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any,
                                      end_time: Any) -> None:
        params = kwargs.get("litellm_params") or {}
        for meta in (params.get("metadata"), params.get("litellm_metadata"), kwargs.get("metadata")):
            if isinstance(meta, dict) and meta.get(REQUEST_ID_KEY) and meta.get("session_id"):
                break
        else:
            return
        session_id = meta["session_id"]
        seen = self._seen.get(session_id)
        choices = getattr(response_obj, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        if seen is not None and message is not None and isinstance(meta.get(SEEN_KEY), int):
            model = str(kwargs.get("model") or params.get("model") or "")
            await asyncio.to_thread(self._answer, session_id, seen, meta[SEEN_KEY], message, model)
        usage = getattr(response_obj, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        if not prompt:
            return
        await self.bus.adispatch(commands.RecordUsage(
            session_id=meta["session_id"], request_id=meta[REQUEST_ID_KEY], prompt_tokens=prompt,
            completion_tokens=getattr(usage, "completion_tokens", None)))
