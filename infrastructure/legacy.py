"""``ctxc import-legacy``: sessions from a legacy PicoBot SQLite file (spec §15, seed 002).

Reads the ``sessions`` and ``messages`` tables (read-only) and records ``Started`` plus
``MessageAppended`` events in the original seq order, keeping each message's original
time (and ``turn_id`` when the table has one). Lazy migration: no checkpoint is derived
— ``last_compressed_message_at`` is kept as a diagnostic only, and Timeline memories
are never used to rebuild context. Running it again imports only messages it has not
imported yet (command ids carry the legacy seq range).

Each session is imported on its own: a session that already exists natively (not
created by an import) is refused — legacy history is never mixed into it — and a
refused or deleted session does not stop the others; the report says so per session.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from context_compaction.application.runtime.bus import MessageBus
from context_compaction.application.runtime.services import mutate
from context_compaction.domain.errors import (
    ContextCompactionError,
    InvalidCommand,
    InvalidMessage,
    SessionDeleted,
    SessionNotFound,
)
from context_compaction.domain.messages import Message, parse_message
from context_compaction.domain.session import Session

CHUNK = 200


@dataclass
class SessionImport:
    session_id: str
    created: bool
    imported: int = 0
    already: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)
    refused: str | None = None
    """Why nothing (more) of this session was imported, e.g. a native session of that id."""


@dataclass
class ImportReport:
    source: str
    sessions: list[SessionImport]

    @property
    def imported(self) -> int:
        return sum(s.imported for s in self.sessions)

    @property
    def skipped(self) -> int:
        return sum(len(s.skipped) for s in self.sessions)

    @property
    def refused(self) -> list[SessionImport]:
        return [s for s in self.sessions if s.refused]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sessions": len(self.sessions),
            "sessions_created": sum(1 for s in self.sessions if s.created),
            "messages_imported": self.imported,
            "messages_already_present": sum(s.already for s in self.sessions),
            "messages_skipped": self.skipped,
            "skipped_by_reason": dict(Counter(reason for s in self.sessions for _, reason in s.skipped)),
            "sessions_refused": len(self.refused),
            "per_session": [
                {"session_id": s.session_id, "created": s.created, "imported": s.imported,
                 "already_present": s.already, "skipped": [{"legacy_seq": q, "reason": r} for q, r in s.skipped],
                 "status": "refused" if s.refused else "imported", "refused": s.refused}
                for s in self.sessions
            ],
        }

    def text(self) -> str:
        d = self.to_dict()
        lines = [
            f"imported {d['messages_imported']:,} messages into {d['sessions']} sessions "
            f"({d['sessions_created']} new) from {self.source}",
            f"already present: {d['messages_already_present']:,}; skipped: {d['messages_skipped']:,}",
        ]
        for reason, n in d["skipped_by_reason"].items():
            lines.append(f"  skipped {n}: {reason}")
        for s in self.refused:
            lines.append(f"  session {s.session_id!r} refused: {s.refused}")
        return "\n".join(lines)


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")
    text = str(value)
    try:
        return datetime.fromisoformat(text).astimezone(UTC).isoformat(timespec="microseconds")
    except ValueError:
        return None


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _message(row: sqlite3.Row, columns: set[str]) -> dict[str, Any]:
    data: dict[str, Any] = {"role": str(row["role"]).lower()}
    content = row["content"] if "content" in columns else None
    if isinstance(content, str) and content.startswith("[{"):
        try:
            parsed = json.loads(content)
            if isinstance(parsed, list) and all(isinstance(p, dict) and "type" in p for p in parsed):
                content = parsed
        except ValueError:
            pass
    data["content"] = content
    if "tool_calls" in columns and row["tool_calls"]:
        calls = json.loads(row["tool_calls"]) if isinstance(row["tool_calls"], str) else row["tool_calls"]
        data["tool_calls"] = calls or []
    for name in ("tool_call_id", "name"):
        if name in columns and row[name]:
            data[name] = row[name]
    for name in ("reasoning", "reasoning_content"):
        if name in columns and row[name]:
            data["reasoning"] = row[name]
    if "turn_id" in columns and row["turn_id"] not in (None, ""):
        data["turn_id"] = str(row["turn_id"])
    if "steering" in columns and row["steering"] and data["role"] == "user":
        data["steering"] = True
    return data


def _imported_upto(svc: Any, session_id: str) -> int:
    """The last legacy seq read by earlier imports of this session."""
    with svc.read_model.db.read() as cur:
        row = cur.execute(
            "SELECT MAX(legacy_seq_upto) FROM {t}rm_imports WHERE session_id = ?", (session_id,)
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def import_legacy(
    bus: MessageBus,
    path: Path,
    *,
    default_model: str = "gpt-4o",
    on_progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    if not path.exists():
        raise InvalidCommand(f"{path} does not exist")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise InvalidCommand(f"{path} is not a SQLite database: {exc}") from None
    if not {"sessions", "messages"} <= tables:
        raise InvalidCommand(f"{path} has no 'sessions' and 'messages' tables: not a PicoBot database")
    try:
        source = _LegacyFile(conn, path, _columns(conn, "sessions"), _columns(conn, "messages"), default_model)
        id_col = "id" if "id" in source.session_cols else "session_id"
        sessions = conn.execute(f"SELECT * FROM sessions ORDER BY {id_col}").fetchall()
        total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        done = 0
        report = ImportReport(str(path), [])
        for srow in sessions:
            entry = SessionImport(str(srow[id_col]), created=False)
            report.sessions.append(entry)

            def progress(read: int, done: int = done) -> None:
                if on_progress is not None:
                    on_progress(done + read, total)

            try:
                source.import_session(bus, srow, entry, progress)
            except ContextCompactionError as exc:
                # This session only: what it had imported stays, the others go on.
                entry.refused = f"{exc.code}: {exc.message}"
            except ValidationError as exc:  # e.g. an id or model name past the limits
                error = exc.errors()[0]
                where = ".".join(str(part) for part in error["loc"])
                entry.refused = f"invalid_command: {where}: {error['msg']}"
            done += conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?", (entry.session_id,)
            ).fetchone()[0]
            if on_progress is not None:
                on_progress(done, total)
        return report
    finally:
        conn.close()


@dataclass
class _LegacyFile:
    """The legacy database being imported and what its tables look like."""

    conn: sqlite3.Connection
    path: Path
    session_cols: set[str]
    message_cols: set[str]
    default_model: str

    def import_session(
        self, bus: MessageBus, srow: sqlite3.Row, entry: SessionImport, progress: Callable[[int], None]
    ) -> None:
        """Import what is new of one legacy session; raises for a session it must refuse."""
        from context_compaction.application.contracts import commands as c

        svc = bus.services
        sid = entry.session_id
        start_id = _start_command_id(sid)
        existing = svc.read_model.session(sid)
        if existing is not None and svc.read_model.command(start_id) is None:
            raise InvalidCommand(
                f"session {sid!r} already exists and was not created by a legacy import; "
                "its history is left as it is"
            )
        if existing is not None and existing.deleted:
            raise SessionDeleted(f"session {sid!r} is deleted; nothing more is imported into it")
        cols = self.session_cols
        model = (srow["model"] if "model" in cols else None) or self.default_model
        marker = srow["last_compressed_message_at"] if "last_compressed_message_at" in cols else None
        if existing is None:
            bus.dispatch(c.StartSession(session_id=sid, model=model, command_id=start_id))
            entry.created = True
        upto = _imported_upto(svc, sid)
        entry.already = before = self.conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND seq <= ?", (sid, upto)
        ).fetchone()[0]
        rows = self.conn.execute(
            "SELECT * FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq", (sid, upto)
        ).fetchall()
        open_calls = set(_open_calls(svc, sid))
        read_upto = upto
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            messages: list[Message] = []
            times: list[str] = []
            for row in chunk:
                message, reason = _valid(row, self.message_cols, open_calls)
                if message is None:
                    entry.skipped.append((int(row["seq"]), reason))
                    continue
                messages.append(message)
                created = row["created_at"] if "created_at" in self.message_cols else None
                times.append(_iso(created) or svc.now())
            first, last = int(chunk[0]["seq"]), int(chunk[-1]["seq"])
            command_id = f"legacy:{sid}:{first}-{last}"
            if messages and svc.read_model.command(command_id) is not None:
                entry.already += len(messages)  # appended by an import that stopped early
            elif messages:
                mutate(svc, sid, lambda s, m=messages, t=times, k=command_id: s.append_messages(
                    m, command_id=k, created_at=svc.now(), created_ats=t))
                entry.imported += len(messages)
            read_upto = last
            progress(before + start + len(chunk))
        if read_upto > upto:
            mutate(svc, sid, lambda s: s.record_import(
                source=self.path.name, imported_messages=entry.imported,
                skipped_messages=len(entry.skipped), legacy_seq_upto=read_upto,
                last_compressed_message_at=int(marker) if marker is not None else None,
                created_at=svc.now()))


def _start_command_id(session_id: str) -> str:
    """``legacy:<id>:start``, or with a digest of the id where that would pass the
    256 characters a command id may have."""
    command_id = f"legacy:{session_id}:start"
    if len(command_id) <= 256:
        return command_id
    digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"legacy:{digest}:start"


def _open_calls(svc: Any, session_id: str) -> list[str]:
    try:
        session: Session = svc.events.load(session_id)
    except SessionNotFound:
        return []
    if session.__dict__.get("groups_incomplete"):
        # A rewind replayed onto a snapshot copy could not reopen calls of the groups
        # behind the checkpoint: only a full replay knows them (ADR 0051).
        session = svc.events.load_complete(session_id)
    return list(session.open_calls)


def _valid(row: sqlite3.Row, columns: set[str], open_calls: set[str]) -> tuple[Message | None, str]:
    try:
        message = parse_message(_message(row, columns))
    except InvalidMessage as exc:
        return None, f"invalid message ({exc.message.split(': ', 1)[-1]})"
    except (ValueError, TypeError):
        return None, "unreadable message"
    if message.role == "tool":
        if message.tool_call_id not in open_calls:
            return None, "tool result without an open call"
        open_calls.discard(message.tool_call_id)
    for call in message.tool_calls:
        if call.id in open_calls:
            return None, "tool call id already open"
    open_calls.update(call.id for call in message.tool_calls)
    return message, ""
