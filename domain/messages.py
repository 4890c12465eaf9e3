"""Message value objects (frozen pydantic models) and their stored form.

A message is accepted as a provider returns it: a litellm ``Message`` object, its
``model_dump()`` / ``dict()``, or plain JSON, with OpenAI's nested tool calls or the
contract's flat ones. Provider output fields beyond the portable chat fields are kept
and bound to the provider and model that produced them (ADR 0017). A message is
validated here, at the boundary; the aggregate then checks the rules that need session
state (a tool result must answer an open call of the same session).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from .errors import InvalidMessage
# (the portable-JSON checks moved to their own module; their names stay importable here)
from .portable_json import MAX_DEPTH, MAX_INT, _json_problem, _plainly_fine, json_problem
from .toolcalls import TOOL_CALL_JSON_SCHEMA, nested_tool_calls

Role = Literal["user", "assistant", "tool", "system", "developer"]

#: Validation context key: the caller has checked the whole input with ``json_problem``
#: (the JSON edge checks the command it parsed), so each message need not walk itself
#: again. That check is at least as strict: a message inside a command sits two levels
#: deeper against the same depth limit (ADR 0056).
#: Only this very object counts (by identity): a host that validates a command with a
#: context of its own, even one holding the same key, still has every message checked
#: (review wave 3).
PORTABLE_CHECKED = "portable_json_checked"
PORTABLE_CHECKED_CONTEXT: Mapping[str, Any] = MappingProxyType({PORTABLE_CHECKED: True})

#: Provider output fields of an assistant message beyond the portable chat fields
#: (OpenAI, litellm, Anthropic). Kept verbatim in ``provider_state.data``, bound to the
#: provider and model that produced the message, and replayed only to them (spec §5.11).
PROVIDER_FIELDS: tuple[str, ...] = (
    "thinking_blocks",
    "provider_specific_fields",
    "reasoning_items",
    "refusal",
    "function_call",
    "annotations",
    "audio",
    "images",
)
#: Output-only fields: kept in the history, never sent back to any provider (OpenAI's
#: input schema has no ``annotations``; an ``audio`` id expires, and replaying it later
#: would fail the request; ``images`` are generated output). ADR 0017.
OUTPUT_ONLY_FIELDS: frozenset[str] = frozenset({"annotations", "audio", "images"})


__all__ = [
    "MAX_DEPTH",
    "MAX_INT",
    "OUTPUT_ONLY_FIELDS",
    "PORTABLE_CHECKED",
    "PORTABLE_CHECKED_CONTEXT",
    "PROVIDER_FIELDS",
    "ContentPart",
    "Message",
    "MessageRecord",
    "ProviderState",
    "ToolCall",
    "_json_problem",
    "_plainly_fine",
    "json_problem",
    "nested_tool_calls",
    "parse_message",
]


class _Frozen(BaseModel):
    # Schemas are built on first use, not at import: `ctxc` starts without building
    # validators for models a command never touches (ADR 0016).
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False, defer_build=True)


class ToolCall(_Frozen):
    """One tool call of an assistant message; ``arguments`` is the provider's JSON text.

    Accepted in OpenAI's nested form (what providers and litellm return) or the flat
    form; always given out nested (:func:`nested_tool_calls`). ``private`` holds the
    call's provider-private fields (e.g. Gemini's thought signature in
    ``provider_specific_fields``), replayed only to the producer. A streaming ``index``
    is dropped: it means nothing once the message is complete.
    """

    id: str = Field(min_length=1, max_length=512)
    name: str = Field(min_length=1, max_length=512)
    arguments: str = ""
    private: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_provider_shapes(cls, data: Any) -> Any:
        if isinstance(data, BaseModel) and not isinstance(data, ToolCall):
            data = data.model_dump()  # litellm's ChatCompletionMessageToolCall
        if not isinstance(data, dict):
            return data
        kind = data.get("type")
        if kind not in (None, "function"):
            raise ValueError(f"tool call type {kind!r} is not supported (only 'function')")
        fn = data.get("function")
        if isinstance(fn, BaseModel):
            fn = fn.model_dump()
        private: dict[str, Any] = {}
        if fn is not None:
            if not isinstance(fn, dict):
                raise ValueError("a tool call's 'function' must be an object")
            name, arguments = fn.get("name"), fn.get("arguments")
            if _private_fields(fn) is not None:
                private["function"] = {"provider_specific_fields": fn["provider_specific_fields"]}
        else:
            name, arguments = data.get("name"), data.get("arguments")
        if _private_fields(data) is not None:
            private["provider_specific_fields"] = data["provider_specific_fields"]
        out = {"id": data.get("id"), "name": name, "arguments": "" if arguments is None else arguments}
        if private:
            out["private"] = private
        return out

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        # What the validator accepts, not the stored shape: nested first (what we give
        # out), the flat form as an alternative.
        return TOOL_CALL_JSON_SCHEMA


def _private_fields(data: dict[str, Any]) -> dict[str, Any] | None:
    """A tool call's ``provider_specific_fields``: an object or absent, as its schema
    says (anything else would be stored and replayed to the provider)."""
    value = data.get("provider_specific_fields")
    if value is not None and not isinstance(value, dict):
        raise ValueError("a tool call's 'provider_specific_fields' must be an object")
    return value


class ImageUrl(_Frozen):
    url: str = Field(min_length=1)
    detail: str | None = None


class ContentPart(_Frozen):
    """A part of multi-part content (text, image, audio, file), OpenAI shaped."""

    type: Literal["text", "image_url", "input_audio", "file"]
    text: str | None = None
    image_url: ImageUrl | None = None
    input_audio: dict[str, Any] | None = None
    file: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _payload_matches_type(self) -> ContentPart:
        payload = getattr(self, self.type)
        if payload is None:
            raise ValueError(f"content part of type {self.type!r} needs a {self.type!r} field")
        others = [f for f in ("text", "image_url", "input_audio", "file") if f != self.type]
        if any(getattr(self, f) is not None for f in others):
            raise ValueError(f"content part of type {self.type!r} carries a foreign field")
        return self


class ProviderState(_Frozen):
    """Provider-private message fields (thinking blocks, signatures, ...).

    ``data`` is merged into the provider message (minus the output-only fields), and
    ``tool_call_fields`` (call id → fields) into its tool calls, but only when the
    request goes to the same provider and model that produced it (spec §5.11).
    """

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    data: dict[str, Any] = Field(default_factory=dict)
    tool_call_fields: dict[str, dict[str, Any]] = Field(default_factory=dict)


Content = str | tuple[ContentPart, ...] | None

_Objects = tuple[dict[str, Any], ...] | None


class Message(_Frozen):
    """A chat message as a host appends it (CONTRACT.md "Message (input)").

    Besides the portable chat fields, an assistant message carries whatever output
    fields its provider returned (:data:`PROVIDER_FIELDS`); unknown fields of an
    assistant message are dropped, on other roles they are refused (ADR 0017).
    """

    role: Role
    content: str | tuple[ContentPart, ...] | None = None
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=512)
    name: str | None = Field(default=None, max_length=512)
    turn_id: str | None = Field(default=None, min_length=1, max_length=512)
    steering: bool = False
    pinned: bool = False
    """Pin it at append time (issue 16): kept verbatim after the summary block. Not a
    field of the stored message: the pin is its own event (``MessagesPinned``)."""
    provider_state: ProviderState | None = None
    thinking_blocks: _Objects = None
    provider_specific_fields: dict[str, Any] | None = None
    reasoning_items: _Objects = None
    refusal: str | None = None
    function_call: dict[str, Any] | None = None
    annotations: _Objects = None
    audio: dict[str, Any] | None = None
    images: _Objects = None
    reasoning_content: str | None = Field(default=None, description="litellm's name for `reasoning`")
    """litellm's spelling of ``reasoning``: given, it also marks the reasoning as provider
    output, bound to its producer like the other provider fields (ADR 0017). Never
    stored itself (the record keeps ``reasoning``)."""

    @model_validator(mode="before")
    @classmethod
    def _provider_shapes(cls, data: Any, info: ValidationInfo) -> Any:
        if type(data) is not dict and isinstance(data, BaseModel) and not isinstance(data, Message):
            data = data.model_dump()  # a litellm Message, as the provider returned it
        if info.context is not PORTABLE_CHECKED_CONTEXT:
            problem = json_problem(data)
            if problem:
                raise ValueError(problem)
        if not isinstance(data, dict) or data.keys() <= _PLAIN_KEYS and data.get("tool_calls", ()) is not None:
            return data
        data = dict(data)
        if "reasoning_content" in data:  # litellm's name for the provider's reasoning text
            if data.get("reasoning") is None and data.get("role") == "assistant":
                data["reasoning"] = data["reasoning_content"]
            elif data.get("reasoning") is None:
                data["reasoning"] = data.pop("reasoning_content")
            else:
                del data["reasoning_content"]
        if "tool_calls" in data and data["tool_calls"] is None:
            data["tool_calls"] = ()
        if data.get("role") == "assistant":
            # A provider produced it: never refuse it for a field we do not know.
            for key in [k for k in data if k not in _INPUT_KEYS]:
                del data[key]
        return data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        # What the validator accepts, not only the fields: a provider message's JSON as
        # litellm gives it (``tool_calls: null``, fields we do not know on an assistant
        # message); other roles stay strict.
        json_schema = handler(core_schema)
        schema = handler.resolve_ref_schema(json_schema)
        properties = schema["properties"]
        calls = properties["tool_calls"]
        properties["tool_calls"] = {
            "title": calls.pop("title"), "default": calls.pop("default"), "anyOf": [calls, {"type": "null"}]
        }
        del schema["additionalProperties"]
        schema["if"] = {"properties": {"role": {"not": {"const": "assistant"}}}}
        schema["then"] = {"properties": {name: True for name in properties}, "additionalProperties": False}
        return json_schema

    @model_validator(mode="after")
    def _role_rules(self) -> Message:
        if self.role != "assistant" and self.tool_calls:
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool":
            if self.tool_call_id is None:
                raise ValueError("a tool message needs tool_call_id")
            if self.content is None:
                raise ValueError("a tool message needs content (use '' for empty output)")
        elif self.tool_call_id is not None:
            raise ValueError("only tool messages carry tool_call_id")
        if self.steering and self.role != "user":
            raise ValueError("only user messages can be steering messages")
        if self.role in ("user", "system", "developer") and not _has_content(self.content):
            raise ValueError(f"a {self.role} message needs non-empty content")
        if self.role != "assistant" and not _PROVIDER_FIELD_SET.isdisjoint(self.model_fields_set):
            carried = [f for f in PROVIDER_FIELDS if getattr(self, f) is not None]
            if carried:
                raise ValueError(f"only assistant messages carry {carried[0]}")
        if len(self.tool_calls) > 1 and len({c.id for c in self.tool_calls}) != len(self.tool_calls):
            raise ValueError("tool call ids repeat within one message")
        return self

    def _provider_output(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The provider output fields (name → JSON value) and tool calls' private fields."""
        data = {}
        given = self.model_fields_set  # (the common case, nothing given, costs one check)
        if not _PROVIDER_FIELD_SET.isdisjoint(given):
            for name in PROVIDER_FIELDS:
                value = getattr(self, name) if name in given else None
                if value is not None:
                    data[name] = list(value) if isinstance(value, tuple) else value
        calls = {c.id: c.private for c in self.tool_calls if c.private} if self.tool_calls else {}
        return data, calls

    def to_record(self, producer: tuple[str, str] | None = None) -> dict[str, Any]:
        """The message as plain JSON values: the payload of ``MessageAppended``.

        ``producer`` (provider, model) is who produced the message: provider output
        fields without an explicit ``provider_state`` are bound to it.
        """
        return {
            "role": self.role,
            "content": _content_to_json(self.content),
            "reasoning": self.reasoning,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ],
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "turn_id": self.turn_id,
            "steering": self.steering,
            "provider_state": self._provider_state(producer),
        }

    @property
    def has_provider_output(self) -> bool:
        """Provider output fields that need a producer (no explicit ``provider_state``)?"""
        if self.role != "assistant" or self.provider_state is not None:
            return False
        data, calls = self._provider_output()
        return bool(data or calls) or self.reasoning_content is not None

    def _provider_state(self, producer: tuple[str, str] | None) -> dict[str, Any] | None:
        state = self.provider_state
        if (
            state is None
            and not self.tool_calls
            and _PROVIDER_FIELD_SET.isdisjoint(self.model_fields_set)
            and self.reasoning_content is None
        ):
            return None  # the common case, decided without collecting anything
        data, calls = self._provider_output()
        if state is None and not data and not calls and self.reasoning_content is None:
            return None
        if state is not None:
            provider, model = state.provider, state.model
            data = {**data, **state.data}
            calls = {**calls, **state.tool_call_fields}
        else:
            provider, model = producer or ("unknown", "unknown")
        out: dict[str, Any] = {"provider": provider, "model": model, "data": data}
        if calls:
            out["tool_call_fields"] = calls
        return out


