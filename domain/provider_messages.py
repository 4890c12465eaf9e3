"""A stored message as a provider is sent it (spec §7.1, ADR 0017): the OpenAI/litellm
chat format, tool calls nested, and provider-private state only to the provider and
model that produced it.

The projection (``projection.py``) puts these messages in order; this module converts
one record at a time and notes each message's shape for the hand-out copy (ADR 0098).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .messages import OUTPUT_ONLY_FIELDS, MessageRecord, nested_tool_calls


@dataclass(frozen=True)
class ProviderIdentity:
    """Who a request goes to; provider-private state replays only to the same one."""

    provider: str
    model: str

    def matches(self, state: dict[str, Any] | None) -> bool:
        if not state:
            return False
        if state.get("provider") != self.provider:
            return False
        model = str(state.get("model", ""))
        bare = self.model.split("/", 1)[1] if "/" in self.model else self.model
        return model in (self.model, bare, f"{self.provider}/{bare}")


#: The JSON scalar types, by exact type: a dict whose values are all of them holds no
#: dict or list, so its one C-level ``copy()`` shares nothing mutable with it.
JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def is_flat(message: dict[str, Any]) -> bool:
    """Does ``message`` hold no dict and no list (every value a JSON scalar)?"""
    return JSON_SCALARS.issuperset(map(type, message.values()))


def calls_only(message: dict[str, Any]) -> bool:
    """Are ``message``'s only dict or list its ``tool_calls``, a list of dicts each holding
    no dict or list but a flat ``function`` (what ``nested_tool_calls`` gives)?"""
    calls = message.get("tool_calls")
    if type(calls) is not list or not all(
        type(value) in JSON_SCALARS for key, value in message.items() if key != "tool_calls"
    ):
        return False
    return all(
        type(call) is dict and type(call.get("function")) is dict and is_flat(call["function"])
        and all(type(value) in JSON_SCALARS for key, value in call.items() if key != "function")
        for call in calls
    )


def to_provider_message(
    message: MessageRecord, identity: ProviderIdentity | None
) -> dict[str, Any]:
    """One raw message in the OpenAI/litellm chat format (tool calls nested).

    Provider-private state (reasoning, thinking blocks, signatures, provider output
    fields) goes only to the provider and model that produced it, minus the
    output-only fields (ADR 0017).
    """
    return converted((message,), identity)[0][0]


#: A provider message's shape (``projection.KnownFlat``): every value a JSON scalar, only the
#: ``calls_only`` tool calls, or anything else.
FLAT, CALLS, NESTED = 0, 1, 2


def shape_of(message: dict[str, Any]) -> int:
    """``message``'s shape, by looking at it."""
    if is_flat(message):
        return FLAT
    return CALLS if calls_only(message) else NESTED


def converted(
    records: Sequence[MessageRecord], identity: ProviderIdentity | None
) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """``to_provider_message`` of each record, and the indexes of the ones holding only
    ``calls_only`` tool calls and of the ones holding any other dict or list.

    The shape is decided while a message is built, from the values copied into it (the
    builder records it: a second scan of every message made a cold conversion half as
    dear again, ADR 0098); one loop for all records, as a call per message costs more
    than the decision.
    """
    messages: list[dict[str, Any]] = []
    calls_at: list[int] = []
    nested_at: list[int] = []
    for message in records:
        role = message["role"]
        content = message["content"]
        state = message.get("provider_state")
        matched = identity is not None and identity.matches(state)
        out: dict[str, Any] = {"role": role}
        if role == "assistant":
            calls = message["tool_calls"]
            out["content"] = content if content not in (None, "") or not calls else None
            if out["content"] is None and not calls:
                out["content"] = ""
            if out["content"] == "" and state:
                out["content"] = _stand_in_content(state.get("data") or {}, matched)
            if calls:
                out["tool_calls"] = nested_tool_calls(
                    calls, state.get("tool_call_fields") if matched and state else None
                )
        else:
            out["content"] = content if content is not None else ""
        flat = type(role) in JSON_SCALARS and type(out["content"]) in JSON_SCALARS
        if role == "tool":
            out["tool_call_id"] = value = message["tool_call_id"]
            flat = flat and type(value) in JSON_SCALARS
        if value := message.get("name"):
            out["name"] = value
            flat = flat and type(value) in JSON_SCALARS
        if matched:
            assert state is not None
            if message.get("reasoning"):
                out["reasoning_content"] = message["reasoning"]
            for key, value in (state.get("data") or {}).items():
                if key not in OUTPUT_ONLY_FIELDS:
                    out[key] = value
            shape = shape_of(out)  # (provider state: any shape, so looked at whole)
        elif not flat:
            shape = NESTED
        elif "tool_calls" not in out:
            shape = FLAT
        else:
            # (each call as ``nested_tool_calls`` builds it without private fields: an
            # id, a type, and a function of name and arguments)
            shape = CALLS
            for call in out["tool_calls"]:
                function = call["function"]
                if not (type(call["id"]) in JSON_SCALARS and type(function["name"]) in JSON_SCALARS
                        and type(function["arguments"]) in JSON_SCALARS):
                    shape = NESTED
                    break
        if shape:
            (calls_at if shape == CALLS else nested_at).append(len(messages))
        messages.append(out)
    return messages, calls_at, nested_at


def _stand_in_content(data: dict[str, Any], matched: bool) -> str:
    """What an assistant message without content said: an audio reply's transcript,
    or (for providers that do not get the ``refusal`` field itself) the refusal."""
    audio = data.get("audio")
    transcript = audio.get("transcript") if isinstance(audio, dict) else None
    if isinstance(transcript, str) and transcript:
        return transcript
    refusal = data.get("refusal")
    if not matched and isinstance(refusal, str):
        return refusal
    return ""
