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

from datetime import datetime
from typing import Any

import orjson
from eventsourcing.persistence import Transcoder, Transcoding

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
