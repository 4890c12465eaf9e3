"""Event serialization: eventsourcing's JSON transcoder, made safe for user data.

eventsourcing's ``JSONTranscoder`` decodes any JSON object with exactly the keys
``_type_`` and ``_data_`` as a custom type. Message content, tool arguments and
provider state come from hosts (and attackers), so such an object inside a message
would make the session's events undecodable: a stored session could never be loaded
again. Objects of that shape are escaped on the way in and restored on the way out.

Datetime subclasses (freezegun's ``FakeDatetime``) are stored like datetimes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Transcoding

_ESCAPED = "ctxc_escaped_object"


class _EscapedObject(Transcoding):
    type = type("_Unused", (), {})  # never looked up by type: escaping is explicit
    name = _ESCAPED

    def encode(self, obj: Any) -> Any:  # pragma: no cover - see _escape()
        raise NotImplementedError

    def decode(self, data: list[list[Any]]) -> dict[str, Any]:
        return {key: value for key, value in data}


def _escape(obj: Any) -> Any:
    if isinstance(obj, dict):
        changed = False
        new: dict[str, Any] = {}
        for key, value in obj.items():
            escaped = _escape(value)
            changed = changed or escaped is not value
            new[key] = escaped
        if len(obj) == 2 and "_type_" in obj and "_data_" in obj:
            return {"_type_": _ESCAPED, "_data_": [[k, v] for k, v in new.items()]}
        return new if changed else obj
    if isinstance(obj, (list, tuple)):
        items = [_escape(v) for v in obj]
        if any(a is not b for a, b in zip(items, obj, strict=True)):
            return items
        return obj
    return obj


#: Where user-controlled objects can appear: message fields in events, and the two
#: aggregate attributes keyed by user ids in snapshots. Everything else is ours, so
#: the (comparatively slow) escape walk stays off large snapshots.
_EVENT_USER_KEYS = ("content", "tool_calls", "provider_state")
_SNAPSHOT_USER_KEYS = ("open_calls", "recent_commands")


def _escape_user_values(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return _escape(obj)
    state = obj.get("state")
    if isinstance(state, dict) and "topic" in obj:  # a snapshot: {timestamp, topic, state}
        keys, target = _SNAPSHOT_USER_KEYS, state
    else:
        keys, target = _EVENT_USER_KEYS, obj
    changed = {k: _escape(target[k]) for k in keys if k in target}
    if all(changed[k] is target[k] for k in changed):
        return obj
    if target is obj:
        return {**obj, **changed}
    return {**obj, "state": {**state, **changed}}


class SafeJSONTranscoder(JSONTranscoder):
    def __init__(self) -> None:
        super().__init__()
        self.register(_EscapedObject())
        self._datetime = DatetimeAsISO()

    def encode(self, obj: Any) -> bytes:
        return super().encode(_escape_user_values(obj))

    def _encode_obj(self, o: Any) -> dict[str, Any]:
        if isinstance(o, datetime) and type(o) not in self.types:
            return {"_type_": self._datetime.name, "_data_": self._datetime.encode(o)}
        return super()._encode_obj(o)
