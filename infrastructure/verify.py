"""``ctxc verify``: rebuild the read model from the events into a scratch database and
compare it, table by table, with the live one (DESIGN §5). Reports keys, never content."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteDatastore
from eventsourcing.utils import get_topic

from context_compaction.domain.errors import CorruptEvent
from context_compaction.domain.session import Session

from .database import Cur, Database, Dialect
from .readmodel import PROJECTED_TABLES, SCHEMA, EventsTable, ReadModelProjector, SqlReadModel
from .readmodel.projector import read_notifications
from .readmodel.schema import SEARCH_MARKS, TABLES
from .readmodel.search import INSERT_SQL as SEARCH_INSERT
from .readmodel.search import SearchRow, search_row

BATCH = 500


@dataclass
class TableDiff:
    live: int
    rebuilt: int
    missing: list[str] = field(default_factory=list)  # in the rebuild, not live
    extra: list[str] = field(default_factory=list)  # live, not in the rebuild
    different: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.different)


@dataclass
class DamagedRow:
    """A stored event that cannot be read (``corrupt_event``): where, and why. A damaged
    snapshot (no notification id) is skipped when loading: the events are replayed."""

    notification_id: int | None
    session_id: str | None
    aggregate_id: str
    version: int
    problem: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def text(self) -> str:
        owner = f"session {self.session_id!r}" if self.session_id else f"aggregate {self.aggregate_id}"
        where = f"notification {self.notification_id}" if self.notification_id is not None else "snapshot"
        return f"{where}: {owner}, version {self.version}: {self.problem}"


@dataclass
class VerifyReport:
    events: int
    position: int
    newest: int
    tables: dict[str, TableDiff]
    damaged: list[DamagedRow] = field(default_factory=list)
    damaged_snapshots: list[DamagedRow] = field(default_factory=list)
    search_index: str | None = None
    """What was wrong with the search index (rebuilt from ``rm_search`` by this run)."""
    tree: list[str] = field(default_factory=list)
    """Children whose parent or fork version is missing (issue 42)."""

    @property
    def ok(self) -> bool:
        return (not self.damaged and not self.damaged_snapshots and self.search_index is None
                and not self.tree and all(t.ok for t in self.tables.values()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "events": self.events,
            "damaged_events": [row.to_dict() for row in self.damaged[:100]],
            "damaged_snapshots": [row.to_dict() for row in self.damaged_snapshots[:100]],
            "read_model_position": self.position,
            "newest_notification": self.newest,
            "search_index": self.search_index,
            "tree": self.tree[:100],
            "tables": {
                name: {"live": t.live, "rebuilt": t.rebuilt, "missing": t.missing[:20],
                       "extra": t.extra[:20], "different": t.different[:20]}
                for name, t in self.tables.items()
            },
        }

    def text(self) -> str:
        lines = [f"replayed {self.events:,} events into a scratch read model"]
        if self.damaged:
            lines.append(f"DAMAGED events ({len(self.damaged)}), skipped in the replay:")
            lines += [f"  {row.text()}" for row in self.damaged[:20]]
            if len(self.damaged) > 20:
                lines.append(f"  ... {len(self.damaged) - 20} more (--json lists 100)")
        if self.damaged_snapshots:
            lines.append(f"DAMAGED snapshots ({len(self.damaged_snapshots)}), skipped when loading "
                         "(their sessions are replayed from the events; the row can be deleted):")
            lines += [f"  {row.text()}" for row in self.damaged_snapshots[:20]]
        if self.position < self.newest:
            lines.append(f"note: the live read model is {self.newest - self.position} notifications behind "
                         "(queries catch up on demand); compared at its position")
        for name, t in self.tables.items():
            status = "ok" if t.ok else "DIFFERENT"
            lines.append(f"  {name:<18} live {t.live:>8,}  rebuilt {t.rebuilt:>8,}  {status}")
            for label, keys in (("missing", t.missing), ("unexpected", t.extra), ("different", t.different)):
                if keys:
                    shown = ", ".join(keys[:5]) + (" ..." if len(keys) > 5 else "")
                    lines.append(f"    {label} ({len(keys)}): {shown}")
        if self.search_index:
            lines.append(f"SEARCH INDEX: {self.search_index}")
        lines += [f"TREE: {problem}" for problem in self.tree[:20]]
        if self.damaged:
            lines.append("stored events are DAMAGED")
        lines.append(
            "read model matches the events"
            if all(t.ok for t in self.tables.values())
            else "read model DIFFERS from the events"
        )
        return "\n".join(lines)


def verify(
    app: Any,
    read_model: SqlReadModel,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    # One snapshot of the live tables, held open while the scratch copy is rebuilt up
    # to the position it reflects; then each table is compared as a merge of two
    # cursors in key order, so memory stays bounded in the number of rows (ADR 0044).
    damaged: list[DamagedRow] = []
    broken: set[str] = set()
    with read_model.db.read() as live, tempfile.TemporaryDirectory(prefix="ctxc-verify-") as tmp:
        position = read_model.projector.position(live)
        newest = read_model.lag(live)[1]
        table = read_model.projector.events_table
        # The events are read in this same snapshot, up to the position (exactly the
        # events whose rows the live tables hold), not through the recorder's own reads.
        sessions = dict(live.execute("SELECT aggregate_id, session_id FROM {t}rm_sessions").fetchall())
        # rm_search lags the appends (ADR 0049): the scratch copy indexes each session up
        # to the live mark, so a row missing below it, or one above it, is a difference.
        marked = live.execute(f"SELECT session_id, seq FROM {{t}}{SEARCH_MARKS}").fetchall()
        marks = {sid: int(seq) for sid, seq in marked}
        datastore = SQLiteDatastore(str(Path(tmp) / "scratch.db"))
        try:
            scratch = Database(datastore, Dialect("sqlite"))
            with scratch.write() as cur:
                for statement in SCHEMA:
                    cur.execute(statement)
            projector = ReadModelProjector(EventsTable("sqlite", "stored_events"))
            projector.mapper = app.mapper
            events = 0
            start = 1

            # The first damaged row of each session: its messages before it are indexed
            # (apply_stored keeps them), from it on none are.
            damaged_from: dict[str, int] = {}

            def on_damage(note: Any, problem: str) -> None:
                damaged.append(_damaged(note, problem, sessions))
                damaged_from.setdefault(note.originator_id.hex, note.id)

            while start <= position:
                notes = read_notifications(live, table, start, BATCH, position)
                if not notes:
                    break
                with scratch.write() as cur:
                    # (a session is left out from its damaged row on)
                    projector.apply_stored(cur, notes, broken, on_damage)
                    cur.executemany(SEARCH_INSERT, _search_rows(projector, notes, damaged_from, sessions, marks))
                events += len(notes)
                start = notes[-1].id + 1
                if on_progress is not None:
                    on_progress(events, position)
            with scratch.read() as rebuilt:
                tables = {
                    table: _diff(table, _rows(live, table), _rows(rebuilt, table))
                    for table in PROJECTED_TABLES
                }
            tree = tree_problems(app, live)  # (issue 42)
        finally:
            datastore.close()
    return VerifyReport(events=events, position=position, newest=newest, tables=tables, damaged=damaged,
                        damaged_snapshots=_damaged_snapshots(app, read_model, sessions),
                        search_index=read_model.check_search_index(), tree=tree)


from .readmodel.tree import tree_problems  # noqa: E402 (issue 42)


def _search_rows(
    projector: ReadModelProjector, notes: list[Any], damaged_from: dict[str, int],
    sessions: dict[str, str], marks: dict[str, int],
) -> list[SearchRow]:
    """The rm_search rows of the appended messages among ``notes`` at or below their
    session's live mark (what the live index must hold)."""
    rows = []
    for note in notes:
        aggregate = note.originator_id.hex
        sid = sessions.get(aggregate)
        if note.topic != _MESSAGE_TOPIC or sid is None or note.id >= damaged_from.get(aggregate, note.id + 1):
            continue
        try:
            record = projector.decode_state(note.state)
        except Exception:  # noqa: BLE001 - apply_stored reported the damaged row
            continue
        if int(record["seq"]) <= marks.get(sid, 0):
            rows.append(search_row(sid, int(record["seq"]), record))
    return rows


