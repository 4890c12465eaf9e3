"""Typed access to what tests inspect behind a bus: the event-sourced application, its
recorder, the events table, the database, the memory backend's storage, the read model.

Tests read these to check what a command stored (or did not), to break a store on
purpose, or to run ``verify``. How a bus holds them is the bootstrap's business: this
module is the one place of the test suite that knows it, so a change there is one edit
here (issue 39)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from context_compaction.infrastructure.bootstrap import Store, store_of

if TYPE_CHECKING:
    from context_compaction.application.runtime.bus import MessageBus
    from context_compaction.application.contracts.ports import ReadModel
    from context_compaction.infrastructure.database import Database
    from context_compaction.infrastructure.eventstore.application import SessionsApplication
    from context_compaction.infrastructure.memory.build import MemoryStorage
    from context_compaction.infrastructure.readmodel import EventsTable
    from context_compaction.infrastructure.verify import VerifyReport


class Inspect:
    """What a test looks at behind one bus (``Inspect(bus)`` or ``harness.inspect``)."""

    def __init__(self, bus: MessageBus) -> None:
        self.bus = bus

    def _held(self) -> Store:
        return store_of(self.bus)

    @property
    def app(self) -> SessionsApplication:
        """The event-sourced application the bus writes through (every backend)."""
        return self._held().app

    @property
    def recorder(self) -> Any:
        """The application's event recorder (SQLite, PostgreSQL or memory)."""
        return self.app.recorder

    @property
    def events_table(self) -> EventsTable:
        """The stored events' table (its qualified name, id column, lag query)."""
        projector = self.app.projector
        assert projector is not None, "the memory backend has no events table"
        return projector.events_table

    @property
    def is_memory(self) -> bool:
        return self._held().memory is not None

    @property
    def db(self) -> Database:
        """The SQL database (SQLite or PostgreSQL); a memory bus has none."""
        assert not self.is_memory, "the memory backend has no SQL database"
        db: Database = self._held().db
        return db

    @property
    def memory(self) -> MemoryStorage:
        """The memory backend's tables (``memory://`` buses only)."""
        storage = self._held().memory
        assert storage is not None, "a SQL bus has no memory tables"
        return storage

    @property
    def read_model(self) -> ReadModel:
        return self.bus.services.read_model

    @property
    def read_only(self) -> str | None:
        """Why the store was opened read-only, or None (SQL buses)."""
        return self._held().read_only

    def verify(self) -> VerifyReport:
        """``verify``'s rebuild-and-compare of the read model (SQL buses)."""
        from context_compaction.infrastructure.verify import verify

        return verify(self.app, self.read_model)  # type: ignore[arg-type]
