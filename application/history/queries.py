"""Handlers of the history queries: raw log, projection, replay, checkpoints, sessions."""

from __future__ import annotations

from typing import Any

from context_compaction.domain.clearing import apply_clearing
from context_compaction.domain.errors import InvalidCommand, SessionDeleted, SessionNotFound
from context_compaction.domain.messages import MessageRecord, nested_tool_calls
from context_compaction.domain.projection import (
    ContextProjection,
    build_projection,
    checkpoint_problem,
)
from context_compaction.domain.searchquery import bounded_query

from ..contracts import commands as c
from ..contracts import results as r
from ..contracts.ports import SessionRow
from ..runtime.services import Services
from ..state.session_context import checkpoint_ref


def session_row(svc: Services, session_id: str) -> SessionRow:
    row = svc.read_model.session(session_id)
    if row is None:
        raise SessionNotFound(f"session {session_id!r} does not exist")
    return row


def live_row(svc: Services, session_id: str) -> SessionRow:
    row = session_row(svc, session_id)
    if row.deleted:
        raise SessionDeleted(f"session {session_id!r} is deleted")
    return row


def message_result(m: MessageRecord) -> dict[str, Any]:
    """A stored message as a result's JSON: tool calls in OpenAI's nested form (stored
    events keep the flat form they were written with; nothing is rewritten)."""
    out: dict[str, Any] = dict(m)
    out["invalidated"] = not out.pop("visible", True)
    out["tool_calls"] = nested_tool_calls(out["tool_calls"]) if out.get("tool_calls") else []
    return out


def readable_row(svc: Services, session_id: str, include_deleted: bool = False) -> SessionRow:
    """A deleted session answers ``session_deleted`` to ordinary reads; an audit read
    names ``include_deleted`` (issue 35, ADR 0072)."""
    return session_row(svc, session_id) if include_deleted else live_row(svc, session_id)


def get_history(cmd: c.GetHistory, svc: Services) -> r.HistoryResult:
    readable_row(svc, cmd.session_id, cmd.include_deleted)
    messages = svc.read_model.messages(
        cmd.session_id,
        from_seq=cmd.from_seq or 1,
        upto_seq=cmd.to_seq,
        include_invalidated=cmd.include_invalidated,
        limit=cmd.limit,
    )
    # One validation in pydantic-core makes the page's models (``HistoryMessage``): ~9 µs
    # a message, faster than ``model_construct`` in Python (~12 µs, ADR 0040).
    return r.HistoryResult.model_validate(
        {"session_id": cmd.session_id, "messages": [message_result(m) for m in messages]}
    )


def search_history(cmd: c.SearchHistory, svc: Services) -> r.SearchResult:
    live_row(svc, cmd.session_id)
    searched, shortened = bounded_query(cmd.query)
    hits = svc.read_model.search(
        cmd.session_id, searched, limit=cmd.limit, include_invalidated=cmd.include_invalidated
    )
    return r.SearchResult(
        session_id=cmd.session_id,
        query=cmd.query,
        hits=[r.SearchHitResult(**vars(hit)) for hit in hits],
        shortened_to=searched if shortened else None,
    )


def projection_result(p: ContextProjection, version: int) -> r.ProjectionResult:
    # Built by us, not parsed: skip re-validating thousands of message dicts.
    return r.ProjectionResult.model_construct(**p.to_result(), version=version).knowing_flat(p.known_flat)


def get_projection(cmd: c.GetProjection, svc: Services) -> r.ProjectionResult:
    ctx = svc.contexts.get(svc.read_model, cmd.session_id)
    projection = ctx.projection(svc.identity(cmd.model or ctx.session.model))
    return projection_result(projection, ctx.session.version)


def _replayed(
    svc: Services, session_id: str, at_version: int | None, include_deleted: bool
) -> tuple[Any, dict[int, str], dict[str, Any]]:
    """The session as of ``at_version``, its cleared results, and the fields
    ``replay_session`` and ``replay_state`` share."""
    row = readable_row(svc, session_id, include_deleted)
    if at_version is not None and at_version > row.version:
        raise InvalidCommand(f"at_version {at_version} is beyond the session's version {row.version}")
    # An explicit version always reads the store, never a shared in-memory copy.
    session = svc.events.load(session_id, version=at_version or row.version)
    active = session.active_checkpoint
    pins = set(session.pinned_seqs)
    cleared = {
        seq: text
        for seq, text in svc.read_model.cleared_results(session_id, session.version).items()
        if seq not in pins  # a pin shows its message verbatim
    }
    state = {
        "session_id": session_id, "version": session.version,
        "context_generation": session.context_generation,
        "active_checkpoint_id": active.checkpoint_id if active else None,
        "next_seq": session.next_seq, "deleted": session.deleted, "model": session.model,
        "pinned_seqs": sorted(pins), "cleared_seqs": sorted(cleared),
    }
    return session, cleared, state


