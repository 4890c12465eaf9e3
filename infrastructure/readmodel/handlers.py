"""One method per Session event: how it changes the read-model tables (ADR 0050).

Written against ``TableOps`` (``ops.py``), the same methods project into SQL and into
the memory backend's dicts. A new event's projection is one method here and one entry
in ``handler_table``; its table, if it needs one, is one ``Table`` in ``schema.PROJECTED``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.persistence import IntegrityError

from context_compaction.domain.session import Session
from context_compaction.domain.summary import storable_text

from . import tree
from .ops import TableOps
from .rows import dumps

log = logging.getLogger("context_compaction.readmodel")


class ProjectionOutOfOrder(Exception):
    """The read model saw an event it cannot place: a bug or a corrupted database."""


class CommandIdTaken(IntegrityError):
    """A host command id another session already used (ADR 0019): a lost race even
    under the writer lock, so the command loop reloads and reports the earlier use."""


class EventHandlers:
    """Every backend's projection of Session events; other aggregates' events are
    ignored. Remembers which session each aggregate is (``session_of``)."""

    def __init__(self) -> None:
        self._session_ids: dict[str, str] = {}
        self._handlers = self.handler_table()

    def handler_table(self) -> dict[type, Callable[[TableOps, Any], None]]:
        """Every Session event but ``Started`` and ``MessageAppended``, which
        ``apply_all`` dispatches itself (they take ``strict``; appends are batched)."""
        return {
            Session.ModelConfigured: self._configured,
            Session.CheckpointCommitted: self._checkpoint_committed,
            Session.HistoryInvalidated: self._history_invalidated,
            Session.Deleted: self._deleted,
            Session.Purged: self._deleted,  # (deleted; its content is erased in the events)
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

    def apply_all(self, ops: TableOps, events: Sequence[tuple[int, Any]], *, strict: bool = False) -> None:
        """Apply (notification id, event) pairs in order, a run of one session's appended
        messages with one statement per table. ``strict`` (new events): a host command id
        another session used fails the transaction (ADR 0019); a replay keeps the first
        use and warns."""
        run: list[tuple[int, Any]] = []
        for notification_id, domain_event in events:
            if type(domain_event) is Session.MessageAppended:
                # (``is`` first: a command's events share one id object, and UUID's
                # ``==`` is a Python call per message)
                first = run[0][1].originator_id if run else None
                if run and first is not domain_event.originator_id and first != domain_event.originator_id:
                    self._messages_appended(ops, run, strict)
                    run = []
                run.append((notification_id, domain_event))
                continue
            if run:
                self._messages_appended(ops, run, strict)
                run = []
            if type(domain_event) is Session.Started:
                self._started(ops, domain_event, strict)
                continue
            handler = self._handlers.get(type(domain_event))
            if handler is not None:
                handler(ops, domain_event)
        if run:
            self._messages_appended(ops, run, strict)

    def _sid(self, ops: TableOps, event: Any) -> str:
        key = event.originator_id.hex
        sid = self._session_ids.get(key)
        if sid is None:
            row = ops.select_one("rm_sessions", ("session_id",), {"aggregate_id": key})
            if row is None:
                raise ProjectionOutOfOrder(f"event for unknown aggregate {key}")
            sid = self._session_ids[key] = row[0]
        return sid

    def _touch(self, ops: TableOps, sid: str, event: Any, add: dict[str, Any] | None = None, **values: Any) -> None:
        """The session row's version and time, with the event's own ``values`` set and
        ``add`` columns incremented."""
        ops.update(
            "rm_sessions", {"session_id": sid},
            values={"version": event.originator_version, "updated_at": event.created_at, **values},
            add=add or {},
        )

    def _started(self, ops: TableOps, e: Any, strict: bool) -> None:
        self._session_ids[e.originator_id.hex] = e.session_id
        ops.insert("rm_sessions", [(
            e.session_id, e.originator_id.hex, e.model, e.agent_token_limit, e.originator_version,
            1, 0, None, 0, 0, 0, 0, e.created_at, e.created_at, "{}", 0,
            (getattr(e, "parent", None) or {}).get("parent_session_id"),
        )])
        if getattr(e, "parent", None):  # a fork or a sub-agent (issue 42)
            tree.project_started(ops, e)
        if e.command_id is not None:  # the host's (unique by contract) or ours (random)
            self._register_command(ops, e.command_id, e.session_id, "start_session", 0, 0, strict)

    def _register_command(
        self, ops: TableOps, command_id: str, sid: str, kind: str, lo: int, hi: int, strict: bool
    ) -> None:
        # A command's later messages extend its span; another command's id is refused.
        ops.upsert("rm_commands", (command_id, sid, kind, lo, hi), ("last_seq",), ("session_id", "kind"))
        if strict and getattr(ops, "deferred_checks", False):
            # (checked at the COMMIT; a failed check appends again on the careful path,
            # which raises CommandIdTaken below)
            where = {"command_id": command_id, "session_id": sid, "kind": kind}
            ops.expect_one("rm_commands", where)  # type: ignore[attr-defined]
            return
        if ops.rowcount == 1:
            return
        if strict:
            # IntegrityError: the store reports a conflict, the command reloads and
            # finds the earlier use (idempotency_conflict); nothing is written.
            raise CommandIdTaken("command id already used by another command")
        log.warning(
            "command id used twice in the stored events; the first use is kept",
            extra={"session_id": sid, "kind": kind},
        )

    def _configured(self, ops: TableOps, e: Any) -> None:
        self._touch(ops, self._sid(ops, e), e, model=e.model, agent_token_limit=e.agent_token_limit)

    def _messages_appended(self, ops: TableOps, run: list[tuple[int, Any]], strict: bool) -> None:
        sid = self._sid(ops, run[0][1])
        ops.insert("rm_messages", [(sid, e.seq, 1, notification_id) for notification_id, e in run])
        last = run[-1][1]
        self._touch(ops, sid, last, add={"message_count": len(run)}, next_seq=last.seq + 1)
        spans: dict[str, list[int]] = {}
        for _, e in run:
            if e.command_id is not None and not e.command_generated:
                span = spans.setdefault(e.command_id, [e.seq, e.seq])
                span[1] = e.seq
        for command_id, (lo, hi) in spans.items():
            self._register_command(ops, command_id, sid, "append_messages", lo, hi, strict)

    def _checkpoint_committed(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        ops.insert("rm_checkpoints", [(
            e.checkpoint_id, sid, e.generation, e.parent_checkpoint_id,
            storable_text(e.summary),  # (summaries of older versions may hold NUL)
            e.first_retained_seq, e.source_max_seq, e.trigger_reason, e.provider_kind, e.model,
            e.tokens_before, e.tokens_after, int(bool(e.degraded)), dumps(e.summary_source),
            e.created_at, e.originator_version,
            # (the ledger's values come from messages: no NUL)
            storable_text(dumps(e.ledger)) if getattr(e, "ledger", None) else None,
            # The provider-native state (ADR 0039) as JSON, which escapes every control
            # character, so the opaque values come back byte-identical.
            dumps(e.provider_state) if getattr(e, "provider_state", None) else None,
        )])
        self._touch(ops, sid, e, add={"checkpoint_count": 1},
                    active_checkpoint_id=e.checkpoint_id, context_generation=e.generation)

    def _history_invalidated(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        excluded = 0
        for lo, hi in e.ranges:
            ops.update("rm_messages", {"session_id": sid, "visible": 1}, values={"visible": 0},
                       between=("seq", lo, hi))
            excluded += max(ops.rowcount, 0)
            ops.delete("rm_pins", {"session_id": sid}, between=("seq", lo, hi))
        tree.hide_inherited(ops, sid, e.ranges)  # (a fork's inherited seqs, issue 42)
        ops.insert("rm_invalidations", [(
            sid, e.originator_version, e.kind, dumps(e.ranges), excluded, storable_text(e.reason),
            e.generation, e.created_at,
        )])
        self._touch(ops, sid, e, add={"invalidated_count": excluded},
                    active_checkpoint_id=None, context_generation=e.generation)

    def _messages_pinned(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        ops.insert("rm_pins", [(sid, seq) for seq in e.seqs], if_absent=True)
        self._touch(ops, sid, e)

    def _messages_unpinned(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        for seq in e.seqs:
            ops.delete("rm_pins", {"session_id": sid, "seq": seq})
        self._touch(ops, sid, e)

    def _checkpoint_reverted(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        ops.insert("rm_reverts", [(
            e.checkpoint_id, sid, e.originator_version, e.now_active, e.generation, e.command_id,
            e.created_at,
        )])
        self._touch(ops, sid, e, active_checkpoint_id=e.now_active, context_generation=e.generation)

    def _deleted(self, ops: TableOps, e: Any) -> None:
        self._touch(ops, self._sid(ops, e), e, deleted=1)

    def _window_learned(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        row = ops.select_one("rm_sessions", ("learned_windows",), {"session_id": sid})
        windows = json.loads(row[0]) if row and row[0] else {}
        windows[e.model] = {
            "provider": e.provider,
            "model": e.model,
            "window": e.window,
            "prompt_tokens": e.prompt_tokens,
            "estimated_tokens": e.estimated_tokens,
        }
        self._touch(ops, sid, e, learned_windows=dumps(windows))

    def _tool_results_cleared(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        added = 0
        for seq, text in zip(e.seqs, e.placeholders):
            ops.insert("rm_cleared", [(sid, seq, storable_text(text), e.originator_version)], if_absent=True)
            added += max(ops.rowcount, 0)
        self._touch(ops, sid, e, add={"cleared_count": added})

    def _legacy_imported(self, ops: TableOps, e: Any) -> None:
        sid = self._sid(ops, e)
        ops.insert("rm_imports", [(
            sid, e.originator_version, e.source, e.imported_messages, e.skipped_messages,
            e.legacy_seq_upto, e.last_compressed_message_at, e.created_at,
        )])
        self._touch(ops, sid, e)