_MESSAGE_TOPIC = get_topic(Session.MessageAppended)

#: Key columns that hold text. PostgreSQL sorts them by byte ("C"), as SQLite does and
#: as Python compares str, so both cursors of a merge run in one order.
_TEXT_KEYS = frozenset({"session_id", "command_id", "checkpoint_id"})


#: Tables whose rows grow with the history: a checkpoint row holds its ledger (every
#: item its compaction dropped, ~0.13 MB each at 10k messages), and there is one per
#: compaction, so a batch of 500 held the whole table, twice (live and rebuilt).
_WIDE = frozenset({"rm_checkpoints"})


def _rows(cur: Cur, table: str) -> Iterator[tuple[Any, ...]]:
    """Every row of one projected table in key order (``BATCH`` rows at a time, one for
    a ``_WIDE`` table)."""
    columns = [c.strip() for c in PROJECTED_TABLES[table].split(",")]
    postgres = cur.dialect.is_postgres
    order = ", ".join(c + (' COLLATE "C"' if postgres and c in _TEXT_KEYS else "") for c in columns)
    # (the declared columns, not *: PostgreSQL's rm_search also stores its tsvector,
    # derived by the engine like SQLite's FTS5 table, ADR 0054)
    names = ", ".join(TABLES[table].column_names)
    return _stream(cur, f"SELECT {names} FROM {{t}}{table} ORDER BY {order}", 1 if table in _WIDE else BATCH)


