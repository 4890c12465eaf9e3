"""eventsourcing beneath its public API: one module, pinned to one release (ADR 0026).

``infrastructure/eventstore/internals/`` overrides and reads private names of
eventsourcing (its SQLite pool, the recorders' insert hooks, ``Application._record``
and ``_notify``). A new release may rename or change any of them without notice, so
these tests fail loudly on any other version than the one it was written for, and
check that each private name it declares still exists.
"""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version

from eventsourcing.utils import resolve_topic

from context_compaction.infrastructure.eventstore.internals import PRIVATE_NAMES, WRITTEN_FOR
from test_layering import LIBRARY_INTERNALS, ROOT, library_private_names, private_library_uses


def test_eventsourcing_is_the_release_the_internals_were_written_for() -> None:
    installed = version("eventsourcing")
    assert installed == WRITTEN_FOR, (
        f"eventsourcing {installed} is installed, but {LIBRARY_INTERNALS} was written for "
        f"{WRITTEN_FOR}: re-read each override there against the new release's source "
        "(pool, recorders' insert hooks, Application._record/_notify), run the storage "
        "and follower tests, then move WRITTEN_FOR"
    )


def _assigns(source: str, name: str) -> bool:
    """``source`` assigns ``self.<name>`` or declares it (``self._expire_at: float``)."""
    assigned = re.compile(rf"\bself\.{re.escape(name)}\b\s*(:[^=\n]*)?=(?!=)")
    declared = re.compile(rf"^\s*self\.{re.escape(name)}\s*:[^=\n]*$", re.MULTILINE)
    return bool(assigned.search(source) or declared.search(source))


def _defines(cls: type, name: str) -> bool:
    """A method or class attribute of ``cls``, or an attribute its code assigns or declares."""
    if hasattr(cls, name):
        return True
    return any(
        _assigns(inspect.getsource(klass), name)
        for klass in cls.__mro__
        if klass.__module__.startswith(("eventsourcing", "psycopg"))
    )


def test_an_assignment_or_a_declaration_counts_a_read_does_not() -> None:
    source = """
        self._set = 1
        self._typed: int = 2
        self._declared: float
        if self._set == 1 or self._compared == 2:
            print(self._read)
        return self._returned
    """
    assert [n for n in ("_set", "_typed", "_declared") if not _assigns(source, n)] == []
    assert [n for n in ("_compared", "_read", "_returned") if _assigns(source, n)] == []


def test_every_private_name_the_internals_declare_still_exists() -> None:
    missing = [
        f"{topic}.{name}"
        for topic, names in PRIVATE_NAMES.items()
        for name in names
        if not _defines(resolve_topic(topic), name)
    ]
    assert missing == []


def test_the_internals_declare_every_private_name_they_use() -> None:
    used = {
        use.split(":")[0]
        for module, uses in private_library_uses(ROOT, library_private_names()).items()
        if module.startswith(LIBRARY_INTERNALS)
        for use in uses
    }
    declared = {name for names in PRIVATE_NAMES.values() for name in names}
    assert used - declared == set()
    assert declared - used == set()


def test_the_fast_event_store_records_what_the_librarys_put_records() -> None:
    # ADR 0056: ``FastEventStore.put`` builds Recording and Notification objects by
    # setting their fields; equal to the library's own, on whatever release is pinned.
    from eventsourcing.domain import Aggregate
    from eventsourcing.persistence import DatetimeAsISO, EventStore, JSONTranscoder, Mapper, UUIDAsHex
    from eventsourcing.popo import POPOApplicationRecorder

    from context_compaction.infrastructure.eventstore.internals import FastEventStore

    class Dog(Aggregate):
        def __init__(self, name: str) -> None:
            self.name = name

        def bark(self, loud: bool) -> None:
            self.trigger_event(self.Barked, loud=loud)

        class Barked(Aggregate.Event):
            loud: bool

            def apply(self, aggregate: Aggregate) -> None:
                pass

    transcoder = JSONTranscoder()
    transcoder.register(UUIDAsHex())
    transcoder.register(DatetimeAsISO())
    dog = Dog("rex")
    dog.bark(True)
    dog.bark(False)
    events = dog.collect_events()
    ours = FastEventStore(Mapper(transcoder=transcoder), POPOApplicationRecorder()).put(events)
    theirs = EventStore(Mapper(transcoder=transcoder), POPOApplicationRecorder()).put(events)
    assert len(ours) == 3 and ours == theirs
    assert [type(r.notification) for r in ours] == [type(r.notification) for r in theirs]
    assert [r.notification.id for r in ours] == [1, 2, 3]
    assert [r.domain_event for r in ours] == events


def test_psycopg_pool_still_takes_and_returns_at_the_ends_newest_first_expects() -> None:
    """``NewestFirst`` (ADR 0067) overrides the two deque methods psycopg_pool calls on
    its idle connections, and relies on its return path discarding expired ones; its
    version is not pinned (``psycopg[pool]``), so a release that takes or returns
    otherwise must fail here, not silently reorder the pool."""
    from psycopg_pool import ConnectionPool

    assert "self._pool.popleft()" in inspect.getsource(ConnectionPool._get_ready_connection)
    assert "self._pool.popleft()" in inspect.getsource(ConnectionPool._shrink_pool)
    assert "self._pool.append(conn)" in inspect.getsource(ConnectionPool._add_to_pool)
    assert "conn._expire_at <= monotonic()" in inspect.getsource(ConnectionPool._return_connection)
    assert "conn = conns.pop()" in inspect.getsource(ConnectionPool.check)  # (which keeps the order)
    uses = re.findall(r"self\._pool\.(\w+)\(", inspect.getsource(inspect.getmodule(ConnectionPool)))
    assert set(uses) <= {"popleft", "append", "clear"}, set(uses)
