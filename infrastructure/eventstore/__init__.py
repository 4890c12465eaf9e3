"""The event store: an eventsourcing ``Application`` whose recorder also projects.

``application`` (the Application, snapshots), ``internals`` (the projecting recorders
on the library's insert hooks: its three private names, ADR 0073), ``mapper``
(events to and from their stored form), ``store`` (the EventStore port, with the
repository's aggregate cache), ``build`` (``build_store``).
"""

from .application import SessionsApplication, snapshot_step
from .build import build_store
from .internals import LockedWriter
from .mapper import EventMapper
from .store import SqlEventStore

__all__ = [
    "EventMapper",
    "LockedWriter",
    "SessionsApplication",
    "SqlEventStore",
    "build_store",
    "snapshot_step",
]