def _stream(cur: Cur, sql: str, batch: int) -> Iterator[tuple[Any, ...]]:
    """The rows of one query on a cursor of their own, so two streams can interleave.
    PostgreSQL: ``batch`` rows at a time from a server-side cursor (else the driver
    would fetch the whole result at once); SQLite: one row at a time."""
    text = cur.dialect.sql(sql)
    if cur.dialect.is_postgres:
        from psycopg.rows import tuple_row

        name = f"ctxc_verify_{next(_CURSOR_NUMBERS)}"
        with cur.raw.connection.cursor(name=name, row_factory=tuple_row) as named:
            named.execute(text)
            while rows := named.fetchmany(batch):
                yield from rows
        return
    # SQLite steps one row per iteration: a batch would only add rows held at once.
    raw = cur.raw.connection.cursor()
    try:
        for row in raw.execute(text):
            yield tuple(row)
    finally:
        raw.close()


_CURSOR_NUMBERS = itertools.count(1)


def _damaged_snapshots(app: Any, read_model: SqlReadModel, sessions: dict[str, str]) -> list[DamagedRow]:
    """Snapshot rows the mapper refuses (a cache of the events, so only reported)."""
    if app.snapshots is None:
        return []
    table = app.snapshots.recorder.events_table_name
    found = []
    with read_model.db.read() as cur:
        # One snapshot at a time: a session's snapshot holds its whole aggregate state
        # (hundreds of KB at 20k messages), and they are decoded to be checked.
        rows = _stream(cur, f"SELECT originator_id, originator_version, topic, state FROM {{t}}{table}", 1)
        for oid, version, topic, state in rows:
            stored = StoredEvent(oid if isinstance(oid, UUID) else UUID(str(oid)), int(version), topic,
                                 bytes(state))
            try:
                app.mapper.to_domain_event(stored)
            except CorruptEvent as exc:
                found.append(_damaged(stored, str(exc.details.get("problem", "unreadable")), sessions))
    return found


def _damaged(note: Any, problem: str, sessions: dict[str, str]) -> DamagedRow:
    """A notification, or a snapshot row (which has no notification id)."""
    aggregate_id = note.originator_id.hex if hasattr(note.originator_id, "hex") else str(note.originator_id)
    return DamagedRow(
        notification_id=getattr(note, "id", None),
        session_id=sessions.get(aggregate_id),
        aggregate_id=aggregate_id,
        version=int(note.originator_version),
        problem=problem,
    )


def _diff(table: str, live: Iterator[tuple[Any, ...]], rebuilt: Iterator[tuple[Any, ...]]) -> TableDiff:
    """Merge two key-ordered row streams; only the keys that differ are kept."""
    width = len(PROJECTED_TABLES[table].split(","))
    show = lambda key: "/".join(str(k) for k in key)  # noqa: E731
    diff = TableDiff(live=0, rebuilt=0)
    a, b = next(live, None), next(rebuilt, None)
    while a is not None or b is not None:
        ka = a[:width] if a is not None else None
        kb = b[:width] if b is not None else None
        if kb is None or (ka is not None and ka < kb):
            diff.extra.append(show(ka))
            diff.live += 1
            a = next(live, None)
        elif ka is None or kb < ka:
            diff.missing.append(show(kb))
            diff.rebuilt += 1
            b = next(rebuilt, None)
        else:
            if a != b:
                diff.different.append(show(ka))
            diff.live += 1
            diff.rebuilt += 1
            a, b = next(live, None), next(rebuilt, None)
    return diff
