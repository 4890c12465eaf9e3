"""The three private names of eventsourcing this project uses (ADR 0073,
``docs/storage.md``); ``tests/unit/test_library_pin.py`` checks that each still exists
on the installed release and that no other is used:

* ``SQLiteApplicationRecorder._insert_events(c, stored_events, **kwargs)``: the insert
  hook the library's process recorder and ``searchablecontent`` example extend; ours
  then writes the read-model rows and due snapshots through the same cursor.
* ``PostgresApplicationRecorder._fetch_ids_after_insert_events(curs, stored_events,
  **kwargs)``: ``_insert_events`` runs before the events' INSERT, when the notification
  ids the read model's rows carry do not exist yet; this one runs after it, in the
  same transaction, under the events lock.
* ``Application._notify(recordings)``: how a ``Leader`` prompts its followers, after a
  command that lost a race was saved under the writer lock (ADR 0021) and committed.
"""

from __future__ import annotations

from typing import Any

from .postgres import postgres_recorder_class, without_inner_retries
from .sqlite import LockedWriter, ProjectingSQLiteRecorder

__all__ = [
    "PRIVATE_NAMES", "LockedWriter", "ProjectingSQLiteRecorder", "announce", "postgres_recorder_class",
    "without_inner_retries",
]

#: Every private library name used here, by the library class that defines it.
PRIVATE_NAMES: dict[str, tuple[str, ...]] = {
    "eventsourcing.sqlite:SQLiteApplicationRecorder": ("_insert_events",),
    "eventsourcing.postgres:PostgresApplicationRecorder": ("_fetch_ids_after_insert_events",),
    "eventsourcing.application:Application": ("_notify",),
}


def announce(app: Any, recordings: list[Any]) -> None:
    """Prompt ``app``'s followers (a ``Leader``'s) about recordings that have committed,
    as ``Application.save`` does after recording."""
    if recordings:
        app._notify(recordings)
