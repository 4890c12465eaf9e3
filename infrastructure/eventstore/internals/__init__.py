"""Where we extend eventsourcing (and psycopg_pool) beneath their public APIs: the only
package that does, one module per library part (``sqlite``, ``postgres``,
``application``, ``pool``).

Written for eventsourcing ``WRITTEN_FOR``; ``tests/unit/test_library_pin.py`` fails on any
other version and checks that every private name used here still exists. Before moving
the pin, re-read each override below against the new release's source.

* ``StatementCachingPool``: the SQLite pool's connection factory (``_create_connection``)
  and its writer lock (``_writer_lock``, ``_num_writers``, ``_closed``,
  ``_mutually_exclusive_read_write``); ``SQLiteFactory`` installs it (ADR 0016).
* The projecting recorders: SQLite's ``_insert_events`` hook (the library's own
  extension point, as in its ``searchablecontent`` example), PostgreSQL's
  ``_insert_stored_events``, ``_lock_table`` and ``_notify_channel`` (no NOTIFY);
  the snapshot recorder's inserts (SQLite: its ``_insert_events``; PostgreSQL: the
  events' own binary INSERT into its table, ADR 0057). The common PostgreSQL append
  is one round trip with the projection before the events lock (ADR 0053).
* ``FastSaveApplication``: ``Application.save`` minus its runtime Protocol checks,
  recording through the library's ``_record`` and announcing through ``_notify``, so
  followers and process applications see every event (ADR 0026).
* ``without_inner_retries``: the PostgreSQL reads undecorated (``__wrapped__``).
* ``FastEventStore``: the event store's public ``put``, building the library's frozen
  ``Recording`` and ``Notification`` dataclasses field by field (ADR 0056; the pin
  test compares its recordings with the library's own).
* ``newest_idle_first`` (``pool``): psycopg_pool's idle connections handed out newest
  first, an expired one before them (ADR 0067).
"""

from __future__ import annotations

from .application import FastEventStore, FastSaveApplication
from .pool import NewestFirst, newest_idle_first
from .postgres import postgres_recorder_class, without_inner_retries, without_redundant_lock_timeout
from .sqlite import LockedWriter, ProjectingSQLiteRecorder, SQLiteFactory, StatementCachingPool

__all__ = [
    "PRIVATE_NAMES",
    "WRITTEN_FOR",
    "FastEventStore",
    "FastSaveApplication",
    "LockedWriter",
    "NewestFirst",
    "ProjectingSQLiteRecorder",
    "SQLiteFactory",
    "StatementCachingPool",
    "newest_idle_first",
    "postgres_recorder_class",
    "without_inner_retries",
    "without_redundant_lock_timeout",
]

#: The eventsourcing release this package was written against.
WRITTEN_FOR = "9.5.6"

#: Every private library name this package uses, by the library class that defines
#: it (the pin test checks that each still exists there).
PRIVATE_NAMES: dict[str, tuple[str, ...]] = {
    "eventsourcing.persistence:ConnectionPool": (
        "_writer_lock", "_num_writers", "_closed", "_mutually_exclusive_read_write",
    ),
    "eventsourcing.sqlite:SQLiteConnectionPool": ("_create_connection",),
    "eventsourcing.sqlite:SQLiteAggregateRecorder": ("_insert_events",),
    "eventsourcing.sqlite:SQLiteApplicationRecorder": ("_insert_events",),
    "eventsourcing.postgres:PostgresApplicationRecorder": (
        "_insert_stored_events", "_lock_table", "_notify_channel",
    ),
    "eventsourcing.application:Application": ("_record", "_notify"),
    # (psycopg_pool's, which eventsourcing's PostgreSQL pool subclasses:
    # ``newest_idle_first``; the connections' ``_expire_at`` is set by the pool's code)
    "psycopg_pool.pool:ConnectionPool": ("_pool", "_lock"),
    "psycopg._connection_base:BaseConnection": ("_expire_at",),
    "eventsourcing.postgres:PostgresSubscription": (
        "_listen", "_recorder", "_has_been_stopped", "_thread_error", "_has_been_notified",
    ),
}
