"""One consistent snapshot of a session from the read model (spec §7.1, seed 003 rule 6).

``ContextCache.get`` returns one consistent snapshot of a session from the read model,
kept in memory and extended by newly appended messages, so a turn costs O(new
messages), not O(history). The cached copy is never trusted blindly: every use re-reads
the session row and the messages after the last one it holds, and any change of
generation (checkpoint, clear, rewind, delete) reloads it.

``record_tokens`` counts each message once per encoding (kept in memory and in the read
model). This module needs the read model and the token ports only, never ``Services``:
``Services`` holds the cache (no import circle, issue 14).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from context_compaction.domain.clearing import apply_clearing
from context_compaction.domain.errors import SessionDeleted, SessionNotFound
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.projection import (
    ContextProjection,
    ProjectionBuilder,
    checkpoint_problem,
)
from context_compaction.domain.provider_messages import ProviderIdentity

from ..contracts.ports import CheckpointRow, ReadModel, SessionRow, TokenCountCache, TokenCounter

log = logging.getLogger("context_compaction.context")


def checkpoint_ref(row: CheckpointRow | None) -> Checkpoint | None:
    """The checkpoint a read-model row holds (issue 14b: the seam for the row type)."""
    return None if row is None else Checkpoint.from_row(row)


class _Cached:
    """What the cache keeps of one session between commands: it grows by appends.

    Only touched under ``lock``; commands never see it, they get a ``SessionContext``
    snapshot of it (``snapshot``), so a reader extending it can never change what a
    command in another thread is reading.
    """

    __slots__ = ("builders", "checkpoint", "cleared", "counted", "lock", "notes", "pinned",
                 "pinned_seqs", "records", "session", "tokens")

    def __init__(
        self,
        session: SessionRow,
        checkpoint: Checkpoint | None,
        records: list[MessageRecord],
        notes: list[str],
        pinned: list[MessageRecord] | None = None,
        pinned_seqs: tuple[int, ...] = (),
        cleared: dict[int, str] | None = None,
    ) -> None:
        self.pinned = pinned or []
        """Pinned visible messages below the checkpoint's boundary (issue 16)."""
        self.pinned_seqs = pinned_seqs
        self.session = session
        self.checkpoint = checkpoint
        self.records = records  # append-only: a snapshot's records are always a prefix
        self.notes = notes
        # A pin shows its message verbatim (DESIGN §15), also one cleared before the pin.
        pins = set(pinned_seqs)
        self.cleared = {seq: text for seq, text in (cleared or {}).items() if seq not in pins}
        """seq → placeholder of cleared tool results (issue 17): fixed for the life of
        this cache entry, since a new clearing changes ``cleared_count`` (not usable)."""
        self.tokens: dict[str, dict[int, int]] = {}
        """Per encoding, seq → tokens; only ever gains keys, and a seq's count never
        changes (its message is immutable), so snapshots read it without the lock."""
        self.counted: dict[str, int] = {}
        self.builders: dict[ProviderIdentity | None, ProjectionBuilder] = {}
        self.lock = threading.RLock()

    def extend(self, session: SessionRow, records: list[MessageRecord]) -> None:
        self.session = session
        if records:
            self.records.extend(records)
            for builder in self.builders.values():
                builder.extend(records)

    def builder(self, identity: ProviderIdentity | None) -> ProjectionBuilder:
        """The shared builder for ``identity``, fed with every cached record."""
        found = self.builders.get(identity)
        if found is None:
            found = self.builders[identity] = ProjectionBuilder(identity)
            found.extend(apply_clearing(self.records, self.cleared))
        return found

    def snapshot(self) -> SessionContext:
        ctx = SessionContext(self.session, self.checkpoint, list(self.records), list(self.notes), self)
        ctx.pinned, ctx.pinned_seqs = list(self.pinned), self.pinned_seqs
        return ctx


