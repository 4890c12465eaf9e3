"""Sessions as a tree in the read model (issue 42, ADR 0081).

The projection: a child's ``Started`` writes its ``rm_tree`` row and, for a fork, the
state it inherits into its own rows; no message row is copied. The reads:
``TreeReadModel`` wraps any backend's read model and resolves a fork's inherited prefix
from its ancestors' own rows.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from context_compaction.application.contracts.views import SearchHit, SessionSnapshotView
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.toolgroups import merge_ranges
from context_compaction.domain.tree import FORK, TreeLink, in_any

from .ops import TableOps
from .rows import dumps

TREE_COLS = ("parent_session_id", "kind", "fork_version", "fork_seq", "parent_tool_call_id", "hidden")


# ------------------------------------------------------------------ projection
def project_started(ops: TableOps, e: Any) -> None:
    """A child's first event: its link, and for a fork what it inherits."""
    link = TreeLink.from_json(e.parent)
    assert link is not None
    inherited = getattr(e, "inherited", None) or {}
    hidden = _clip(inherited.get("invalidated") or [], link.fork_seq)
    ops.insert("rm_tree", [(
        e.session_id, link.parent_session_id, link.kind, link.fork_version, link.fork_seq,
        link.parent_tool_call_id, dumps(hidden), e.created_at,
    )])
    if not inherited:
        return
    checkpoint = inherited.get("active_checkpoint")
    cleared = inherited.get("cleared") or []
    ops.update("rm_sessions", {"session_id": e.session_id}, values={
        "next_seq": int(inherited.get("next_seq", 1)),
        "message_count": int(inherited.get("message_count", 0)),
        "context_generation": int(inherited.get("context_generation", 0)),
        "active_checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "checkpoint_count": int(inherited.get("checkpoint_count", 0)),
        "invalidated_count": sum(hi - lo + 1 for lo, hi in hidden),
        "learned_windows": dumps(inherited.get("learned") or {}),
        "cleared_count": len(cleared),
    })
    pins = inherited.get("pinned") or []
    if pins:
        ops.insert("rm_pins", [(e.session_id, seq) for seq in pins], if_absent=True)
    if cleared:
        ops.insert("rm_cleared", [
            (e.session_id, int(seq), text, e.originator_version) for seq, text in cleared
        ], if_absent=True)


def hide_inherited(ops: TableOps, sid: str, ranges: list[list[int]]) -> None:
    """A fork's invalidation that reaches its inherited seqs (no row of its own holds them)."""
    row = ops.select_one("rm_tree", ("fork_seq", "hidden"), {"session_id": sid})
    if row is None or not row[0]:
        return
    clipped = _clip(ranges, int(row[0]))
    if clipped:
        hidden = merge_ranges([*json.loads(row[1]), *clipped])
        ops.update("rm_tree", {"session_id": sid}, values={"hidden": dumps(hidden)})


def _clip(ranges: list[list[int]], upto: int) -> list[list[int]]:
    return [[lo, min(hi, upto)] for lo, hi in ranges if lo <= upto]


# ------------------------------------------------------------------------ reads
@dataclasses.dataclass(frozen=True)
class TreeRow:
    session_id: str
    link: TreeLink
    hidden: list[list[int]]


def _tree_row(r: Any) -> TreeRow:
    """A row of (session_id, created_at, *TREE_COLS)."""
    link = TreeLink(str(r[2]), str(r[3]), int(r[4]), int(r[5]), r[6])
    return TreeRow(r[0], link, json.loads(r[7]) if r[7] else [])


