"""eventsourcing's in-memory recorder, projecting the read model in the events'
critical section (as ``ProjectingSQLiteRecorder`` does in their transaction).

Only public names of the library: ``insert_events`` is overridden around ``super()``,
and the writer lock is our own re-entrant lock, held by every insert and by
``locked_writer`` (the path of a command that lost a race, ADR 0021) and by every read
of the read model, so a reader never sees events without their rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.popo import POPOAggregateRecorder, POPOApplicationRecorder

from context_compaction.domain.session import Session

from ..readmodel.handlers import EventHandlers
from .tables import Tables


class MemoryLockedWriter:
    """The ``LockedWriter`` of the memory backend: holding the recorder's writer lock."""

    def __init__(self, recorder: ProjectingMemoryRecorder) -> None:
        self.recorder = recorder

    def events_after(self, originator_id: UUID, version: int) -> list[StoredEvent]:
        return list(self.recorder.select_events(originator_id, gt=version))


class ProjectingMemoryRecorder(POPOApplicationRecorder):
    """Inserts a command's events, its read-model rows and its due snapshots as one
    step: a projection that fails (a host command id another command used) undoes its
    rows and inserts no event; a version already stored (a lost race) raises the
    library's ``IntegrityError`` and leaves the rows as they were."""

    def __init__(self) -> None:
        super().__init__()
        self.writer_lock = threading.RLock()
        self.tables = Tables()
        self.projector = EventHandlers()
        self.snapshot_recorder = POPOAggregateRecorder()

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        events = kwargs.get("projected_events")
        with self.writer_lock:
            first = (self.max_notification_id() or 0) + 1
            ids = list(range(first, first + len(stored_events)))
            with self.tables.transaction():
                if events is not None:
                    pairs = list(zip(ids, events, strict=True))
                    for notification_id, event, stored in zip(ids, events, stored_events):
                        if type(event) is Session.MessageAppended:
                            self.tables.put_body(notification_id, stored.state)
                    self.projector.apply_all(self.tables, pairs, strict=True)
                inserted = super().insert_events(stored_events, **kwargs)
            assert list(inserted or ()) == ids, "notification ids are assigned under the writer lock"
            snapshots = kwargs.get("snapshots")
            if snapshots:
                # After the events: a snapshot of a decision that lost its race is never kept.
                self.snapshot_recorder.insert_events(snapshots)
            return ids

    def reset_projection(self) -> None:
        """Empty read-model tables (a rebuild replays the events into them); the
        message bodies stay: they are the events' (what SQL joins from its events table)."""
        with self.writer_lock:
            self.tables.clear()
            self.projector.forget()

    @contextmanager
    def locked_writer(self) -> Iterator[MemoryLockedWriter]:
        with self.writer_lock:
            yield MemoryLockedWriter(self)