class SessionContext:
    """One consistent snapshot of a session, ready to project and count.

    Its session row, checkpoint and records never change; the per-message work
    (token counts, converted provider messages) is shared with the cache, and used
    only while it still describes exactly these records.
    """

    __slots__ = ("_own_builders", "_shared", "checkpoint", "cleared", "notes", "pinned", "pinned_seqs",
                 "records", "session")

    def __init__(
        self,
        session: SessionRow,
        checkpoint: Checkpoint | None,
        records: list[MessageRecord],
        notes: list[str],
        shared: _Cached,
    ) -> None:
        self.session = session
        self.checkpoint = checkpoint
        self.records = records
        """Visible raw messages from the checkpoint boundary on (all visible ones when
        there is no usable checkpoint), in seq order."""
        self.notes = notes
        self.pinned: list[MessageRecord] = []
        """Pinned visible messages below the checkpoint's boundary, shown after it."""
        self.pinned_seqs: tuple[int, ...] = ()
        """Every pinned seq of the session."""
        self.cleared = shared.cleared
        """seq → placeholder of the cleared tool results; ``records`` stay raw (a summary
        reads the raw text), projections show the placeholders."""
        self._shared = shared
        self._own_builders: dict[ProviderIdentity | None, ProjectionBuilder] = {}

    @property
    def lock(self) -> threading.RLock:
        """Hold it while using a ``builder``."""
        return self._shared.lock

    @property
    def tokens(self) -> dict[str, dict[int, int]]:
        """Per encoding, seq → tokens; covers ``records`` once ``record_tokens`` ran."""
        return self._shared.tokens

    @property
    def last_seq(self) -> int:
        return self.records[-1]["seq"] if self.records else 0

    def builder(self, identity: ProviderIdentity | None) -> ProjectionBuilder:
        """A projection builder fed with exactly ``records`` (call with ``lock`` held).

        The shared one while the cache holds no more than this snapshot; once another
        command extended it, one of this snapshot's own (rebuilt once: the cost of
        losing a race, never a wrong projection).
        """
        with self._shared.lock:
            if len(self._shared.records) == len(self.records):
                return self._shared.builder(identity)
            own = self._own_builders.get(identity)
            if own is None:
                own = self._own_builders[identity] = ProjectionBuilder(identity)
                own.extend(apply_clearing(self.records, self.cleared))
            return own

    def projection(self, identity: ProviderIdentity | None) -> ContextProjection:
        with self._shared.lock:
            return self.builder(identity).build(
                checkpoint=self.checkpoint,
                context_generation=self.session.context_generation,
                diagnostics=self.notes,
                pinned=self.pinned,
            )

    def history_tokens(
        self, projection: ContextProjection, identity: ProviderIdentity | None, encoding: str
    ) -> int:
        with self._shared.lock:
            return self.builder(identity).history_tokens(projection, self.tokens[encoding], encoding)

    def history_digest(self, projection: ContextProjection, identity: ProviderIdentity | None, count: int) -> str:
        """Chained digest of the first ``count`` history messages of ``projection``."""
        with self._shared.lock:
            return self.builder(identity).history_digest(projection, count)


def _usable(session: SessionRow, cached: _Cached) -> bool:
    """May ``cached`` be extended to ``session`` by appends alone?"""
    return (
        not cached.notes
        and session.context_generation == cached.session.context_generation
        and session.active_checkpoint_id
        == (cached.checkpoint.checkpoint_id if cached.checkpoint else None)
        and session.version >= cached.session.version
        and session.cleared_count == cached.session.cleared_count
    )


class ContextCache:
    """Session contexts of this process, least recently used evicted by message count."""

    def __init__(self, max_messages: int = 200_000) -> None:
        self.max_messages = max_messages
        self._items: OrderedDict[str, _Cached] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, read_model: ReadModel, session_id: str, *, allow_deleted: bool = False
    ) -> SessionContext:
        """A snapshot of the session as stored now; other commands never change it."""
        with self._lock:
            cached = self._items.get(session_id)
            if cached is not None:
                self._items.move_to_end(session_id)
        if cached is not None:
            with cached.lock:
                view = read_model.session_view(session_id, after_seq=_last_seq(cached.records))
                if view is None:
                    self.drop(session_id)
                    raise SessionNotFound(f"session {session_id!r} does not exist")
                # A pin or unpin changes which cleared results are shown: read in full.
                repinned = view.pinned_seqs != cached.pinned_seqs and view.session.cleared_count
                if _usable(view.session, cached) and not repinned:
                    cached.extend(view.session, view.messages)
                    cached.pinned, cached.pinned_seqs = view.pinned, view.pinned_seqs
                    _check_live(cached.session, allow_deleted)
                    return cached.snapshot()
        ctx = load_context(read_model, session_id, allow_deleted=allow_deleted)
        if not ctx.notes:
            self._store(session_id, ctx._shared)
        return ctx

    def _store(self, session_id: str, cached: _Cached) -> None:
        with self._lock:
            self._items[session_id] = cached
            self._items.move_to_end(session_id)
            total = sum(len(c.records) for c in self._items.values())
            while total > self.max_messages and len(self._items) > 1:
                _, evicted = self._items.popitem(last=False)
                total -= len(evicted.records)

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._items.pop(session_id, None)


