"""``MemoryReadModel``: the ReadModel port over the in-memory tables.

Each query is ``SqlReadModel``'s, read from dicts under the recorder's writer lock (one
consistent snapshot, never behind the events: they are projected in the same critical
section). Messages are decoded from their stored events with the SQL backends' own
``message_record``, so records are the same objects field for field. Search ranks by
its own score (the port promises scores comparable within one answer only).
"""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import Mapper

from context_compaction.application.contracts.views import (
    CheckpointRow,
    CommandRecord,
    RevertRecord,
    SearchHit,
    SessionRow,
    SessionSnapshotView,
)
from context_compaction.domain.messages import MessageRecord

from ..readmodel.rows import checkpoint_row, message_record, session_row
from ..readmodel.search import is_truncated, query_terms, search_row, snippet, split_terms, term_words
from ..transcoding import PlainJSONTranscoder
from .recorder import ProjectingMemoryRecorder

#: rm_sessions without aggregate_id: the columns ``session_row`` reads.
_SESSION_VIEW = (0, *range(2, 17))


class MemoryReadModel:
    def __init__(self, recorder: ProjectingMemoryRecorder, mapper: Mapper[Any]) -> None:
        self.recorder = recorder
        self.lock = recorder.writer_lock
        self.t = recorder.tables
        self.mapper = mapper

    _decode = staticmethod(PlainJSONTranscoder.decode_values)

    def _session(self, session_id: str) -> SessionRow | None:
        row = self.t.get("rm_sessions", session_id)
        return session_row([row[i] for i in _SESSION_VIEW]) if row is not None else None

    def session(self, session_id: str) -> SessionRow | None:
        with self.lock:
            return self._session(session_id)

    def sessions(self, limit: int = 100, offset: int = 0) -> list[SessionRow]:
        with self.lock:
            rows = sorted(self.t.data["rm_sessions"].values(), key=lambda r: (r[12], r[0]))
            return [session_row([r[i] for i in _SESSION_VIEW]) for r in rows[offset: offset + limit]]

    def _records(self, session_id: str, seqs: list[tuple[int, int]]) -> list[MessageRecord]:
        """(seq, visible) → records, decoded from the message events' stored state."""
        bodies, messages = self.t.bodies, self.t.data["rm_messages"]
        return [message_record((seq, bodies[messages[(session_id, seq)][3]], visible, True), self._decode)
                for seq, visible in seqs]

    def _messages(
        self, session_id: str, from_seq: int, upto_seq: int | None, include_invalidated: bool,
        limit: int | None = None, next_seq: int | None = None,
    ) -> list[MessageRecord]:
        rows = self.t.data["rm_messages"]
        if next_seq is not None and next_seq - from_seq < len(rows):
            # A session's seqs are below its next_seq: a turn's tail is looked up, not
            # found by scanning every session's messages (O(N) a turn, issue 38).
            stop = next_seq if upto_seq is None else min(next_seq, upto_seq + 1)
            chosen = [(seq, row[2]) for seq in range(from_seq, stop)
                      if (row := rows.get((session_id, seq))) is not None and (include_invalidated or row[2] == 1)]
        else:
            upper = upto_seq if upto_seq is not None else float("inf")
            chosen = sorted(
                (seq, visible) for (sid, seq), (_, _, visible, _) in rows.items()
                if sid == session_id and from_seq <= seq <= upper and (include_invalidated or visible == 1)
            )
        if limit is not None:
            chosen = chosen[: max(limit, 0)]
        return self._records(session_id, chosen)

    def messages(
        self,
        session_id: str,
        *,
        from_seq: int = 1,
        upto_seq: int | None = None,
        include_invalidated: bool = False,
        limit: int | None = None,
    ) -> list[MessageRecord]:
        with self.lock:
            return self._messages(session_id, from_seq, upto_seq, include_invalidated, limit)

    def session_view(
        self, session_id: str, *, tail_only: bool = True, after_seq: int = 0
    ) -> SessionSnapshotView | None:
        with self.lock:
            session = self._session(session_id)
            if session is None:
                return None
            checkpoint = None
            if session.active_checkpoint_id:
                checkpoint = self._checkpoint(session.active_checkpoint_id)
            from_seq = checkpoint.first_retained_seq if (checkpoint and tail_only) else 1
            from_seq = max(from_seq, after_seq + 1)
            messages = self._messages(session_id, from_seq, None, False, next_seq=session.next_seq)
            pinned_seqs = tuple(sorted(seq for sid, seq in self.t.data["rm_pins"] if sid == session_id))
            pinned: list[MessageRecord] = []
            if checkpoint is not None and tail_only and pinned_seqs and pinned_seqs[0] < checkpoint.first_retained_seq:
                pinned = self._pinned(session_id, checkpoint.first_retained_seq)
            cleared: dict[int, str] = {}
            if session.cleared_count and after_seq == 0:
                cleared = {seq: row[2] for (sid, seq), row in self.t.data["rm_cleared"].items()
                           if sid == session_id and seq >= from_seq}
            return SessionSnapshotView(
                session=session, checkpoint=checkpoint, messages=messages, pinned=pinned,
                pinned_seqs=pinned_seqs, cleared=cleared,
            )

    def _pinned(self, session_id: str, below_seq: int) -> list[MessageRecord]:
        messages = self.t.data["rm_messages"]
        seqs = sorted(seq for sid, seq in self.t.data["rm_pins"] if sid == session_id and seq < below_seq)
        return self._records(session_id, [
            (seq, 1) for seq in seqs if (row := messages.get((session_id, seq))) and row[2] == 1
        ])

    def cleared_results(self, session_id: str, upto_version: int | None = None) -> dict[int, str]:
        with self.lock:
            return {seq: row[2] for (sid, seq), row in self.t.data["rm_cleared"].items()
                    if sid == session_id and (upto_version is None or row[3] <= upto_version)}

    def reverts(self, session_id: str) -> list[RevertRecord]:
        with self.lock:
            rows = sorted((r for r in self.t.data["rm_reverts"].values() if r[1] == session_id),
                          key=lambda r: r[2])
        return [RevertRecord(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    def revert_command(self, command_id: str) -> RevertRecord | None:
        with self.lock:
            for r in self.t.data["rm_reverts"].values():
                if r[5] == command_id:
                    return RevertRecord(r[0], r[1], r[2], r[3], r[4], r[5])
        return None

    def _checkpoint(self, checkpoint_id: str) -> CheckpointRow | None:
        row = self.t.get("rm_checkpoints", checkpoint_id)
        return checkpoint_row(row) if row is not None else None

    def checkpoint(self, checkpoint_id: str) -> CheckpointRow | None:
        with self.lock:
            return self._checkpoint(checkpoint_id)

    def checkpoints(self, session_id: str) -> list[CheckpointRow]:
        with self.lock:
            rows = sorted((r for r in self.t.data["rm_checkpoints"].values() if r[1] == session_id),
                          key=lambda r: r[2])
        return [checkpoint_row(r) for r in rows]

    def command(self, command_id: str) -> CommandRecord | None:
        with self.lock:
            row = self.t.get("rm_commands", command_id)
        return CommandRecord(*row) if row is not None else None

    def search(
        self, session_id: str, query: str, *, limit: int, include_invalidated: bool
    ) -> list[SearchHit]:
        """Every term a phrase of whole words (as SQLite's FTS5 ``unicode61`` tokenizer
        splits them, case and diacritics folded); scored by how often they occur. A term
        of Chinese, Japanese or Korean is a substring of the text, as on SQL
        (``split_terms``)."""
        terms = query_terms(query)
        word_terms, substrings = split_terms(terms)
        phrases = [term_words(term) for term in word_terms]
        if not terms:
            return []
        with self.lock:
            self._index(session_id)  # (as SQL: whenever the query has a term)
            if not all(phrases):
                return []
            session = self.t.get("rm_sessions", session_id)
            active = self._checkpoint(session[7]) if session and session[7] else None
            boundary = active.first_retained_seq if active else None
            hits = []
            for (sid, seq), (_, _, role, turn_id, body) in self.t.data["rm_search"].items():
                visible = self.t.data["rm_messages"][(sid, seq)][2] == 1
                if sid != session_id or not (visible or include_invalidated):
                    continue
                words = term_words(body)
                counts = [_occurrences(words, phrase) for phrase in phrases]
                if not all(counts) or not all(part in body for part in substrings):
                    continue
                score = round(sum(counts) / (len(words) + 1), 6)
                compacted = boundary is not None and seq < boundary
                hits.append(SearchHit(seq, role, turn_id, snippet(body, terms), score, compacted, not visible,
                                      is_truncated(body)))
        hits.sort(key=lambda h: (-h.score, h.seq))
        return hits[:limit]

    def _index(self, session_id: str) -> None:
        """``SqlReadModel.index_search`` on the dicts: the session's messages above its
        mark get their rm_search rows, so both backends lag the same way (ADR 0049)."""
        mark = self.t.search_marks.get(session_id, 0)
        seqs = sorted(seq for sid, seq in self.t.data["rm_messages"] if sid == session_id and seq > mark)
        messages = self.t.data["rm_messages"]
        for seq in seqs:
            key = (session_id, seq)
            try:
                row = search_row(session_id, seq, self._decode(self.t.bodies[messages[key][3]]))
            except Exception:  # noqa: BLE001 - as index_session: skipped, its queries report it
                continue
            if self.t.get("rm_search", key) is None:
                self.t.put("rm_search", key, row)
        if seqs:
            self.t.search_marks[session_id] = seqs[-1]

    def rebuild(self) -> int:
        """Drop every projected row and replay the whole notification log (as
        ``SqlReadModel.rebuild``); returns the last notification id."""
        with self.lock:
            self.recorder.reset_projection()
            notifications = self.recorder.select_notifications(start=1, limit=2**62)
            self.recorder.projector.apply_all(
                self.t, [(n.id, self.mapper.to_domain_event(n)) for n in notifications]
            )
            return notifications[-1].id if notifications else 0

    def select(self, table: str, columns: tuple[str, ...], where: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.t.select(table, columns, where)

    def table_rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of one projected table in key order, as ``SqlReadModel.table_rows``."""
        with self.lock:
            return self.t.rows(table)


def _occurrences(words: tuple[str, ...], phrase: tuple[str, ...]) -> int:
    n = len(phrase)
    return sum(1 for i in range(len(words) - n + 1) if words[i: i + n] == phrase)
