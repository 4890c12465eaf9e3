"""Event serialization: plain JSON (orjson), never interpreting user data (ADR 0005).

eventsourcing's ``JSONTranscoder`` marks non-JSON values as ``{"_type_", "_data_"}``
objects and decodes every such object back through a hook. Message content, tool
arguments and provider state come from hosts (and attackers), so an object of that
shape inside a message would be misread — a stored session could become undecodable.
This transcoder stores plain JSON instead and restores the only non-JSON values our
events hold — datetimes — at the fields where they are known to be. User data is
stored and returned exactly as given, whatever its shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson
from eventsourcing.persistence import Transcoder, Transcoding

from context_compaction.domain.errors import CorruptEvent

# Fields holding datetimes: every event's ``timestamp``; a snapshot's ``timestamp`` and
# the aggregate's ``_created_on`` / ``_modified_on`` inside its ``state``.
_SNAPSHOT_DATETIMES = ("_created_on", "_modified_on")


def _default(value: Any) -> Any:
    if isinstance(value, datetime):  # includes subclasses such as freezegun's FakeDatetime
        return value.isoformat()
    raise TypeError(f"cannot store {type(value).__name__} in an event")


def _as_datetime(value: Any) -> Any:
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    if isinstance(value, dict) and value.get("_type_") == "datetime_iso":  # written by JSONTranscoder
        return datetime.fromisoformat(value["_data_"])
    return value


class PlainJSONTranscoder(Transcoder):
    """Implements eventsourcing's ``Transcoder`` for our events and snapshots."""

    def register(self, transcoding: Transcoding) -> None:
        """Nothing to register: no custom types are stored."""

    def encode(self, obj: Any) -> bytes:
        return orjson.dumps(obj, default=_default)

    @staticmethod
    def decode_values(data: bytes) -> Any:
        """The stored JSON as is (datetime fields stay ISO strings)."""
        return orjson.loads(data)

    def decode(self, data: bytes) -> Any:
        obj = orjson.loads(data)
        if isinstance(obj, dict):
            if "timestamp" in obj:
                obj["timestamp"] = _as_datetime(obj["timestamp"])
            state = obj.get("state")
            if isinstance(state, dict) and "topic" in obj:
                for key in _SNAPSHOT_DATETIMES:
                    if key in state:
                        state[key] = _as_datetime(state[key])
        return obj


def corrupt_event(
    problem: str,
    *,
    version: int | None,
    session_id: str | None = None,
    aggregate_id: str | None = None,
    notification_id: int | None = None,
) -> CorruptEvent:
    """The error for a stored event that cannot be read: it names the row (session or
    aggregate, version) and the problem, never the content."""
    where = f"session {session_id!r}" if session_id is not None else f"aggregate {aggregate_id}"
    details: dict[str, Any] = {"version": version, "problem": problem}
    for key, value in (
        ("session_id", session_id),
        ("aggregate_id", aggregate_id),
        ("notification_id", notification_id),
    ):
        if value is not None:
            details[key] = value
    return CorruptEvent(
        f"the stored event at version {version} of {where} is damaged ({problem}); "
        "`ctxc verify` lists every damaged row",
        details=details,
    )


def naming_session(exc: CorruptEvent, session_id: str) -> CorruptEvent:
    """``exc`` (raised where only the aggregate id was known) naming the session."""
    if "session_id" in exc.details:
        return exc
    return corrupt_event(
        exc.details.get("problem", "unreadable"),
        version=exc.details.get("version"),
        session_id=session_id,
        aggregate_id=exc.details.get("aggregate_id"),
        notification_id=exc.details.get("notification_id"),
    )


def required_fields(cls: type) -> frozenset[str]:
    """What a stored state must hold for event class ``cls`` (the originator id and
    version come from the row itself)."""
    return frozenset(
        f.name
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        and f.name not in ("originator_id", "originator_version")
    )


