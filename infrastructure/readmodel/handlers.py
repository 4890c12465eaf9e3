"""One method per Session event: the SQL that projects it (``HANDLERS`` maps event → method).

A new event's projection is one method here and one entry in ``HANDLERS``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from eventsourcing.persistence import IntegrityError

from context_compaction.domain.session import Session
from context_compaction.domain.summary import storable_text

from ..database import Cur
from .rows import dumps
from .schema import CHECKPOINT_COLS
from .search import search_text

log = logging.getLogger("context_compaction.readmodel")


class ProjectionOutOfOrder(Exception):
    """The read model saw an event it cannot place: a bug or a corrupted database."""


class CommandIdTaken(IntegrityError):
    """A host command id another session already used (ADR 0019): a lost race even
    under the writer lock, so the command loop reloads and reports the earlier use."""


class EventHandlers:
    """The projector's per-event SQL. ``Started`` and runs of ``MessageAppended`` are
    dispatched by ``apply_all`` itself (they take ``strict`` and are batched)."""

    _session_ids: dict[str, str]

    def handler_table(self) -> dict[type, Callable[[Cur, Any], None]]:
        return {
            Session.ModelConfigured: self._configured,
            Session.CheckpointCommitted: self._checkpoint_committed,
            Session.HistoryInvalidated: self._history_invalidated,
            Session.Deleted: self._deleted,
            Session.LegacyImported: self._legacy_imported,
            Session.WindowLearned: self._window_learned,
            Session.ToolResultsCleared: self._tool_results_cleared,
            Session.MessagesPinned: self._messages_pinned,
            Session.MessagesUnpinned: self._messages_unpinned,
            Session.CheckpointReverted: self._checkpoint_reverted,
        }

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
            raise CommandIdTaken("command id already used by another command")
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
        self._insert_messages(cur, sid, run)
        cur.executemany(
            # (a message's text is a function of its event: a row already there is the same)
            "INSERT INTO {t}rm_search (session_id, seq, role, turn_id, body) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (session_id, seq) DO NOTHING",
            [(sid, e.seq, e.role, e.turn_id, search_text(e.content, e.tool_calls, e.name)) for _, e in run],
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

    def _insert_messages(self, cur: Cur, sid: str, run: list[tuple[int, Any]]) -> None:
        # (the one row that needs the notification ids: the projector can defer it, ADR 0053)
        cur.executemany(
            "INSERT INTO {t}rm_messages (session_id, seq, visible, notification_id)"
            " VALUES (?, ?, 1, ?)",
            [(sid, e.seq, notification_id) for notification_id, e in run],
        )

    def _checkpoint_committed(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        cur.execute(
            "INSERT INTO {t}rm_checkpoints (" + CHECKPOINT_COLS + ")"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                dumps(e.summary_source),
                e.created_at,
                e.originator_version,
                _ledger_text(getattr(e, "ledger", None)),
                _state_text(getattr(e, "provider_state", None)),
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
                "DELETE FROM {t}rm_pins WHERE session_id = ? AND seq >= ? AND seq <= ?", (sid, lo, hi)
            )
        cur.execute(
            "INSERT INTO {t}rm_invalidations (session_id, version, kind, ranges, excluded,"
            " reason, generation, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (sid, e.originator_version, e.kind, dumps(e.ranges), excluded, storable_text(e.reason),
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

    def _messages_pinned(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        cur.executemany(
            "INSERT INTO {t}rm_pins (session_id, seq) VALUES (?, ?) ON CONFLICT (session_id, seq) DO NOTHING",
            [(sid, seq) for seq in e.seqs],
        )
        self._touch(cur, sid, e)

    def _messages_unpinned(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        cur.executemany(
            "DELETE FROM {t}rm_pins WHERE session_id = ? AND seq = ?", [(sid, seq) for seq in e.seqs]
        )
        self._touch(cur, sid, e)

    def _checkpoint_reverted(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        cur.execute(
            "INSERT INTO {t}rm_reverts (checkpoint_id, session_id, version, now_active, generation,"
            " command_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (e.checkpoint_id, sid, e.originator_version, e.now_active, e.generation, e.command_id,
             e.created_at),
        )
        self._touch(cur, sid, e, "active_checkpoint_id = ?, context_generation = ?",
                    (e.now_active, e.generation))

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
        self._touch(cur, sid, e, "learned_windows = ?", (dumps(windows),))

    def _tool_results_cleared(self, cur: Cur, e: Any) -> None:
        sid = self._sid(cur, e)
        added = 0
        for seq, text in zip(e.seqs, e.placeholders):
            cur.execute(
                "INSERT INTO {t}rm_cleared (session_id, seq, placeholder, version)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, seq) DO NOTHING",
                (sid, seq, storable_text(text), e.originator_version),
            )
            added += max(cur.rowcount, 0)
        self._touch(cur, sid, e, "cleared_count = cleared_count + ?", (added,))

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


def _state_text(state: Any) -> str | None:
    """A checkpoint's provider-native state as stored in its row (ADR 0039): JSON, which
    escapes every control character, so the opaque values come back byte-identical."""
    return dumps(state) if state else None


def _ledger_text(ledger: Any) -> str | None:
    """The checkpoint's ledger as stored in its row (values come from messages: no NUL)."""
    return storable_text(dumps(ledger)) if ledger else None
