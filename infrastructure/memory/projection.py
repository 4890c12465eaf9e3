"""One method per Session event, on the in-memory tables: ``readmodel/handlers.py``
line for line, so that both backends answer the same (the contract test compares them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.persistence import IntegrityError

from context_compaction.domain.session import Session
from context_compaction.domain.summary import storable_text

from ..readmodel import ProjectionOutOfOrder
from ..readmodel.handlers import _state_text
from ..readmodel.rows import dumps
from .tables import Tables

log = logging.getLogger("context_compaction.readmodel")


class MemoryProjector:
    """Applies Session events to ``Tables``; other aggregates' events are ignored."""

    def __init__(self, tables: Tables) -> None:
        self.t = tables
        self._session_ids: dict[str, str] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
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

    def forget(self) -> None:
        self._session_ids.clear()

    def session_of(self, aggregate_hex: str) -> str | None:
        return self._session_ids.get(aggregate_hex)

    def apply_all(self, events: Sequence[tuple[int, Any, bytes]]) -> None:
        """Apply (notification id, domain event, stored state) in order; a host command
        id another command used raises ``IntegrityError`` (the caller undoes all)."""
        for notification_id, event, state in events:
            kind = type(event)
            if kind is Session.MessageAppended:
                self._message_appended(event, notification_id, state)
            elif kind is Session.Started:
                self._started(event)
            else:
                handler = self._handlers.get(kind)
                if handler is not None:
                    handler(event)

    def _sid(self, event: Any) -> str:
        sid = self._session_ids.get(event.originator_id.hex)
        if sid is None:
            raise ProjectionOutOfOrder(f"event for unknown aggregate {event.originator_id.hex}")
        return sid

    def _touch(self, sid: str, event: Any, **values: Any) -> None:
        self.t.update(
            "rm_sessions", sid, version=event.originator_version, updated_at=event.created_at, **values
        )

    def _session(self, sid: str) -> dict[str, Any]:
        from .tables import COLUMNS

        return dict(zip(COLUMNS["rm_sessions"], self.t.data["rm_sessions"][sid]))

    def _started(self, e: Any) -> None:
        if self.t.get("rm_sessions", e.session_id) is not None:
            raise IntegrityError("session row already exists")  # (the SQL primary key)
        self._session_ids[e.originator_id.hex] = e.session_id
        self.t.put("rm_sessions", e.session_id, (
            e.session_id, e.originator_id.hex, e.model, e.agent_token_limit, e.originator_version,
            1, 0, None, 0, 0, 0, 0, e.created_at, e.created_at, "{}", 0,
        ))
        if e.command_id is not None:
            self._register_command(e.command_id, e.session_id, "start_session", 0, 0)

    def _register_command(self, command_id: str, sid: str, kind: str, lo: int, hi: int) -> None:
        row = self.t.get("rm_commands", command_id)
        if row is None:
            self.t.put("rm_commands", command_id, (command_id, sid, kind, lo, hi))
        elif row[1] == sid and row[2] == kind:
            self.t.put("rm_commands", command_id, (command_id, sid, kind, row[3], hi))
        else:
            # The store reports a conflict, the command reloads and finds the earlier
            # use (idempotency_conflict); nothing is written (ADR 0019).
            raise IntegrityError("command id already used by another command")

    def _message_appended(self, e: Any, notification_id: int, state: bytes) -> None:
        sid = self._sid(e)
        key = (sid, e.seq)
        if self.t.get("rm_messages", key) is not None:
            raise IntegrityError("message seq already projected")  # (the SQL primary key)
        self.t.put("rm_messages", key, (sid, e.seq, 1, notification_id))
        self.t.put_body(key, state)
        row = self._session(sid)
        self._touch(sid, e, next_seq=e.seq + 1, message_count=row["message_count"] + 1)
        if e.command_id is not None and not e.command_generated:
            known = self.t.get("rm_commands", e.command_id)
            lo = known[3] if known is not None and known[1] == sid and known[2] == "append_messages" else e.seq
            self._register_command(e.command_id, sid, "append_messages", lo, e.seq)

    def _configured(self, e: Any) -> None:
        self._touch(self._sid(e), e, model=e.model, agent_token_limit=e.agent_token_limit)

    def _checkpoint_committed(self, e: Any) -> None:
        sid = self._sid(e)
        if self.t.get("rm_checkpoints", e.checkpoint_id) is not None or any(
            r[1] == sid and r[2] == e.generation for r in self.t.data["rm_checkpoints"].values()
        ):
            raise IntegrityError("checkpoint already projected")  # (the SQL unique keys)
        ledger = getattr(e, "ledger", None)
        self.t.put("rm_checkpoints", e.checkpoint_id, (
            e.checkpoint_id, sid, e.generation, e.parent_checkpoint_id, storable_text(e.summary),
            e.first_retained_seq, e.source_max_seq, e.trigger_reason, e.provider_kind, e.model,
            e.tokens_before, e.tokens_after, int(bool(e.degraded)), dumps(e.summary_source),
            e.created_at, e.originator_version, storable_text(dumps(ledger)) if ledger else None,
            _state_text(getattr(e, "provider_state", None)),
        ))
        count = self._session(sid)["checkpoint_count"]
        self._touch(sid, e, active_checkpoint_id=e.checkpoint_id, context_generation=e.generation,
                    checkpoint_count=count + 1)

    def _history_invalidated(self, e: Any) -> None:
        sid = self._sid(e)
        excluded = 0
        messages = self.t.data["rm_messages"]
        for lo, hi in e.ranges:
            for key, row in [(k, r) for k, r in messages.items() if k[0] == sid and lo <= k[1] <= hi]:
                if row[2] == 1:
                    self.t.put("rm_messages", key, (sid, row[1], 0, row[3]))
                    excluded += 1
            for key in [k for k in self.t.data["rm_pins"] if k[0] == sid and lo <= k[1] <= hi]:
                self.t.delete("rm_pins", key)
        self.t.put("rm_invalidations", (sid, e.originator_version), (
            sid, e.originator_version, e.kind, dumps(e.ranges), excluded, storable_text(e.reason),
            e.generation, e.created_at,
        ))
        count = self._session(sid)["invalidated_count"]
        self._touch(sid, e, active_checkpoint_id=None, context_generation=e.generation,
                    invalidated_count=count + excluded)

    def _messages_pinned(self, e: Any) -> None:
        sid = self._sid(e)
        for seq in e.seqs:
            self.t.put("rm_pins", (sid, seq), (sid, seq))
        self._touch(sid, e)

    def _messages_unpinned(self, e: Any) -> None:
        sid = self._sid(e)
        for seq in e.seqs:
            self.t.delete("rm_pins", (sid, seq))
        self._touch(sid, e)

    def _checkpoint_reverted(self, e: Any) -> None:
        sid = self._sid(e)
        if self.t.get("rm_reverts", e.checkpoint_id) is not None:
            raise IntegrityError("checkpoint already reverted")  # (the SQL primary key)
        self.t.put("rm_reverts", e.checkpoint_id, (
            e.checkpoint_id, sid, e.originator_version, e.now_active, e.generation, e.command_id,
            e.created_at,
        ))
        self._touch(sid, e, active_checkpoint_id=e.now_active, context_generation=e.generation)

    def _deleted(self, e: Any) -> None:
        self._touch(self._sid(e), e, deleted=1)

    def _window_learned(self, e: Any) -> None:
        sid = self._sid(e)
        text = self._session(sid)["learned_windows"]
        windows = json.loads(text) if text else {}
        windows[e.model] = {
            "provider": e.provider,
            "model": e.model,
            "window": e.window,
            "prompt_tokens": e.prompt_tokens,
            "estimated_tokens": e.estimated_tokens,
        }
        self._touch(sid, e, learned_windows=dumps(windows))

    def _tool_results_cleared(self, e: Any) -> None:
        sid = self._sid(e)
        added = 0
        for seq, text in zip(e.seqs, e.placeholders):
            if self.t.get("rm_cleared", (sid, seq)) is None:
                self.t.put("rm_cleared", (sid, seq), (sid, seq, storable_text(text), e.originator_version))
                added += 1
        count = self._session(sid)["cleared_count"]
        self._touch(sid, e, cleared_count=count + added)

    def _legacy_imported(self, e: Any) -> None:
        sid = self._sid(e)
        self.t.put("rm_imports", (sid, e.originator_version), (
            sid, e.originator_version, e.source, e.imported_messages, e.skipped_messages,
            e.legacy_seq_upto, e.last_compressed_message_at, e.created_at,
        ))
        self._touch(sid, e)
