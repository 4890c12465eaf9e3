"""The in-memory backend (``database_url="memory://"``, ADR 0045): the application's
ports without a database, for hosts' tests and our handler unit tests.

The write side is the SQL backends' own code (``SessionsApplication``, ``SqlEventStore``,
the attempt log and the event feed) on eventsourcing's in-memory ("POPO") recorder, so
optimistic concurrency, snapshots, the repository cache and followers behave as on
SQLite. What differs is storage only: ``recorder`` (the recorder that projects in the
events' critical section, with the SQL backends' own handlers, ADR 0050), ``tables``
(the read-model tables as dicts, with an undo log, and the table operations those
handlers write with), ``readmodel`` (the ReadModel port), ``stores``
(token counts and the Timeline), ``build`` (``build_memory_store``).
"""

from .build import MemoryStorage, build_memory_store, memory_storage

__all__ = ["MemoryStorage", "build_memory_store", "memory_storage"]