_PROVIDER_FIELD_SET = frozenset(PROVIDER_FIELDS)
_PLAIN_KEYS = frozenset(
    ("role", "content", "reasoning", "tool_calls", "tool_call_id", "name", "turn_id", "steering", "provider_state",
     "pinned")
)
_INPUT_KEYS = frozenset(Message.model_fields)


def _has_content(content: Content) -> bool:
    if content is None:
        return False
    if isinstance(content, str):
        return content != ""
    return len(content) > 0


def _content_to_json(content: Content) -> str | list[dict[str, Any]] | None:
    if content is None or isinstance(content, str):
        return content
    return [p.model_dump(exclude_none=True) for p in content]


def parse_message(data: Any, index: int | None = None) -> Message:
    """Validate one input message; a failure is an ``InvalidMessage``."""
    try:
        return Message.model_validate(data)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        where = f"message {index}" if index is not None else "message"
        raise InvalidMessage(f"{where} is invalid: {_first_error(exc)}") from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        msg = str(first.get("msg", "invalid"))
        return f"{loc}: {msg}" if loc else msg
    return str(exc)


class MessageRecord(TypedDict):
    """A raw-log message as stored: ``Message.to_record()`` plus seq, created_at, visible.

    A plain dict (not a model) because projections of long sessions handle thousands.
    """

    seq: int
    role: str
    content: str | list[dict[str, Any]] | None
    reasoning: str | None
    tool_calls: list[dict[str, Any]]
    tool_call_id: str | None
    name: str | None
    turn_id: str | None
    steering: bool
    provider_state: dict[str, Any] | None
    created_at: str
    visible: bool