# ----------------------------------------------------------- stored types (ADR 0022)
# A row can hold valid JSON of the wrong shape (a seq stored as text, tool calls as an
# object): decoded as is, it fails later as a TypeError deep in a command, or is served.
# Each event field is checked against its annotation (events store plain JSON, so a
# handful of spellings cover every field) before the event is used.
def _optional(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or test(value)


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_ranges(value: Any) -> bool:
    return type(value) is list and all(
        type(r) is list and len(r) == 2 and type(r[0]) is int and type(r[1]) is int for r in value
    )


_TYPE_TESTS: dict[str, Callable[[Any], bool] | None] = {
    "str": _is_str,
    "str | None": _optional(_is_str),
    "int": _is_int,
    "int | None": _optional(_is_int),
    "bool": lambda value: type(value) is bool,
    "datetime": lambda value: isinstance(value, datetime),
    "dict[str, Any]": lambda value: type(value) is dict,
    "dict[str, Any] | None": _optional(lambda value: type(value) is dict),
    "list[dict[str, Any]]": lambda value: type(value) is list and all(type(v) is dict for v in value),
    "list[int]": lambda value: type(value) is list and all(_is_int(v) for v in value),  # (pinned seqs)
    "list[list[int]]": _is_ranges,  # (invalidated seq ranges: [first, last] pairs)
    "list[int]": lambda value: type(value) is list and all(type(v) is int for v in value),
    "list[str]": lambda value: type(value) is list and all(type(v) is str for v in value),
    "Any": None,
}


def field_checks(cls: type) -> tuple[tuple[str, Callable[[Any], bool]], ...]:
    """(field, test) for every stored field of event class ``cls``.

    An annotation not in the table fails here, at start: a new field type gets a test.
    """
    checks = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in ("originator_id", "originator_version"):
            continue  # (from the row, not the state)
        annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if annotation not in _TYPE_TESTS:
            raise TypeError(f"no stored-type test for {cls.__qualname__}.{f.name}: {annotation}")
        test = _TYPE_TESTS[annotation]
        if test is not None:
            checks.append((f.name, test))
    return tuple(checks)


def message_problem(record: dict[str, Any]) -> str | None:
    """What makes a stored message (``MessageAppended`` state) unusable, or None.

    Beyond the field types: the inner shapes the projection, token counts and summaries
    read (content parts, flat tool calls, provider state). Texts name fields, never data.
    Runs for every message a restore reads: plain checks, no allocation.
    """
    get = record.get
    seq = get("seq")
    if type(seq) is not int or seq < 1:
        return "seq is not a positive integer"
    role = get("role")
    if type(role) is not str:
        return "missing role" if "role" not in record else "role is not a string"
    content = get("content")
    if content is not None and type(content) is not str:
        if type(content) is not list:
            return "content is neither text nor a list of parts"
        for part in content:
            if type(part) is not dict or type(part.get("type")) is not str:
                return "a content part has no type"
            text, image = part.get("text"), part.get("image_url")
            if text is not None and type(text) is not str:
                return "a content part's text is not a string"
            if image is not None and (type(image) is not dict or type(image.get("url", "")) is not str):
                return "a content part's image_url has no url"
    for name in _OPTIONAL_TEXT:
        value = get(name)
        if value is not None and type(value) is not str:
            return f"{name} is not a string"
    calls = get("tool_calls")
    if calls:
        if type(calls) is not list:
            return "tool_calls is not a list"
        for call in calls:
            if type(call) is not dict or type(call.get("id")) is not str or type(call.get("name")) is not str:
                return "a tool call has no id or name"
            arguments = call.get("arguments")
            if arguments is not None and type(arguments) is not str:
                return "a tool call's arguments are not text"
    state = get("provider_state")
    if state is not None:
        if type(state) is not dict or type(state.get("provider")) is not str or type(state.get("model")) is not str:
            return "provider_state names no provider and model"
        data, fields = state.get("data"), state.get("tool_call_fields")
        if data is not None and type(data) is not dict:
            return "provider_state data is not an object"
        if fields is not None and (type(fields) is not dict or any(type(v) is not dict for v in fields.values())):
            return "provider_state tool_call_fields is not an object of objects"
    return None


_OPTIONAL_TEXT = ("reasoning", "tool_call_id", "name", "turn_id")
