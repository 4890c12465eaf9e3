"""Message value objects (frozen pydantic models) and their stored form.

Input accepts the contract's flat tool-call shape and OpenAI's nested one. A message
is validated here, at the boundary; the aggregate then checks the rules that need
session state (a tool result must answer an open call of the same session).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import InvalidMessage

Role = Literal["user", "assistant", "tool", "system"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")


MAX_DEPTH = 64
MAX_INT = 2**62


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH, where: str = "") -> str | None:
    """Why ``value`` cannot be stored and echoed as portable JSON, or None.

    Rejects lone surrogates (not encodable as UTF-8), NaN/Infinity, integers beyond
    64-bit storage, non-string keys and nesting deeper than ``max_depth``.
    """
    if _plainly_fine(value, max_depth):
        return None
    problem = _json_problem(value, max_depth, where)
    if problem is not None and len(problem) > 200:
        problem = problem[:90] + " ... " + problem[-90:]
    return problem


def _plainly_fine(value: Any, depth_left: int) -> bool:
    """True when ``value`` is built of exact JSON types only and passes every check.

    The common case (every message is checked) without the paths the full walk keeps
    for its message; False sends the value to that walk, which has the last word.
    """
    kind = type(value)
    if kind is str:
        return _text_ok(value)
    if kind is dict:
        if depth_left <= 0:
            return False
        for key, child in value.items():
            if type(key) is not str or not (key.isascii() or _text_ok(key)):
                return False
            child_kind = type(child)
            if child_kind is str:  # inline: most values are strings, most of them ASCII
                if not (child.isascii() or _text_ok(child)):
                    return False
            elif child is not None and child_kind is not bool and not _plainly_fine(child, depth_left - 1):
                return False
        return True
    if kind is list or kind is tuple:
        if depth_left <= 0:
            return False
        for child in value:
            if type(child) is str:
                if not (child.isascii() or _text_ok(child)):
                    return False
            elif not _plainly_fine(child, depth_left - 1):
                return False
        return True
    if value is None or kind is bool:
        return True
    if kind is int:
        return -MAX_INT <= value <= MAX_INT
    if kind is float:
        return value == value and value not in (float("inf"), float("-inf"))
    return False


def _text_ok(text: str) -> bool:
    """Encodable as UTF-8 (no lone surrogates); ASCII is decided without encoding."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_problem(value: Any, max_depth: int, where: str) -> str | None:
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth, path = pop()
        kind = type(item)
        if kind is str:
            if not _text_ok(item):
                return f"{path or 'value'} is not valid Unicode (lone surrogate)"
        elif kind is dict or kind is list or kind is tuple:
            if depth >= max_depth:
                return f"{path or 'value'} is nested deeper than {max_depth} levels"
            pairs = item.items() if kind is dict else enumerate(item)
            for key, child in pairs:
                if kind is dict:
                    if type(key) is not str:
                        return f"{path or 'value'} has a non-string key"
                    if not _text_ok(key):
                        return f"{path or 'value'} has a key that is not valid Unicode"
                if type(child) is str and child.isascii():
                    continue  # the common case, decided without a stack round trip
                push((child, depth + 1, f"{path}.{key}" if path else str(key)))
        elif item is None or kind is bool:
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_INT:
                return f"{path or 'value'} is too large an integer"
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{path or 'value'} is not a finite number"
        elif isinstance(item, (dict, list, tuple)):
            push((dict(item) if isinstance(item, dict) else list(item), depth, path))
        elif isinstance(item, BaseModel):
            push((item.model_dump(), depth, path))
    return None


class _Frozen(BaseModel):
    # Schemas are built on first use, not at import: `ctxc` starts without building
    # validators for models a command never touches (ADR 0016).
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False, defer_build=True)


class ToolCall(_Frozen):
    """One tool call of an assistant message. ``arguments`` is the provider's JSON text."""

    id: str = Field(min_length=1, max_length=512)
    name: str = Field(min_length=1, max_length=512)
    arguments: str = ""

    @model_validator(mode="before")
    @classmethod
    def _accept_openai_shape(cls, data: Any) -> Any:
        # OpenAI: {"id", "type": "function", "function": {"name", "arguments"}}
        if isinstance(data, dict) and "function" in data:
            fn = data.get("function")
            if not isinstance(fn, dict):
                return data
            out = {k: v for k, v in data.items() if k not in ("function", "type")}
            out.setdefault("name", fn.get("name"))
            out.setdefault("arguments", fn.get("arguments", ""))
            if data.get("type", "function") != "function":
                out["type"] = data["type"]  # rejected by extra="forbid": only functions exist
            return out
        if isinstance(data, dict) and data.get("type") == "function":
            return {k: v for k, v in data.items() if k != "type"}
        return data

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_text(cls, value: Any) -> Any:
        if value is None:
            return ""
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

    ``data`` is merged verbatim into the provider message, but only when the request
    goes to the same provider and model that produced it (spec §5.11).
    """

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    data: dict[str, Any] = Field(default_factory=dict)


Content = str | tuple[ContentPart, ...] | None


class Message(_Frozen):
    """A chat message as a host appends it (CONTRACT.md "Message (input)")."""

    role: Role
    content: str | tuple[ContentPart, ...] | None = None
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=512)
    name: str | None = Field(default=None, max_length=512)
    turn_id: str | None = Field(default=None, min_length=1, max_length=512)
    steering: bool = False
    provider_state: ProviderState | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        problem = json_problem(data)
        if problem:
            raise ValueError(problem)
        if isinstance(data, dict) and "reasoning_content" in data:
            data = dict(data)
            value = data.pop("reasoning_content")
            if data.get("reasoning") is None:
                data["reasoning"] = value
        if isinstance(data, dict) and data.get("tool_calls") is None and "tool_calls" in data:
            data = dict(data)
            data["tool_calls"] = ()
        return data

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
        if self.role in ("user", "system") and not _has_content(self.content):
            raise ValueError(f"a {self.role} message needs non-empty content")
        if self.role == "assistant" and not (
            _has_content(self.content) or self.tool_calls or self.reasoning
        ):
            raise ValueError("an assistant message needs content, reasoning or tool_calls")
        if len(self.tool_calls) > 1 and len({c.id for c in self.tool_calls}) != len(self.tool_calls):
            raise ValueError("tool call ids repeat within one message")
        return self

    def to_record(self) -> dict[str, Any]:
        """The message as plain JSON values: the payload of ``MessageAppended``."""
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
            "provider_state": (
                self.provider_state.model_dump() if self.provider_state is not None else None
            ),
        }


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