def replay_state(cmd: c.ReplayState, svc: Services) -> r.ReplayStateResult:
    """``replay_session`` without the projection: no raw message is read."""
    return r.ReplayStateResult(**_replayed(svc, cmd.session_id, cmd.at_version, cmd.include_deleted)[2])


def replay_session(cmd: c.ReplaySession, svc: Services) -> r.ReplayResult:
    """State and projection as of a past version, rebuilt from the events (audits)."""
    session, cleared, state = _replayed(svc, cmd.session_id, cmd.at_version, cmd.include_deleted)
    active = session.active_checkpoint
    identity = svc.identity(cmd.model or session.model)
    row = svc.read_model.checkpoint(active.checkpoint_id) if active else None
    from_seq = active.first_retained_seq if active else 1
    notes: list[str] = []
    raw = svc.read_model.messages(
        cmd.session_id, from_seq=from_seq, upto_seq=session.max_seq, include_invalidated=True
    )
    tail = [m for m in raw if session.is_visible(m["seq"])]
    pins = {seq for seq in session.pinned_seqs if seq < from_seq}
    pinned = [
        m for m in svc.read_model.messages(
            cmd.session_id, from_seq=min(pins), upto_seq=from_seq - 1, include_invalidated=True
        )
        if m["seq"] in pins and session.is_visible(m["seq"])
    ] if pins else []
    ref = checkpoint_ref(row)
    if active and row is None:
        notes.append(f"active checkpoint {active.checkpoint_id} is missing")
    problem = checkpoint_problem(ref, tail) if ref else None
    if notes or problem:
        notes += [problem] if problem else []
        raw = svc.read_model.messages(
            cmd.session_id, upto_seq=session.max_seq, include_invalidated=True
        )
        tail = [m for m in raw if session.is_visible(m["seq"])]
        ref = None
    projection = build_projection(
        checkpoint=ref,
        messages=apply_clearing(tail, cleared),
        context_generation=session.context_generation,
        identity=identity,
        diagnostics=notes,
        pinned=pinned if ref else (),
    )
    return r.ReplayResult(**state, projection=projection_result(projection, session.version))


def list_checkpoints(cmd: c.ListCheckpoints, svc: Services) -> r.CheckpointsResult:
    row = readable_row(svc, cmd.session_id, cmd.include_deleted)
    checkpoints = []
    reverted = {done.checkpoint_id for done in svc.read_model.reverts(cmd.session_id)}
    for cp in svc.read_model.checkpoints(cmd.session_id):
        item = cp.to_dict()
        item["active"] = cp.checkpoint_id == row.active_checkpoint_id
        item["reverted"] = cp.checkpoint_id in reverted
        checkpoints.append(r.CheckpointInfo.model_validate(item))
    return r.CheckpointsResult(
        session_id=cmd.session_id,
        active_checkpoint_id=row.active_checkpoint_id,
        checkpoints=checkpoints,
    )


def session_info(row: SessionRow) -> r.SessionInfo:
    return r.SessionInfo(
        session_id=row.session_id,
        model=row.model,
        agent_token_limit=row.agent_token_limit,
        version=row.version,
        next_seq=row.next_seq,
        message_count=row.message_count,
        invalidated_count=row.invalidated_count,
        checkpoint_count=row.checkpoint_count,
        context_generation=row.context_generation,
        active_checkpoint_id=row.active_checkpoint_id,
        deleted=row.deleted,
        created_at=row.created_at,
        updated_at=row.updated_at,
        parent_session_id=row.parent_session_id,
    )


def list_sessions(cmd: c.ListSessions, svc: Services) -> r.SessionsResult:
    rows = svc.read_model.sessions(limit=cmd.limit, offset=cmd.offset)
    if cmd.tree:  # issue 42
        from context_compaction.application.history.forks import session_tree

        infos = [session_info(x) for x in rows]
        roots = [i for i in infos if i.parent_session_id is None]
        return r.SessionsResult(sessions=infos, tree=session_tree(svc, roots, session_info))
    return r.SessionsResult(sessions=[session_info(x) for x in rows])
