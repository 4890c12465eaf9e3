"""Our events to and from eventsourcing's stored form (ADR 0005, ADR 0022)."""

from __future__ import annotations

from functools import cache
from typing import Any
from uuid import UUID

from eventsourcing.domain import CanMutateAggregate, Snapshot
from eventsourcing.persistence import Mapper, StoredEvent
from eventsourcing.utils import get_topic

from context_compaction.domain.attempts import CompactionAttempts
from context_compaction.domain.errors import CorruptEvent
from context_compaction.domain.session import Session
from context_compaction.domain.session_snapshot import snapshot_problem

from ..transcoding import corrupt_event, field_checks, message_problem, required_fields


@cache
def _tables() -> tuple[dict[str, type], dict[type, Any], dict[type, Any]]:
    """The allow-list (stored topic → class: our own event classes and the snapshot) and
    each class's field checks, worked out once per process, not per bootstrap."""
    classes: dict[str, type] = {get_topic(Snapshot): Snapshot}
    for aggregate in (Session, CompactionAttempts):
        for value in vars(aggregate).values():
            if isinstance(value, type) and issubclass(value, CanMutateAggregate):
                classes[get_topic(value)] = value
    return (classes, {cls: required_fields(cls) for cls in classes.values()},
            {cls: field_checks(cls) for cls in classes.values()})


class EventMapper(Mapper[UUID]):
    """eventsourcing's ``Mapper`` and its stored form, without its generic per-event
    steps (no compressor or cipher, ADR 0005), decoding only our own classes (ADR 0022).

    A stored topic is looked up in an allow-list, never imported (eventsourcing would
    import any module a topic names). A row that does not decode into one of our
    classes with every field it needs is ``CorruptEvent``, naming aggregate and version.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.compressor is not None or self.cipher is not None:
            # Both paths skip them (and the read model reads states as plain JSON): a
            # mapper given one would store and read uncompressed, unencrypted states.
            raise ValueError("EventMapper stores states as plain JSON: it takes no compressor or cipher")
        self._classes, self._required, self._checks = _tables()
        self._aggregates = {get_topic(Session): Session}

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        cls = self._classes.get(stored_event.topic)
        if cls is None:
            raise self._corrupt(stored_event, "unknown event topic")
        try:
            event_state = self.transcoder.decode(stored_event.state)
        except Exception as exc:  # noqa: BLE001 - any undecodable row is the same fault
            raise self._corrupt(stored_event, f"state does not decode: {type(exc).__name__}") from None
        if not isinstance(event_state, dict):
            raise self._corrupt(stored_event, "state is not an object")
        event_state["originator_id"] = stored_event.originator_id
        event_state["originator_version"] = stored_event.originator_version
        class_version = getattr(cls, "class_version", 1)
        from_version = event_state.pop("class_version", 1)
        try:
            while from_version < class_version:
                getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(event_state)
                from_version += 1
        except Exception as exc:  # noqa: BLE001
            raise self._corrupt(stored_event, f"cannot upcast: {type(exc).__name__}") from None
        missing = self._required[cls] - event_state.keys()
        if missing:
            raise self._corrupt(stored_event, f"missing {', '.join(sorted(missing)[:4])}")
        for name, test in self._checks[cls]:
            if name in event_state and not test(event_state[name]):
                raise self._corrupt(stored_event, f"{name} has the wrong type")
        if cls is Session.MessageAppended:
            problem = message_problem(event_state)
            if problem is not None:
                raise self._corrupt(stored_event, problem)
        if cls is Snapshot:
            if self._aggregates.get(event_state["topic"]) is None:
                raise self._corrupt(stored_event, "snapshot of an unknown aggregate topic")
            problem = snapshot_problem(event_state["state"])
            if problem is not None:
                raise self._corrupt(stored_event, f"snapshot: {problem}")
        domain_event = object.__new__(cls)
        object.__setattr__(domain_event, "__dict__", event_state)
        return domain_event

    @staticmethod
    def _corrupt(stored_event: StoredEvent, problem: str) -> CorruptEvent:
        oid = stored_event.originator_id
        notification_id = getattr(stored_event, "id", None)
        return corrupt_event(
            problem,
            version=stored_event.originator_version,
            aggregate_id=oid.hex if isinstance(oid, UUID) else str(oid),
            notification_id=notification_id if isinstance(notification_id, int) else None,
        )

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        cls = type(domain_event)
        state = domain_event.__dict__.copy()
        stored = object.__new__(StoredEvent)  # a frozen dataclass: set its fields directly
        fields = stored.__dict__
        fields["originator_id"] = state.pop("originator_id")
        fields["originator_version"] = state.pop("originator_version")
        fields["topic"] = get_topic(cls)
        class_version = getattr(cls, "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        fields["state"] = self.transcoder.encode(state)
        return stored