class TreeReadModel:
    """A read model whose forks read their inherited prefix from their ancestors. A
    session without a parent costs nothing more: its row says so, and ``link`` is kept
    once known (a session's parent is fixed by its first event)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._links: dict[str, TreeLink | None] = {}
        self._rows: dict[str, tuple[int, TreeRow]] = {}  # fork → (its version, its row then)
        self._guard = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # -------------------------------------------------------------- the tree
    def _tree_rows(self, where: dict[str, str]) -> list[TreeRow]:
        rows = self.inner.select("rm_tree", ("session_id", "created_at", *TREE_COLS), where)
        return [_tree_row(r) for r in sorted(rows, key=lambda r: (r[1], r[0]))]

    def tree_row(self, session_id: str) -> TreeRow | None:
        rows = self._tree_rows({"session_id": session_id})
        return rows[0] if rows else None

    def children(self, session_id: str) -> list[TreeRow]:
        return self._tree_rows({"parent_session_id": session_id})

    def link(self, session_id: str) -> TreeLink | None:
        """The session's link (None: a root, or no such session)."""
        with self._guard:
            if session_id in self._links:
                return self._links[session_id]
        row = self.tree_row(session_id)
        link = row.link if row is not None else None
        if link is not None or self.inner.session(session_id) is not None:
            with self._guard:  # (fixed by the first event: kept once the session exists)
                self._links[session_id] = link
        return link

    def _fork(self, session_id: str) -> TreeRow | None:
        link = self.link(session_id)
        if link is None or link.kind != FORK or link.fork_seq == 0:
            return None
        return self.tree_row(session_id)  # (fresh: ``hidden`` grows with invalidations)

    def _fork_at(self, session_id: str, version: int) -> TreeRow | None:
        """``_fork`` for a view of the session at ``version``: the row read for that
        version is reused (only the session's own events change it)."""
        with self._guard:
            held = self._rows.get(session_id)
        if held is not None and held[0] == version:
            return held[1]
        row = self._fork(session_id)
        if row is not None:
            with self._guard:
                self._rows[session_id] = (version, row)
        return row

    def _inherited(self, link: TreeLink, lo: int, hi: int, limit: int | None = None) -> list[MessageRecord]:
        """The parent's messages ``lo..hi`` (``hi <= link.fork_seq``) as they are stored,
        hidden ones too, at most ``limit``; from the parent's own rows and, above it, its
        ancestors'."""
        parent = link.parent_session_id
        grand = self.link(parent)
        records: list[MessageRecord] = []
        if grand is not None and grand.kind == FORK and lo <= grand.fork_seq:
            records = self._inherited(grand, lo, min(hi, grand.fork_seq), limit)
        if limit is not None and len(records) >= limit:
            return records[:limit]
        records.extend(self.inner.messages(
            parent, from_seq=lo, upto_seq=hi, include_invalidated=True,
            limit=None if limit is None else limit - len(records),
        ))
        return records

    # ----------------------------------------------------------------- reads
    def session_view(
        self, session_id: str, *, tail_only: bool = True, after_seq: int = 0
    ) -> SessionSnapshotView | None:
        view = self.inner.session_view(session_id, tail_only=tail_only, after_seq=after_seq)
        if view is None or view.session.parent_session_id is None:
            return view  # type: ignore[no-any-return]
        fork = self._fork_at(session_id, view.session.version)
        if fork is None:
            return view  # type: ignore[no-any-return]
        link, hidden = fork.link, fork.hidden
        checkpoint = view.checkpoint
        from_seq = checkpoint.first_retained_seq if (checkpoint and tail_only) else 1
        from_seq = max(from_seq, after_seq + 1)
        messages = view.messages
        if from_seq <= link.fork_seq:
            inherited = [m for m in self._inherited(link, from_seq, link.fork_seq)
                         if not in_any(hidden, m["seq"])]
            messages = [*inherited, *messages]
        pinned = view.pinned
        if checkpoint is not None and tail_only and view.pinned_seqs:
            below = checkpoint.first_retained_seq
            wanted = {s for s in view.pinned_seqs if s < below and s <= link.fork_seq and not in_any(hidden, s)}
            if wanted:
                found = [m for m in self._inherited(link, min(wanted), max(wanted)) if m["seq"] in wanted]
                pinned = sorted([*found, *pinned], key=lambda m: m["seq"])
        return dataclasses.replace(view, messages=messages, pinned=pinned)

    def messages(
        self, session_id: str, *, from_seq: int = 1, upto_seq: int | None = None,
        include_invalidated: bool = False, limit: int | None = None,
    ) -> list[MessageRecord]:
        fork = self._fork(session_id)
        if fork is None or from_seq > fork.link.fork_seq:
            return self.inner.messages(  # type: ignore[no-any-return]
                session_id, from_seq=from_seq, upto_seq=upto_seq,
                include_invalidated=include_invalidated, limit=limit,
            )
        link, hidden = fork.link, fork.hidden
        hi = link.fork_seq if upto_seq is None else min(upto_seq, link.fork_seq)
        records: list[MessageRecord] = []
        lo = from_seq
        # A page of a long history reads a page of the parent's rows, not all of them;
        # hidden seqs are skipped, so with a limit it reads windows until the page is full.
        window = None if limit is None else max(limit, 1_000)
        while lo <= hi:
            chunk = self._inherited(link, lo, hi, window)
            for m in chunk:
                m["visible"] = not in_any(hidden, m["seq"])
                if include_invalidated or m["visible"]:
                    records.append(m)
            if window is None or len(chunk) < window or (limit is not None and len(records) >= limit):
                break
            lo = chunk[-1]["seq"] + 1
        if limit is not None and len(records) >= limit:
            return records[: max(limit, 0)]
        if upto_seq is None or upto_seq > link.fork_seq:
            records.extend(self.inner.messages(
                session_id, from_seq=link.fork_seq + 1, upto_seq=upto_seq,
                include_invalidated=include_invalidated,
                limit=None if limit is None else limit - len(records),
            ))
        return records

    def search(self, session_id: str, query: str, *, limit: int, include_invalidated: bool) -> list[SearchHit]:
        own = self.inner.search(session_id, query, limit=limit, include_invalidated=include_invalidated)
        fork = self._fork(session_id)
        if fork is None:
            return own  # type: ignore[no-any-return]
        session = self.inner.session(session_id)
        boundary = 0
        if session is not None and session.active_checkpoint_id:
            checkpoint = self.inner.checkpoint(session.active_checkpoint_id)
            boundary = checkpoint.first_retained_seq if checkpoint else 0
        hits = list(own)
        for hit in self._inherited_hits(fork.link, query, limit):
            hidden = in_any(fork.hidden, hit.seq)
            if hidden and not include_invalidated:
                continue
            hits.append(dataclasses.replace(hit, invalidated=hidden, compacted=hit.seq < boundary))
        hits.sort(key=lambda h: (-h.score, h.seq))
        return hits[:limit]

    def _inherited_hits(self, link: TreeLink, query: str, limit: int) -> list[SearchHit]:
        hits = [h for h in self.inner.search(link.parent_session_id, query, limit=limit, include_invalidated=True)
                if h.seq <= link.fork_seq]
        grand = self.link(link.parent_session_id)
        if grand is not None and grand.kind == FORK and grand.fork_seq:
            hits += [h for h in self._inherited_hits(grand, query, limit) if h.seq <= link.fork_seq]
        return hits

    def checkpoints(self, session_id: str) -> list[Any]:
        """The session's checkpoints, its ancestors' up to the fork point first."""
        return self._with_inherited("checkpoints", session_id)

    def reverts(self, session_id: str) -> list[Any]:
        """The session's reverts, its ancestors' up to the fork point first (a checkpoint
        it inherits already reverted is listed so)."""
        return self._with_inherited("reverts", session_id)

    def _with_inherited(self, query: str, session_id: str) -> list[Any]:
        """``query``'s rows of the session, after its ancestors' up to the fork point
        (rows with ``session_id`` and ``version``)."""
        own = getattr(self.inner, query)(session_id)
        link = self.link(session_id)
        if link is None or link.kind != FORK:
            return own  # type: ignore[no-any-return]
        inherited = [row for row in self._with_inherited(query, link.parent_session_id)
                     if row.version <= link.fork_version or row.session_id != link.parent_session_id]
        return [*inherited, *own]


