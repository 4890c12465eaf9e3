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

    def decode_values(self, data: bytes) -> Any:
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