def _last_seq(records: list[MessageRecord]) -> int:
    return records[-1]["seq"] if records else 0


def _check_live(session: SessionRow, allow_deleted: bool) -> None:
    if session.deleted and not allow_deleted:
        raise SessionDeleted(f"session {session.session_id!r} is deleted")


def load_context(
    read_model: ReadModel, session_id: str, *, allow_deleted: bool = False
) -> SessionContext:
    """Read the session, its active checkpoint and tail in one snapshot (no cache).

    A broken checkpoint (missing row, empty summary, illegal boundary) falls back to
    all visible raw history with a diagnostic, and never asks a provider (spec §14).
    """
    for _ in range(5):
        view = read_model.session_view(session_id)
        if view is None:
            raise SessionNotFound(f"session {session_id!r} does not exist")
        session = view.session
        _check_live(session, allow_deleted)
        notes: list[str] = []
        if session.active_checkpoint_id and view.checkpoint is None:
            notes.append(f"active checkpoint {session.active_checkpoint_id} is missing")
        checkpoint = checkpoint_ref(view.checkpoint)
        problem = checkpoint_problem(checkpoint, view.messages) if checkpoint else None
        if not notes and not problem:
            return _Cached(
                session, checkpoint, list(view.messages), [], view.pinned, view.pinned_seqs,
                view.cleared,
            ).snapshot()
        full = read_model.session_view(session_id, tail_only=False)
        if full is None or full.session.version != session.version:
            continue  # the session moved between the two reads; read again
        notes += [problem] if problem else []
        log.warning(
            "checkpoint unusable, projecting raw history",
            extra={"session_id": session_id, "checkpoint_id": session.active_checkpoint_id},
        )
        return _Cached(
            session, None, list(full.messages), notes, pinned_seqs=full.pinned_seqs, cleared=full.cleared
        ).snapshot()
    raise SessionNotFound(f"session {session_id!r} kept changing; try again")


# -------------------------------------------------------------------- tokens
def record_tokens(
    counter: TokenCounter, token_cache: TokenCountCache, ctx: SessionContext, encoding: str
) -> dict[int, int]:
    """Token count per seq of ``ctx.records``; a message is tokenized once per encoding.

    Counts go into the cache shared by snapshots of the session: the first snapshot
    to need a message counts it, the others find it.
    """
    key = counter.cache_key(encoding)
    shared = ctx._shared
    with shared.lock:
        known = shared.tokens.get(encoding)
        if known is None:
            first = ctx.records[0]["seq"] if ctx.records else 1
            known = shared.tokens[encoding] = (
                token_cache.token_counts(ctx.session.session_id, key, first)
                if ctx.records
                else {}
            )
            shared.counted[encoding] = 0
            # A cleared result costs its placeholder: counted here, kept in memory only
            # (the stored count cache holds raw messages' counts).
            for m in apply_clearing([r for r in ctx.records if r["seq"] in shared.cleared], shared.cleared):
                known[m["seq"]] = counter.count_record(m, encoding)
        # ``ctx.records`` is a prefix of the shared records: whatever the shared
        # count already covers needs no look.
        start = shared.counted.get(encoding, 0)
        missing = {
            r["seq"]: counter.count_record(r, encoding)
            for r in ctx.records[start:]
            if r["seq"] not in known
        }
        shared.counted[encoding] = max(start, len(ctx.records))
        if missing:
            known.update(missing)
    if missing:
        try:
            token_cache.store_token_counts(ctx.session.session_id, key, missing)
        except Exception as exc:  # noqa: BLE001 - a cache write must never fail a read
            log.warning(
                "token count cache not written",
                extra={"session_id": ctx.session.session_id, "error_class": type(exc).__name__},
            )
    return known