# ----------------------------------------------------------------------- verify
def tree_problems(app: Any, cur: Any) -> list[str]:
    """What is wrong with the tree (``ctxc verify``): every child's parent exists in the
    events, and a fork's parent has the version it forked at, with the last seq the
    child inherits up to, and its content (a purged parent erased it)."""
    from context_compaction.domain.session import session_aggregate_id

    problems = []
    rows = cur.execute(
        "SELECT session_id, parent_session_id, kind, fork_version, fork_seq FROM {t}rm_tree ORDER BY session_id"
    ).fetchall()
    for sid, parent, kind, fork_version, fork_seq in rows:
        aggregate_id = session_aggregate_id(parent)
        if not app.recorder.select_events(aggregate_id, limit=1):
            problems.append(f"{sid}: its parent {parent!r} has no events")
            continue
        if kind != FORK or not fork_version:
            continue
        if not app.recorder.select_events(aggregate_id, gt=int(fork_version) - 1, lte=int(fork_version), limit=1):
            problems.append(f"{sid}: its parent {parent!r} has no version {fork_version}")
            continue
        state = app.repository.get(aggregate_id, version=int(fork_version))
        if state.next_seq - 1 != int(fork_seq):
            problems.append(f"{sid}: forked at seq {fork_seq}, but {parent!r} had seq {state.next_seq - 1} "
                            f"at version {fork_version}")
        if state.__dict__.get("purged") or app.repository.get(aggregate_id).__dict__.get("purged"):
            problems.append(f"{sid}: its parent {parent!r} is purged; the inherited history is erased")
    return problems
