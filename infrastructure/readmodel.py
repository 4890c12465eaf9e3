"""The read model: query tables projected from the Session events (DESIGN §5).

The projector runs *inside* the transaction that inserts the events (ADR 0003), so
the tables and their position (``rm_position``) commit or roll back together with
the events: exactly once, and never behind a write this process made. The same
projector replays the notification log to catch up (events written by other code,
a dropped read model) and to rebuild from nothing; every query first checks the
position against the newest notification and catches up synchronously if needed.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError, Mapper, Notification
from eventsourcing.utils import get_topic

from context_compaction.application.ports import (
    CheckpointRow,
    CommandRecord,
    SessionRow,
    SessionSnapshotView,
)
from context_compaction.domain.budget import LearnedWindow
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.session import Session, session_aggregate_id
from context_compaction.domain.summary import storable_text

from context_compaction.domain.errors import CorruptEvent, StorageError

from .database import Cur, Database, StorageBusy, quote_identifier
from .transcoding import PlainJSONTranscoder, corrupt_event, message_problem

log = logging.getLogger("context_compaction.readmodel")

POSITION = "read_model"
#: Bump when a table or column of SCHEMA changes; recorded in rm_position once created.
#: A database with an older mark has its projected tables dropped and rebuilt from the
#: events (``SqlReadModel.create_tables``).
SCHEMA_VERSION = 6
#: The oldest version whose tables still have today's shape (later versions only added
#: tables, which ``create_tables`` creates): from it on, nothing is dropped or rebuilt.
SAME_SHAPE_SINCE = 5
_SCHEMA_MARK = "schema"

SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS {t}rm_position ("
    " name TEXT PRIMARY KEY, notification_id {INT} NOT NULL){WR}",
    "CREATE TABLE IF NOT EXISTS {t}rm_sessions ("
    " session_id TEXT PRIMARY KEY, aggregate_id TEXT NOT NULL UNIQUE, model TEXT NOT NULL,"
    " agent_token_limit {INT}, version {INT} NOT NULL, next_seq {INT} NOT NULL,"
    " context_generation {INT} NOT NULL, active_checkpoint_id TEXT,"
    " message_count {INT} NOT NULL, invalidated_count {INT} NOT NULL,"
    " checkpoint_count {INT} NOT NULL, deleted {INT} NOT NULL,"
    " created_at TEXT NOT NULL, updated_at TEXT NOT NULL,"
    " learned_windows TEXT NOT NULL DEFAULT '{{}}'){WR}",
    # Only what queries select on and the event that holds the body (ADR 0016): short
    # rows keep the B-tree pages an append rewrites (and fsyncs) few.
    "CREATE TABLE IF NOT EXISTS {t}rm_messages ("
    " session_id TEXT NOT NULL, seq {INT} NOT NULL, visible {INT} NOT NULL,"
    " notification_id {INT} NOT NULL, PRIMARY KEY (session_id, seq)){WR}",
    # Host command ids, unique across all sessions (ADR 0019); generated ones are
    # remembered by the aggregate only.
    "CREATE TABLE IF NOT EXISTS {t}rm_commands ("
    " command_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,"
    " first_seq {INT} NOT NULL, last_seq {INT} NOT NULL){WR}",
    "CREATE TABLE IF NOT EXISTS {t}rm_checkpoints ("
    " checkpoint_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, generation {INT} NOT NULL,"
    " parent_checkpoint_id TEXT, summary TEXT NOT NULL, first_retained_seq {INT} NOT NULL,"
    " source_max_seq {INT} NOT NULL, trigger_reason TEXT NOT NULL,"
    " provider_kind TEXT NOT NULL, model TEXT NOT NULL, tokens_before {INT} NOT NULL,"
    " tokens_after {INT} NOT NULL, degraded {INT} NOT NULL, summary_source TEXT NOT NULL,"
    " created_at TEXT NOT NULL, version {INT} NOT NULL, UNIQUE (session_id, generation))",
    "CREATE TABLE IF NOT EXISTS {t}rm_invalidations ("
    " session_id TEXT NOT NULL, version {INT} NOT NULL, kind TEXT NOT NULL,"
    " ranges TEXT NOT NULL, excluded {INT} NOT NULL, reason TEXT NOT NULL,"
    " generation {INT} NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (session_id, version))",
    "CREATE TABLE IF NOT EXISTS {t}rm_imports ("
    " session_id TEXT NOT NULL, version {INT} NOT NULL, source TEXT NOT NULL,"
    " imported_messages {INT} NOT NULL, skipped_messages {INT} NOT NULL, legacy_seq_upto {INT} NOT NULL,"
    " last_compressed_message_at {INT}, created_at TEXT NOT NULL, PRIMARY KEY (session_id, version))",
    # A cache, not a projection: counts are a pure function of (message, encoding).
    "CREATE TABLE IF NOT EXISTS {t}rm_token_counts ("
    " session_id TEXT NOT NULL, encoding TEXT NOT NULL, seq {INT} NOT NULL,"
    " tokens {INT} NOT NULL, PRIMARY KEY (session_id, encoding, seq)){WR}",
    # Written by the Timeline follower after commits (best effort), spec §13.
    "CREATE TABLE IF NOT EXISTS {t}rm_timeline ("
    " key TEXT PRIMARY KEY, session_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL,"
    " content TEXT NOT NULL, created_at TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rm_timeline_session ON {t}rm_timeline (session_id, created_at)",
    # Sessions whose events the read model could not project (a damaged row met while
    # catching up): their queries answer corrupt_event instead of a partial state.
    "CREATE TABLE IF NOT EXISTS {t}rm_damaged ("
    " aggregate_id TEXT PRIMARY KEY, notification_id {INT} NOT NULL, version {INT} NOT NULL,"
    " problem TEXT NOT NULL){WR}",
)
#: Rebuilt with the projected tables, but not compared by ``verify`` (which lists
#: damaged rows itself, also those the live read model projected before the damage).
DAMAGE_TABLE = "rm_damaged"

#: Tables that are a pure function of the events (compared by ``verify``).
PROJECTED_TABLES: dict[str, str] = {
    "rm_sessions": "session_id",
    "rm_messages": "session_id, seq",
    "rm_commands": "command_id",
    "rm_checkpoints": "checkpoint_id",
    "rm_invalidations": "session_id, version",
    "rm_imports": "session_id, version",
}

_SESSION_COLS = (
    "session_id, model, agent_token_limit, version, next_seq, context_generation,"
    " active_checkpoint_id, message_count, invalidated_count, checkpoint_count, deleted,"
    " created_at, updated_at, learned_windows"
)
_CHECKPOINT_COLS = (
    "checkpoint_id, session_id, generation, parent_checkpoint_id, summary,"
    " first_retained_seq, source_max_seq, trigger_reason, provider_kind, model,"
    " tokens_before, tokens_after, degraded, summary_source, created_at, version"
)
_N_SESSION_COLS = len(_SESSION_COLS.split(","))
# The session row and whether the read model met a damaged event of it (rm_damaged).
_SESSION_SQL = (
    "SELECT " + ", ".join("s." + c.strip() for c in _SESSION_COLS.split(",")) + ", d.version, d.problem"
    " FROM (SELECT 1 AS one) o LEFT JOIN {t}rm_sessions s ON s.session_id = ?"
    " LEFT JOIN {t}rm_damaged d ON d.aggregate_id = ?"
)
# Newest notification, read-model position, the session row and its active checkpoint:
# the whole head of a session view in one round trip (always exactly one row).
_SESSION_VIEW_SQL = (
    "SELECT {lag_columns}, "
    + ", ".join("s." + c.strip() for c in _SESSION_COLS.split(","))
    + ", "
    + ", ".join("c." + c.strip() for c in _CHECKPOINT_COLS.split(","))
    + ", d.version, d.problem"
    " FROM (SELECT 1 AS one) o LEFT JOIN {{t}}rm_sessions s ON s.session_id = ?"
    " LEFT JOIN {{t}}rm_checkpoints c ON c.checkpoint_id = s.active_checkpoint_id"
    " LEFT JOIN {{t}}rm_damaged d ON d.aggregate_id = ?"
)
_BODY_FIELDS = (
    "role",
    "content",
    "reasoning",
    "tool_calls",
    "tool_call_id",
    "name",
    "turn_id",
    "steering",
    "provider_state",
    "created_at",
)
_ENVELOPE_FIELDS = ("timestamp", "command_id", "command_generated", "class_version")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _session_row(row: Sequence[Any]) -> SessionRow:
    return SessionRow(
        session_id=row[0],
        model=row[1],
        agent_token_limit=row[2],
        version=int(row[3]),
        next_seq=int(row[4]),
        context_generation=int(row[5]),
        active_checkpoint_id=row[6],
        message_count=int(row[7]),
        invalidated_count=int(row[8]),
        checkpoint_count=int(row[9]),
        deleted=bool(row[10]),
        created_at=row[11],
        updated_at=row[12],
        learned_windows=_learned_windows(row[13]),
    )


def _learned_windows(text: str | None) -> dict[str, LearnedWindow]:
    if not text or text == "{}":
        return {}
    return {model: LearnedWindow(**value) for model, value in json.loads(text).items()}


def _checkpoint_row(row: Sequence[Any]) -> CheckpointRow:
    return CheckpointRow(
        checkpoint_id=row[0],
        session_id=row[1],
        generation=int(row[2]),
        parent_checkpoint_id=row[3],
        summary=row[4],
        first_retained_seq=int(row[5]),
        source_max_seq=int(row[6]),
        trigger_reason=row[7],
        provider_kind=row[8],
        model=row[9],
        tokens_before=int(row[10]),
        tokens_after=int(row[11]),
        degraded=bool(row[12]),
        summary_source=json.loads(row[13]),
        created_at=row[14],
        version=int(row[15]),
    )


_MESSAGE_TOPIC = get_topic(Session.MessageAppended)


class _DamagedMessage(Exception):
    """A message row that cannot be served (``_messages`` names it as ``CorruptEvent``)."""

    def __init__(self, seq: int, problem: str) -> None:
        super().__init__(problem)
        self.seq = seq
        self.problem = problem


def _message(row: Sequence[Any], decode: Callable[[bytes], dict[str, Any]]) -> MessageRecord:
    """(seq, event state, visible, is a MessageAppended row) → the message as stored.

    The freshly decoded event state is ours: it becomes the record, minus the event's
    envelope fields (a restore decodes every tail message, so no copy per message).
    A row that is no message is refused, never served as half of one; the event mapper
    checks every field when the aggregate or ``verify`` reads the row.
    """
    try:
        record = decode(bytes(row[1]))
    except Exception as exc:  # noqa: BLE001 - any undecodable row is the same fault
        raise _DamagedMessage(row[0], f"state does not decode: {type(exc).__name__}") from None
    if not row[3]:
        raise _DamagedMessage(row[0], "unknown event topic")
    if type(record) is not dict:
        raise _DamagedMessage(row[0], "state is not an object")
    problem = message_problem(record)
    if problem is None and record["seq"] != row[0]:
        problem = "seq differs from its read-model row"
    if problem is not None:
        raise _DamagedMessage(row[0], problem)
    for name in _ENVELOPE_FIELDS:
        record.pop(name, None)
    for name in _BODY_FIELDS:
        if name not in record:
            record[name] = None
    record["tool_calls"] = record["tool_calls"] or []
    record["steering"] = bool(record["steering"])
    record["seq"] = int(row[0])
    record["visible"] = bool(row[2])
    return record  # type: ignore[no-any-return]


def _lag(row: Sequence[Any] | None) -> tuple[int, int]:
    """(read-model position, newest notification id) from a row that starts with the
    lag columns (``EventsTable.lag_sql``, ``session_view_sql``)."""
    assert row is not None
    return int(row[1] or 0), int(row[0] or 0)


class EventsTable:
    """Where the notification log lives, per engine."""

    def __init__(self, dialect_name: str, table: str, schema: str | None = None) -> None:
        if dialect_name == "postgres":
            qualified = f"{quote_identifier(schema or 'public')}.{quote_identifier(table)}"
            self.id_column = "notification_id"
            self.lock_sql = f"LOCK TABLE {qualified} IN EXCLUSIVE MODE"
        else:
            qualified = table
            self.id_column = "rowid"
            self.lock_sql = None
        self.qualified = qualified
        self.max_id_sql = f"SELECT MAX({self.id_column}) FROM {qualified}"
        # Newest notification and read-model position in one round trip (every read
        # checks it); a session view puts them before its own columns.
        lag_columns = (
            f"({self.max_id_sql}),"
            f" (SELECT notification_id FROM {{t}}rm_position WHERE name = '{POSITION}')"
        )
        self.lag_sql = "SELECT " + lag_columns
        self.session_view_sql = _SESSION_VIEW_SQL.format(lag_columns=lag_columns)
        # Message bodies live once, in the events; the read model points at them.
        self.messages_sql = (
            f"SELECT m.seq, e.state, m.visible, e.topic = '{_MESSAGE_TOPIC}' FROM {{t}}rm_messages m"
            f" JOIN {qualified} e ON e.{self.id_column} = m.notification_id"
            " WHERE m.session_id = ? AND m.seq >= ?"
        )
        self.message_version_sql = (
            "SELECT e.originator_version FROM {t}rm_messages m"
            f" JOIN {qualified} e ON e.{self.id_column} = m.notification_id"
            " WHERE m.session_id = ? AND m.seq = ?"
        )
        self.select_sql = (
            f"SELECT {self.id_column}, originator_id, originator_version, topic, state"
            f" FROM {qualified} WHERE {self.id_column} > ? AND {self.id_column} < ?"
            f" ORDER BY {self.id_column} LIMIT ?"
        )


class ReadModelProjector:
    """Applies Session events to the query tables through a given cursor."""

    def __init__(self, events_table: EventsTable) -> None:
        self.events_table = events_table
        self.mapper: Mapper[UUID] | None = None
        self._session_ids: dict[str, str] = {}
        self._pending: list[tuple[int, Any]] = []
        self._handlers: dict[type, Callable[[Cur, Any], None]] = {
            Session.ModelConfigured: self._configured,
            Session.CheckpointCommitted: self._checkpoint_committed,
            Session.HistoryInvalidated: self._history_invalidated,
            Session.Deleted: self._deleted,
            Session.LegacyImported: self._legacy_imported,
            Session.WindowLearned: self._window_learned,
        }

    # ----------------------------------------------------------- positions
    @staticmethod
    def position(cur: Cur) -> int:
        row = cur.execute(
            "SELECT notification_id FROM {t}rm_position WHERE name = ?", (POSITION,)
        ).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _advance(cur: Cur, notification_id: int) -> None:
        cur.execute(
            "INSERT INTO {t}rm_position (name, notification_id) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET notification_id = excluded.notification_id"
            " WHERE {t}rm_position.notification_id < excluded.notification_id",
            (POSITION, notification_id),
        )
        if cur.rowcount != 1:
            raise ProjectionOutOfOrder(
                f"read model position did not advance to {notification_id}"
            )

    # -------------------------------------------------------------- entry
    def project_inline(self, cur: Cur, ids: Sequence[int], events: Sequence[Any]) -> None:
        """Project freshly inserted events (same transaction), catching up any gap first."""
        if not ids:
            return
        pairs = list(zip(ids, events, strict=True))
        # Common case in one statement: the read model is exactly at the notification
        # before these (SQLite rowids are contiguous). Otherwise the careful path.
        cur.execute(
            "UPDATE {t}rm_position SET notification_id = ? WHERE name = ? AND notification_id = ?",
            (ids[-1], POSITION, ids[0] - 1),
        )
        if cur.rowcount == 1:
            self.apply_all(cur, pairs, strict=True)
            return
        position = self.position(cur)
        if position < ids[0] - 1:
            self.replay(cur, after=position, before=ids[0])
        self.apply_all(cur, pairs, strict=True)
        self._advance(cur, ids[-1])

    def replay(self, cur: Cur, after: int, before: int | None = None, batch: int = 500) -> int:
        """Apply stored notifications with ``after < id < before``; returns the last id.

        One damaged row stops its own session (``rm_damaged``), never the catch-up of all.
        """
        last = after
        upper = before if before is not None else 2**62
        damaged = {row[0] for row in cur.execute(f"SELECT aggregate_id FROM {{t}}{DAMAGE_TABLE}").fetchall()}

        def note(notification: Notification, problem: str) -> None:
            cur.execute(
                f"INSERT INTO {{t}}{DAMAGE_TABLE} (aggregate_id, notification_id, version, problem)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (aggregate_id) DO NOTHING",
                (notification.originator_id.hex, notification.id, notification.originator_version, problem),
            )
            log.warning(
                "read model skipped a damaged event and the rest of its session",
                extra={"aggregate_id": notification.originator_id.hex, "notification_id": notification.id,
                       "version": notification.originator_version, "problem": problem},
            )

        while True:
            rows = cur.execute(self.events_table.select_sql, (last, upper, batch)).fetchall()
            if not rows:
                return last
            notifications = [
                Notification(
                    id=int(row[0]),
                    originator_id=row[1] if isinstance(row[1], UUID) else UUID(str(row[1])),
                    originator_version=int(row[2]),
                    topic=row[3],
                    state=bytes(row[4]),
                )
                for row in rows
            ]
            self.apply_stored(cur, notifications, damaged, note)
            last = notifications[-1].id
            self._advance(cur, last)

    def apply_stored(
        self,
        cur: Cur,
        notifications: Sequence[Notification],
        damaged: set[str],
        on_damage: Callable[[Notification, str], None],
    ) -> None:
        """Decode and apply stored notifications in order (replay, ``verify``).

        A row that does not decode, or does not fit its session's earlier events (a seq
        already taken, an event before its session started), goes to ``on_damage``; it
        and the rest of its session (aggregate ids in ``damaged``, which grows) are left
        out. A batch is applied whole, and again event by event only when it fails.
        """
        assert self.mapper is not None, "projector used before the application wired it"
        decoded: list[tuple[Notification, Any]] = []
        for notification in notifications:
            if notification.originator_id.hex in damaged:
                continue  # unreadable from its damaged row on
            try:
                decoded.append((notification, self.mapper.to_domain_event(notification)))
            except CorruptEvent as exc:
                on_damage(notification, str(exc.details.get("problem", "unreadable")))
                damaged.add(notification.originator_id.hex)
        try:
            with _savepoint(cur):
                self.apply_all(cur, [(n.id, event) for n, event in decoded])
            return
        except Exception as exc:  # noqa: BLE001 - sorted out below
            if not _misfit(exc):
                raise
        for notification, event in decoded:
            if notification.originator_id.hex in damaged:
                continue
            try:
                with _savepoint(cur):
                    self.apply_all(cur, [(notification.id, event)])
            except Exception as exc:  # noqa: BLE001
                if not _misfit(exc):
                    raise
                on_damage(notification, "does not fit the session's earlier events")
                damaged.add(notification.originator_id.hex)

    def apply_all(self, cur: Cur, events: Sequence[tuple[int, Any]], *, strict: bool = False) -> None:
        """Apply (notification id, event) pairs in order; runs of appended messages of one
        session are written with one statement per table.

        ``strict`` (new events, projected inline): a host command id another session
        already used fails the transaction, so the events roll back too (ADR 0019).
        Replaying stored events keeps the first use and warns instead.
        """
        run: list[tuple[int, Any]] = []
        for notification_id, domain_event in events:
            if type(domain_event) is Session.MessageAppended:
                if run and run[0][1].originator_id != domain_event.originator_id:
                    self._messages_appended(cur, run, strict)
                    run = []
                run.append((notification_id, domain_event))
                continue
            if run:
                self._messages_appended(cur, run, strict)
                run = []
            if type(domain_event) is Session.Started:
                self._started(cur, domain_event, strict)
                continue
            handler = self._handlers.get(type(domain_event))
            if handler is not None:
                handler(cur, domain_event)
        if run:
            self._messages_appended(cur, run, strict)

    def decode_state(self, state: bytes) -> dict[str, Any]:
        """An event's stored state as plain values (what message queries read)."""
        assert self.mapper is not None
        mapper = self.mapper
        if mapper.cipher is not None:
            state = mapper.cipher.decrypt(state)
        if mapper.compressor is not None:
            state = mapper.compressor.decompress(state)
        transcoder = mapper.transcoder
        if isinstance(transcoder, PlainJSONTranscoder):
            return transcoder.decode_values(state)  # message fields need no datetimes
        return transcoder.decode(state)  # type: ignore[no-any-return]

    # ------------------------------------------------------------ handlers
    def _sid(self, cur: Cur, event: Any) -> str:
        key = event.originator_id.hex
        sid = self._session_ids.get(key)
        if sid is None:
            row = cur.execute(
                "SELECT session_id FROM {t}rm_sessions WHERE aggregate_id = ?", (key,)
            ).fetchone()
            if row is None:
                raise ProjectionOutOfOrder(f"event for unknown aggregate {key}")
            sid = self._session_ids[key] = row[0]
        return sid

    def _touch(self, cur: Cur, sid: str, event: Any, sets: str = "", params: Iterable[Any] = ()) -> None:
        cur.execute(
            "UPDATE {t}rm_sessions SET version = ?, updated_at = ?"
            + (", " + sets if sets else "")
            + " WHERE session_id = ?",
            (event.originator_version, event.created_at, *params, sid),
        )

    def _started(self, cur: Cur, e: Any, strict: bool) -> None:
        self._session_ids[e.originator_id.hex] = e.session_id
        cur.execute(
            "INSERT INTO {t}rm_sessions (session_id, aggregate_id, model, agent_token_limit,"
            " version, next_seq, context_generation, active_checkpoint_id, message_count,"
            " invalidated_count, checkpoint_count, deleted, created_at, updated_at,"
            " learned_windows) VALUES (?, ?, ?, ?, ?, 1, 0, NULL, 0, 0, 0, 0, ?, ?, '{{}}')",
            (
                e.session_id,
                e.originator_id.hex,
                e.model,
                e.agent_token_limit,
                e.originator_version,
                e.created_at,
                e.created_at,
            ),
        )
        if e.command_id is not None:  # the host's (unique by contract) or ours (random)
            self._register_command(cur, e.command_id, e.session_id, "start_session", 0, 0, strict)

    def _register_command(
        self, cur: Cur, command_id: str, sid: str, kind: str, lo: int, hi: int, strict: bool
    ) -> None:
        cur.execute(
            "INSERT INTO {t}rm_commands (command_id, session_id, kind, first_seq, last_seq)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (command_id) DO UPDATE SET last_seq ="
            " excluded.last_seq WHERE {t}rm_commands.session_id = excluded.session_id"
            " AND {t}rm_commands.kind = excluded.kind",
            (command_id, sid, kind, lo, hi),
        )
        if cur.rowcount == 1:
            return
        if strict:
            # IntegrityError: the store reports a conflict, the command reloads and
            # finds the earlier use (idempotency_conflict); nothing is written.
            raise IntegrityError("command id already used by another command")
        log.warning(
            "command id used twice in the stored events; the first use is kept",
            extra={"session_id": sid, "kind": kind},
        )

    def _configured(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        self._touch(cur, sid, e, "model = ?, agent_token_limit = ?", (e.model, e.agent_token_limit))

    def _messages_appended(self, cur: Cur, run: list[tuple[int, Any]], strict: bool) -> None:
        first = run[0][1]
        sid = self._sid(cur, first)
        cur.executemany(
            "INSERT INTO {t}rm_messages (session_id, seq, visible, notification_id)"
            " VALUES (?, ?, 1, ?)",
            [(sid, e.seq, notification_id) for notification_id, e in run],
        )
        last = run[-1][1]
        self._touch(
            cur, sid, last, "next_seq = ?, message_count = message_count + ?", (last.seq + 1, len(run))
        )
        spans: dict[str, list[int]] = {}
        for _, e in run:
            if e.command_id is not None and not e.command_generated:
                span = spans.setdefault(e.command_id, [e.seq, e.seq])
                span[1] = e.seq
        for command_id, (lo, hi) in spans.items():
            self._register_command(cur, command_id, sid, "append_messages", lo, hi, strict)

    def _checkpoint_committed(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        cur.execute(
            "INSERT INTO {t}rm_checkpoints (" + _CHECKPOINT_COLS + ")"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.checkpoint_id,
                sid,
                e.generation,
                e.parent_checkpoint_id,
                storable_text(e.summary),  # (summaries of older versions may hold NUL)
                e.first_retained_seq,
                e.source_max_seq,
                e.trigger_reason,
                e.provider_kind,
                e.model,
                e.tokens_before,
                e.tokens_after,
                int(bool(e.degraded)),
                _dumps(e.summary_source),
                e.created_at,
                e.originator_version,
            ),
        )
        self._touch(
            cur,
            sid,
            e,
            "active_checkpoint_id = ?, context_generation = ?,"
            " checkpoint_count = checkpoint_count + 1",
            (e.checkpoint_id, e.generation),
        )

    def _history_invalidated(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        excluded = 0
        for lo, hi in e.ranges:
            cur.execute(
                "UPDATE {t}rm_messages SET visible = 0"
                " WHERE session_id = ? AND seq >= ? AND seq <= ? AND visible = 1",
                (sid, lo, hi),
            )
            excluded += max(cur.rowcount, 0)
        cur.execute(
            "INSERT INTO {t}rm_invalidations (session_id, version, kind, ranges, excluded,"
            " reason, generation, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (sid, e.originator_version, e.kind, _dumps(e.ranges), excluded, storable_text(e.reason),
             e.generation, e.created_at),
        )
        self._touch(
            cur,
            sid,
            e,
            "active_checkpoint_id = NULL, context_generation = ?,"
            " invalidated_count = invalidated_count + ?",
            (e.generation, excluded),
        )

    def _deleted(self, cur: Cur, e: Any) -> None:
        self._touch(cur, self._sid(cur, e), e, "deleted = 1")

    def _window_learned(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        row = cur.execute(
            "SELECT learned_windows FROM {t}rm_sessions WHERE session_id = ?", (sid,)
        ).fetchone()
        windows = json.loads(row[0]) if row and row[0] else {}
        windows[e.model] = {
            "provider": e.provider,
            "model": e.model,
            "window": e.window,
            "prompt_tokens": e.prompt_tokens,
            "estimated_tokens": e.estimated_tokens,
        }
        self._touch(cur, sid, e, "learned_windows = ?", (_dumps(windows),))

    def _legacy_imported(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        cur.execute(
            "INSERT INTO {t}rm_imports (session_id, version, source, imported_messages,"
            " skipped_messages, legacy_seq_upto, last_compressed_message_at, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (sid, e.originator_version, e.source, e.imported_messages, e.skipped_messages,
             e.legacy_seq_upto, e.last_compressed_message_at, e.created_at),
        )
        self._touch(cur, sid, e)


@contextmanager
def _savepoint(cur: Cur) -> Iterator[None]:
    cur.execute("SAVEPOINT ctxc_apply")
    try:
        yield
    except BaseException:
        cur.execute("ROLLBACK TO SAVEPOINT ctxc_apply")
        raise
    finally:
        cur.execute("RELEASE SAVEPOINT ctxc_apply")


def _misfit(exc: BaseException) -> bool:
    """A stored event the read model cannot place: a key it repeats (a driver's
    integrity error) or a session it does not know."""
    if isinstance(exc, (ProjectionOutOfOrder, sqlite3.IntegrityError, IntegrityError)):
        return True
    return type(exc).__module__.startswith("psycopg") and str(getattr(exc, "sqlstate", "")).startswith("23")


def _refuse_damaged(session_id: str, damage: Sequence[Any]) -> None:
    """``damage`` is (version, problem) of the session's row in ``rm_damaged``, or Nones."""
    if damage[0] is not None:
        raise corrupt_event(str(damage[1]), version=int(damage[0]), session_id=session_id)


class ProjectionOutOfOrder(Exception):
    """The read model saw an event it cannot place: a bug or a corrupted database."""


class SqlReadModel:
    """Queries over the projected tables (implements the application's ReadModel port)."""

    def __init__(self, db: Database, projector: ReadModelProjector) -> None:
        self.db = db
        self.projector = projector

    # ------------------------------------------------------------- schema
    def create_tables(self, previous: int | None = None) -> None:
        """Create the read-model tables; ``previous`` is the schema version the database
        was marked with (``schema_version()``), None for a new one."""
        with self.db.connection_cursor() as cur:
            if previous is not None and previous < SAME_SHAPE_SINCE:
                # The read model is a projection: tables of an older shape are dropped
                # and the next read replays the events into the new ones (catch-up
                # from position 0), exactly as after losing them.
                for table in (*PROJECTED_TABLES, DAMAGE_TABLE):
                    cur.execute(f"DROP TABLE IF EXISTS {{t}}{table}")
                cur.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
                log.warning(
                    "read model schema upgraded, rebuilding from the events",
                    extra={"from_version": previous, "to_version": SCHEMA_VERSION},
                )
            for statement in SCHEMA:
                cur.execute(statement)
            cur.execute(
                "INSERT INTO {t}rm_position (name, notification_id) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET notification_id = excluded.notification_id",
                (_SCHEMA_MARK, SCHEMA_VERSION),
            )

    def schema_version(self) -> int | None:
        """The read-model schema version this database was created with (None: none)."""
        try:
            row = self.db.query_one(
                "SELECT notification_id FROM {t}rm_position WHERE name = ?", (_SCHEMA_MARK,)
            )
        except (StorageError, StorageBusy):
            return None
        return int(row[0]) if row is not None else None

    # ----------------------------------------------------------- catch-up
    def lag(self, cur: Cur) -> tuple[int, int]:
        """(read-model position, newest notification id)."""
        return _lag(cur.execute(self.projector.events_table.lag_sql).fetchone())

    def catch_up(self) -> int:
        """Project every notification past the position; returns how many."""
        with self.db.write(self.projector.events_table.lock_sql) as cur:
            position, newest = self.lag(cur)
            if position >= newest:
                return 0
            last = self.projector.replay(cur, after=position)
            log.info("read model caught up", extra={"from_id": position, "to_id": last})
            return last - position

    @contextmanager
    def fresh(self) -> Iterator[Cur]:
        """A read snapshot in which the read model has caught up with the events."""
        with self._fresh(self.projector.events_table.lag_sql) as (cur, _):
            yield cur

    @contextmanager
    def _fresh(
        self, head_sql: str, params: Sequence[Any] = ()
    ) -> Iterator[tuple[Cur, tuple[Any, ...]]]:
        """``fresh()`` whose lag check is a first query: its one row starts with
        (newest notification id, read-model position); it is handed on with the cursor."""
        for attempt in range(4):
            handed_on = False
            try:
                with self.db.read() as cur:
                    head = cur.execute(head_sql, params).fetchone()
                    position, newest = _lag(head)
                    assert head is not None
                    if position >= newest or attempt == 3:
                        # (after 3 catch-ups writers keep arriving; their rows are inline)
                        handed_on = True
                        yield cur, head
                        return
            except StorageBusy:
                if handed_on or attempt == 3:  # the caller's own queries are not ours to redo
                    raise
                self.db.recover()
                continue
            self.catch_up()

    def rebuild(self) -> int:
        """Drop every projected row and replay the whole notification log."""
        with self.db.write(self.projector.events_table.lock_sql) as cur:
            for table in (*PROJECTED_TABLES, DAMAGE_TABLE):
                cur.execute(f"DELETE FROM {{t}}{table}")
            cur.execute("DELETE FROM {t}rm_position WHERE name = ?", (POSITION,))
            return self.projector.replay(cur, after=0)

    # ------------------------------------------------------------ queries
    def session(self, session_id: str) -> SessionRow | None:
        with self.fresh() as cur:
            return self._session(cur, session_id)

    @staticmethod
    def _session(cur: Cur, session_id: str) -> SessionRow | None:
        row = cur.execute(_SESSION_SQL, (session_id, session_aggregate_id(session_id).hex)).fetchone()
        assert row is not None
        _refuse_damaged(session_id, row[-2:])
        return _session_row(row) if row[0] is not None else None

    def sessions(self, limit: int = 100, offset: int = 0) -> list[SessionRow]:
        with self.fresh() as cur:
            rows = cur.execute(
                "SELECT " + _SESSION_COLS + " FROM {t}rm_sessions"
                " ORDER BY created_at, session_id LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [_session_row(r) for r in rows]

    def messages(
        self,
        session_id: str,
        *,
        from_seq: int = 1,
        upto_seq: int | None = None,
        include_invalidated: bool = False,
    ) -> list[MessageRecord]:
        with self.fresh() as cur:
            damage = cur.execute(
                f"SELECT version, problem FROM {{t}}{DAMAGE_TABLE} WHERE aggregate_id = ?",
                (session_aggregate_id(session_id).hex,),
            ).fetchone()
            _refuse_damaged(session_id, damage or (None, None))
            return self._messages(cur, session_id, from_seq, upto_seq, include_invalidated)

    def _messages(
        self,
        cur: Cur,
        session_id: str,
        from_seq: int,
        upto_seq: int | None,
        include_invalidated: bool,
    ) -> list[MessageRecord]:
        sql = self.projector.events_table.messages_sql
        params: list[Any] = [session_id, from_seq]
        if upto_seq is not None:
            sql += " AND m.seq <= ?"
            params.append(upto_seq)
        if not include_invalidated:
            sql += " AND m.visible = 1"
        sql += " ORDER BY m.seq"
        decode = self.projector.decode_state
        rows = cur.execute(sql, params).fetchall()
        try:
            return [_message(r, decode) for r in rows]
        except _DamagedMessage as damaged:
            row = cur.execute(
                self.projector.events_table.message_version_sql, (session_id, damaged.seq)
            ).fetchone()
            raise corrupt_event(
                damaged.problem, version=int(row[0]) if row else None, session_id=session_id
            ) from None

    def session_view(
        self, session_id: str, *, tail_only: bool = True, after_seq: int = 0
    ) -> SessionSnapshotView | None:
        # One round trip for the lag check, the session row and its checkpoint.
        sql = self.projector.events_table.session_view_sql
        params = (session_id, session_aggregate_id(session_id).hex)
        with self._fresh(sql, params) as (cur, head):
            return self._session_view(cur, session_id, head[2:], tail_only, after_seq)

    def _session_view(
        self, cur: Cur, session_id: str, row: Sequence[Any], tail_only: bool, after_seq: int
    ) -> SessionSnapshotView | None:
        _refuse_damaged(session_id, row[-2:])
        if row[0] is None:
            return None
        session = _session_row(row[:_N_SESSION_COLS])
        checkpoint = (
            _checkpoint_row(row[_N_SESSION_COLS:])
            if session.active_checkpoint_id and row[_N_SESSION_COLS] is not None
            else None
        )
        from_seq = checkpoint.first_retained_seq if (checkpoint and tail_only) else 1
        from_seq = max(from_seq, after_seq + 1)
        messages = self._messages(cur, session_id, from_seq, None, False)
        return SessionSnapshotView(session=session, checkpoint=checkpoint, messages=messages)

    def checkpoint(self, checkpoint_id: str) -> CheckpointRow | None:
        with self.fresh() as cur:
            return self._checkpoint(cur, checkpoint_id)

    @staticmethod
    def _checkpoint(cur: Cur, checkpoint_id: str) -> CheckpointRow | None:
        row = cur.execute(
            "SELECT " + _CHECKPOINT_COLS + " FROM {t}rm_checkpoints WHERE checkpoint_id = ?",
            (checkpoint_id,),
        ).fetchone()
        return _checkpoint_row(row) if row else None

    def checkpoints(self, session_id: str) -> list[CheckpointRow]:
        with self.fresh() as cur:
            rows = cur.execute(
                "SELECT " + _CHECKPOINT_COLS + " FROM {t}rm_checkpoints"
                " WHERE session_id = ? ORDER BY generation",
                (session_id,),
            ).fetchall()
        return [_checkpoint_row(r) for r in rows]

    def command(self, command_id: str) -> CommandRecord | None:
        with self.fresh() as cur:
            row = cur.execute(
                "SELECT command_id, session_id, kind, first_seq, last_seq FROM {t}rm_commands"
                " WHERE command_id = ?",
                (command_id,),
            ).fetchone()
        if row is None:
            return None
        return CommandRecord(row[0], row[1], row[2], int(row[3]), int(row[4]))

    # -------------------------------------------------------- token cache
    def token_counts(self, session_id: str, key: str, from_seq: int) -> dict[int, int]:
        with self.db.read() as cur:
            rows = cur.execute(
                "SELECT seq, tokens FROM {t}rm_token_counts"
                " WHERE session_id = ? AND encoding = ? AND seq >= ?",
                (session_id, key, from_seq),
            ).fetchall()
        return {int(seq): int(n) for seq, n in rows}

    def store_token_counts(self, session_id: str, key: str, counts: dict[int, int]) -> None:
        # A cache (counts are a pure function of message and encoding): no fsync.
        with self.db.write(durable=False) as cur:
            cur.executemany(
                "INSERT INTO {t}rm_token_counts (session_id, encoding, seq, tokens)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, encoding, seq) DO NOTHING",
                [(session_id, key, seq, n) for seq, n in counts.items()],
            )

    def table_rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of one projected table in key order (for verify and tests)."""
        order = PROJECTED_TABLES[table]
        with self.fresh() as cur:
            return cur.execute(f"SELECT * FROM {{t}}{table} ORDER BY {order}").fetchall()
