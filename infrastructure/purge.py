"""``SqlContentEraser``: what ``purge_session`` erases in the store (issue 35, ADR 0072).

The session's stored events are rewritten in place, keeping their shape (topic,
version, ids, seqs, roles, tool-call ids and names, counts, times) with their content
replaced by :data:`TOMBSTONE`: message bodies, participant names (a tool result's
``name`` is its tool's and stays), reasoning, tool-call arguments,
provider-private state, checkpoint summaries and ledgers, invalidation reasons. The
read-model rows that copy content are set to what the projector makes of the rewritten
events (so ``ctxc verify`` compares equal), the rows that only cache content go, and so
do the session's snapshots. One transaction, on the events lock where writers take it.

This is the one place the raw history is rewritten (the brief's exception for an
explicit erasure); it goes through our own transaction seam, not the library's write
path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any
from uuid import UUID

from context_compaction.domain.attempts import attempts_aggregate_id
from context_compaction.domain.summary import storable_text
from .database import Database, qualified_name, quote_identifier
from .readmodel.search import PURGE_LOCK_SQL

TOMBSTONE = "[purged]"
_PURGED = "context_compaction:Session.Purged"
log = logging.getLogger("context_compaction.purge")


def _message(state: dict[str, Any]) -> None:
    if state.get("content") is not None:
        state["content"] = TOMBSTONE
    state["reasoning"] = None
    state["tool_calls"] = [{**call, "arguments": "{}"} for call in state.get("tool_calls") or []]
    state["provider_state"] = None
    if state.get("role") != "tool":  # (a participant's name is personal data; a tool's is its shape)
        state["name"] = None


def _checkpoint(state: dict[str, Any]) -> None:
    state["summary"] = TOMBSTONE
    state["ledger"] = None
    state["provider_state"] = None


def _invalidation(state: dict[str, Any]) -> None:
    state["reason"] = ""


def _attempt(state: dict[str, Any]) -> None:
    # (a ledger's dropped items quote the messages: their kinds, seqs and counts stay)
    ledger = (state.get("attempt") or {}).get("ledger")
    if isinstance(ledger, dict):
        for key, value in ledger.items():
            if isinstance(value, list):
                ledger[key] = [{**item, "value": TOMBSTONE} if isinstance(item, dict) and "value" in item else item
                               for item in value]


def _candidate(state: dict[str, Any]) -> None:
    # (a dry run's candidate holds its checkpoint record: the summary and its ledger)
    checkpoint = (state.get("candidate") or {}).get("checkpoint")
    if isinstance(checkpoint, dict):
        _checkpoint(checkpoint)


_SCRUB: dict[str, Callable[[dict[str, Any]], None]] = {
    "context_compaction:CompactionAttempts.AttemptRecorded": _attempt,
    "context_compaction:CompactionAttempts.CandidatePrepared": _candidate,
    "context_compaction:Session.MessageAppended": _message,
    "context_compaction:Session.CheckpointCommitted": _checkpoint,
    "context_compaction:Session.HistoryInvalidated": _invalidation,
}

#: Read-model rows that copy content, set as the projector sets them from the
#: rewritten events (handlers.py: ``storable_text(summary)``, no ledger, no state).
_ROWS = (
    ("UPDATE {t}rm_checkpoints SET summary = ?, ledger = NULL, provider_state = NULL WHERE session_id = ?",
     storable_text(TOMBSTONE)),
    ("UPDATE {t}rm_invalidations SET reason = ? WHERE session_id = ?", ""),
)
#: Rows that only cache content (searches and the Timeline fill them again, from the
#: rewritten events).
_CACHES = ("rm_search", "rm_search_marks", "rm_timeline", "rm_token_counts")


class SqlContentEraser:
    def __init__(self, app: Any, db: Database) -> None:
        self.app = app
        self.db = db

    def erase_if_purged(self, session_id: str) -> None:
        """After a write to the attempt log that may quote content read before a purge
        (an attempt's ledger, a candidate's summary): erased again when the session was
        purged meanwhile. The purge records ``Purged`` (marking the session deleted)
        before it erases, so a write that the erasure missed, committed after it, sees
        the mark here; a write committed before the erasure is rewritten by it."""
        row = self.db.query_one("SELECT aggregate_id FROM {t}rm_sessions WHERE session_id = ? AND deleted <> 0",
                                (session_id,))
        if row is None:
            return
        table = self.app.projector.events_table
        originator = UUID(str(row[0]))
        if self.db.query_one(f"SELECT 1 FROM {table.qualified} WHERE originator_id = ? AND topic = ?",
                             (originator if self.db.dialect.is_postgres else originator.hex, _PURGED)):
            self.erase(session_id)

    def erase(self, session_id: str) -> tuple[int, bool | None]:
        table = self.app.projector.events_table
        postgres = self.db.dialect.is_postgres
        with self.db.write(table.lock_sql if postgres else None) as cur:
            if postgres:  # (a search indexer of the session commits first or reads the rewrite)
                cur.execute(PURGE_LOCK_SQL, (session_id,))
            else:
                # Freed pages are zeroed, not left holding the old rows (SQLite's default
                # keeps them until reused); on this connection from now on.
                cur.execute("PRAGMA secure_delete = ON")
            row = cur.execute("SELECT aggregate_id FROM {t}rm_sessions WHERE session_id = ?",
                              (session_id,)).fetchone()
            if row is None:
                return 0, None
            # The session and its compaction attempt log (a stream of its own, ADR 0032).
            originators: list[Any] = [
                uuid if postgres else uuid.hex
                for uuid in (UUID(str(row[0])), attempts_aggregate_id(session_id))
            ]
            rewritten = []
            for originator in originators:
                for version, topic, state in cur.execute(
                    f"SELECT originator_version, topic, state FROM {table.qualified} WHERE originator_id = ?",
                    (originator,),
                ).fetchall():
                    scrub = _SCRUB.get(str(topic))
                    if scrub is None:
                        continue
                    decoded = json.loads(bytes(state))
                    scrub(decoded)
                    encoded = json.dumps(decoded, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
                    rewritten.append((encoded, originator, int(version)))
            cur.executemany(
                f"UPDATE {table.qualified} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                rewritten,
            )
            for sql, value in _ROWS:
                cur.execute(sql, (value, session_id))
            for name in _CACHES:
                cur.execute(f"DELETE FROM {{t}}{name} WHERE session_id = ?", (session_id,))
            if not postgres:
                # FTS5 deletes are markers beside the old segments, which keep the
                # words: merged away (cost: the whole index, once per purge).
                cur.execute("INSERT INTO rm_search_fts (rm_search_fts) VALUES ('optimize')")
            snapshots = self._snapshots_table()
            if snapshots is not None:
                for originator in originators:
                    cur.execute(f"DELETE FROM {snapshots} WHERE originator_id = ?", (originator,))
        if postgres:
            self._refresh_pg_statistics(table.qualified)
        scrubbed = None if postgres else self._compact_sqlite_file()
        return len(rewritten), scrubbed

    def _refresh_pg_statistics(self, events_table: str) -> None:
        """PostgreSQL's planner statistics (``pg_statistic``, filled by ``ANALYZE`` and
        autovacuum) keep sample values of a column: short message bodies, event states,
        summaries stay there after the rows are rewritten, until the table is analyzed
        again. Analyzed now, from the rewritten rows (dead ones are not sampled). Best
        effort: a role that does not own the tables is skipped by the server (a warning)."""
        tables = [events_table, *(f"{{t}}{name}" for name in ("rm_search", "rm_checkpoints", "rm_timeline",
                                                                "rm_invalidations"))]
        snapshots = self._snapshots_table()
        if snapshots is not None:
            tables.append(snapshots)
        try:
            with self.db.write() as cur:
                for name in tables:
                    cur.execute(f"ANALYZE {name}")
        except Exception as exc:  # noqa: BLE001 - logged, never data
            log.warning("purge: the tables were not analyzed again", extra={"error_class": type(exc).__name__})

    def _compact_sqlite_file(self) -> bool:
        """Pages freed before the purge (SQLite's default does not zero them) may still
        hold the content, and the WAL holds pages as they were: ``VACUUM`` rewrites the
        file from its live rows, then the WAL is copied back and emptied. Cost: the
        whole file, once per purge. Best effort: another process's open transaction
        makes it wait or fail; the erasure itself is committed either way (ADR 0072).
        Returns whether both ran to the end: a checkpoint that another connection's open
        read keeps from copying the whole WAL back answers ``busy`` (it raises nothing),
        and the WAL then still holds the pages as they were before the purge."""
        done = True
        for statement in ("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
            try:
                # (the writer connection, outside any transaction: VACUUM refuses one)
                with self.db.datastore.get_connection(commit=True) as conn:
                    rows = conn.cursor().sqlite_cursor.execute(statement).fetchall()
                if rows and rows[0] and rows[0][0]:  # (wal_checkpoint's first column: busy)
                    log.warning("purge: the WAL could not be emptied (another connection reads)")
                    done = False
            except Exception as exc:  # noqa: BLE001 - logged, never data
                log.warning("purge: %s did not run", statement.split()[0],
                            extra={"error_class": type(exc).__name__})
                done = False
        return done

    def _snapshots_table(self) -> str | None:
        snapshots = getattr(self.app, "snapshots", None)
        if snapshots is None:
            return None
        name = snapshots.recorder.events_table_name
        if self.db.dialect.is_postgres:
            return qualified_name(self.db.dialect.schema, name)
        return quote_identifier(name)
