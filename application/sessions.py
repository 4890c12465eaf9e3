"""Handlers for the raw-log commands and the history queries."""

from __future__ import annotations

import json
import logging
from typing import Any

from context_compaction.domain.errors import (
    IdempotencyConflict,
    InvalidCommand,
    InvalidMessage,
    SessionDeleted,
    SessionExists,
    SessionNotFound,
)
from context_compaction.domain.messages import Message, MessageRecord, nested_tool_calls
from context_compaction.domain.projection import (
    ContextProjection,
    build_projection,
    checkpoint_problem,
)
from context_compaction.domain.session import Session

from . import commands as c
from . import results as r
from .session_context import checkpoint_ref
from .ports import CommandRecord, ConcurrencyConflict, SessionRow
from .services import AUTO_COMMAND_PREFIX, Services, mutate

log = logging.getLogger("context_compaction.sessions")


# ------------------------------------------------------------------ commands
def start_session(cmd: c.StartSession, svc: Services) -> r.StartSessionResult:
    # As for appends, a generated command id makes our own retry after a lost
    # acknowledgement recognise its own success.
    command_id = cmd.command_id or svc.ids.new_id("cmd")
    for _ in range(3):
        if cmd.command_id is not None:
            earlier = svc.read_model.command(cmd.command_id)
            if earlier is not None:
                return _started_before(svc, cmd, earlier)
        try:
            existing: Session | None = svc.events.load(cmd.session_id)
        except SessionNotFound:
            existing = None
        if existing is not None:
            if existing.start_command_id == command_id:
                _check_start_payload(svc, cmd)
                return r.StartSessionResult(session_id=cmd.session_id, version=existing.version)
            raise SessionExists(f"session {cmd.session_id!r} already exists")
        session = Session.start(
            cmd.session_id,
            cmd.model,
            cmd.agent_token_limit,
            created_at=svc.now(),
            command_id=command_id,
        )
        try:
            svc.events.save(session)
        except ConcurrencyConflict:
            # Started concurrently, or the command id was taken meanwhile: the next
            # round decides between the original result, a conflict and exists.
            continue
        log.info("session started", extra={"session_id": cmd.session_id})
        return r.StartSessionResult(session_id=cmd.session_id, version=session.version)
    raise SessionExists(f"session {cmd.session_id!r} already exists")


def _idempotency_conflict(command_id: str, what: str) -> IdempotencyConflict:
    return IdempotencyConflict(
        f"command_id {command_id!r} was already used {what}; nothing was changed",
        details={"command_id": command_id},
    )


def _started_before(svc: Services, cmd: c.StartSession, earlier: CommandRecord) -> r.StartSessionResult:
    """The original result of a host command id seen before, or a conflict (ADR 0019)."""
    assert cmd.command_id is not None
    if earlier.kind != "start_session" or earlier.session_id != cmd.session_id:
        raise _idempotency_conflict(cmd.command_id, "for another command")
    _check_start_payload(svc, cmd)
    current = svc.events.load(cmd.session_id)
    return r.StartSessionResult(session_id=cmd.session_id, version=current.version)


def _check_start_payload(svc: Services, cmd: c.StartSession) -> None:
    if cmd.command_id is None:
        return  # our own id: our own retry, same payload
    started = svc.events.load(cmd.session_id, version=1)
    if (started.model, started.agent_token_limit) != (cmd.model, cmd.agent_token_limit):
        raise _idempotency_conflict(cmd.command_id, "to start this session with other settings")


def configure_session(cmd: c.ConfigureSession, svc: Services) -> r.ConfigureSessionResult:
    set_limit = "agent_token_limit" in cmd.model_fields_set
    _, session, _ = mutate(
        svc,
        cmd.session_id,
        lambda s: s.configure(
            model=cmd.model,
            agent_token_limit=cmd.agent_token_limit,
            set_limit=set_limit,
            created_at=svc.now(),
        ),
    )
    return r.ConfigureSessionResult(
        session_id=cmd.session_id,
        version=session.version,
        model=session.model,
        agent_token_limit=session.agent_token_limit,
    )


def append_messages(cmd: c.AppendMessages, svc: Services) -> r.AppendMessagesResult:
    limits = svc.settings.limits
    if len(cmd.messages) > limits.max_batch_messages:
        raise InvalidCommand(
            f"{len(cmd.messages)} messages in one command; the limit is "
            f"{limits.max_batch_messages}"
        )
    for index, message in enumerate(cmd.messages):
        size = _record_chars(message)
        if size > limits.max_message_chars:
            raise InvalidMessage(
                f"message {index} has {size:,} characters; the limit is "
                f"{limits.max_message_chars:,}"
            )
    if cmd.command_id is not None:
        earlier = svc.read_model.command(cmd.command_id)
        if earlier is not None:
            return _appended_before(svc, cmd, earlier)
    # Our own retries must be idempotent too (a commit whose acknowledgement was lost
    # is retried): every append carries a command id, the host's or a fresh one.
    generated = cmd.command_id is None
    command_id = cmd.command_id or svc.ids.new_id(AUTO_COMMAND_PREFIX)
    needs_producer = any(m.has_provider_output for m in cmd.messages)

    def taken_meanwhile() -> None:
        # A save conflicted: another command may have taken this id meanwhile.
        taken = svc.read_model.command(command_id)
        if taken is not None and (taken.session_id, taken.kind) != (cmd.session_id, "append_messages"):
            raise _idempotency_conflict(command_id, "for another command")

    def decide(session: Session) -> list[int]:
        producer = None
        if needs_producer:
            model = cmd.model or session.model
            producer = (svc.catalog.provider_of(model), model)
        return session.append_messages(
            cmd.messages,
            command_id=command_id,
            created_at=svc.now(),
            producer=producer,
            command_generated=generated,
        )

    seqs, session, saved = mutate(
        svc, cmd.session_id, decide, after_conflict=None if generated else taken_meanwhile
    )
    if not saved and not generated:
        # The aggregate knew the id (a concurrent duplicate won the race): the same
        # payload gets the original result, another one a conflict.
        earlier = svc.read_model.command(command_id)
        if earlier is not None:
            return _appended_before(svc, cmd, earlier)
    if saved:
        log.info(
            "messages appended",
            extra={"session_id": cmd.session_id, "count": len(seqs), "last_seq": seqs[-1]},
        )
    return r.AppendMessagesResult.model_construct(seqs=seqs, version=session.version, duplicate=not saved)


def _appended_before(
    svc: Services, cmd: c.AppendMessages, earlier: CommandRecord
) -> r.AppendMessagesResult:
    """The original seqs of a host command id seen before, or a conflict (ADR 0019)."""
    assert cmd.command_id is not None
    if earlier.kind != "append_messages" or earlier.session_id != cmd.session_id:
        raise _idempotency_conflict(cmd.command_id, "for another command")
    row = _live_row(svc, cmd.session_id)
    stored = svc.read_model.messages(
        cmd.session_id, from_seq=earlier.first_seq, upto_seq=earlier.last_seq, include_invalidated=True
    )
    if not _same_messages(stored, cmd.messages):
        raise _idempotency_conflict(cmd.command_id, "with other messages")
    return r.AppendMessagesResult(seqs=earlier.seqs, version=row.version, duplicate=True)


_BODY = ("role", "content", "reasoning", "tool_calls", "tool_call_id", "name", "turn_id",
         "steering", "provider_state")


def _same_messages(stored: list[MessageRecord], messages: list[Message]) -> bool:
    """Would ``messages`` be stored exactly as ``stored`` was? (a retry, not a reuse)"""
    if len(stored) != len(messages):
        return False
    for record, message in zip(stored, messages, strict=True):
        state = record.get("provider_state")
        producer = (state["provider"], state["model"]) if state else None
        again = message.to_record(producer)
        if _canonical(record) != _canonical(again):
            return False
    return True


def _canonical(record: Any) -> str:
    body = {k: record.get(k) for k in _BODY}
    state = body["provider_state"]
    if state and not state.get("data") and not state.get("tool_call_fields"):
        # A binding without private data: the same message (reasoning spelled as the
        # contract's `reasoning` or as litellm's `reasoning_content`).
        body["provider_state"] = None
    return json.dumps(body, sort_keys=True, ensure_ascii=False)


def _record_chars(message: Any) -> int:
    """Characters of a message's text: a quick sum for the common shapes."""
    content = message.content
    if (
        message.provider_state is None
        and not message.has_provider_output
        and (content is None or isinstance(content, str))
    ):
        size = len(content or "") + len(message.reasoning or "")
        for call in message.tool_calls:
            size += len(call.arguments) + len(call.name)
        return size
    record = message.to_record()
    record.pop("role")
    return _message_chars(record)


def _message_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_message_chars(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_message_chars(v) for v in value)
    return 0


def invalidate_history(cmd: c.InvalidateHistory, svc: Services) -> r.InvalidateHistoryResult:
    if cmd.kind == "rewind" and cmd.to_seq is None:
        raise InvalidCommand("rewind needs to_seq (keep seq <= to_seq)")
    if cmd.kind == "delete" and not cmd.seqs:
        raise InvalidCommand("delete needs a non-empty list of seqs")
    if cmd.kind != "rewind" and cmd.to_seq is not None:
        raise InvalidCommand("to_seq belongs to kind=rewind")
    if cmd.kind != "delete" and cmd.seqs is not None:
        raise InvalidCommand("seqs belongs to kind=delete")
    outcome, session, saved = mutate(
        svc,
        cmd.session_id,
        lambda s: s.invalidate(
            kind=cmd.kind,
            to_seq=cmd.to_seq,
            seqs=cmd.seqs,
            expand_tool_groups=cmd.expand_tool_groups,
            reason=cmd.reason,
            created_at=svc.now(),
        ),
    )
    if saved:
        log.info(
            "history invalidated",
            extra={
                "session_id": cmd.session_id,
                "kind": cmd.kind,
                "generation": outcome.generation,
            },
        )
    return r.InvalidateHistoryResult(
        context_generation=outcome.generation,
        version=session.version,
        excluded_seqs=outcome.ranges,
    )


def delete_session(cmd: c.DeleteSession, svc: Services) -> r.DeleteSessionResult:
    _, session, _ = mutate(svc, cmd.session_id, lambda s: s.delete(created_at=svc.now()))
    log.info("session deleted", extra={"session_id": cmd.session_id})
    return r.DeleteSessionResult(session_id=cmd.session_id, version=session.version)


# ------------------------------------------------------------------- queries
def _row(svc: Services, session_id: str) -> SessionRow:
    row = svc.read_model.session(session_id)
    if row is None:
        raise SessionNotFound(f"session {session_id!r} does not exist")
    return row


def _live_row(svc: Services, session_id: str) -> SessionRow:
    row = _row(svc, session_id)
    if row.deleted:
        raise SessionDeleted(f"session {session_id!r} is deleted")
    return row


def message_result(m: MessageRecord) -> dict[str, Any]:
    """A stored message as a result: tool calls in OpenAI's nested form (stored events
    keep the flat form they were written with; nothing is rewritten)."""
    out = dict(m)
    out["invalidated"] = not out.pop("visible", True)
    if out.get("tool_calls"):
        out["tool_calls"] = nested_tool_calls(out["tool_calls"])
    return out


def get_history(cmd: c.GetHistory, svc: Services) -> r.HistoryResult:
    _row(svc, cmd.session_id)
    messages = svc.read_model.messages(
        cmd.session_id, include_invalidated=cmd.include_invalidated
    )
    return r.HistoryResult.model_construct(
        session_id=cmd.session_id, messages=[message_result(m) for m in messages]
    )


def projection_result(p: ContextProjection, version: int) -> r.ProjectionResult:
    # Built by us, not parsed: skip re-validating thousands of message dicts.
    return r.ProjectionResult.model_construct(**p.to_result(), version=version)


def get_projection(cmd: c.GetProjection, svc: Services) -> r.ProjectionResult:
    ctx = svc.contexts.get(svc.read_model, cmd.session_id)
    projection = ctx.projection(svc.identity(cmd.model or ctx.session.model))
    return projection_result(projection, ctx.session.version)


def replay_session(cmd: c.ReplaySession, svc: Services) -> r.ReplayResult:
    """State and projection as of a past version, rebuilt from the events (audits)."""
    row = _row(svc, cmd.session_id)
    if cmd.at_version is not None and cmd.at_version > row.version:
        raise InvalidCommand(
            f"at_version {cmd.at_version} is beyond the session's version {row.version}"
        )
    # An explicit version always reads the store, never a shared in-memory copy.
    session = svc.events.load(cmd.session_id, version=cmd.at_version or row.version)
    identity = svc.identity(cmd.model or session.model)
    active = session.active_checkpoint
    row = svc.read_model.checkpoint(active.checkpoint_id) if active else None
    from_seq = active.first_retained_seq if active else 1
    notes: list[str] = []
    raw = svc.read_model.messages(
        cmd.session_id, from_seq=from_seq, upto_seq=session.max_seq, include_invalidated=True
    )
    tail = [m for m in raw if session.is_visible(m["seq"])]
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
        messages=tail,
        context_generation=session.context_generation,
        identity=identity,
        diagnostics=notes,
    )
    return r.ReplayResult(
        session_id=cmd.session_id,
        version=session.version,
        context_generation=session.context_generation,
        active_checkpoint_id=active.checkpoint_id if active else None,
        next_seq=session.next_seq,
        deleted=session.deleted,
        model=session.model,
        projection=projection_result(projection, session.version),
    )


def list_checkpoints(cmd: c.ListCheckpoints, svc: Services) -> r.CheckpointsResult:
    row = _row(svc, cmd.session_id)
    checkpoints = []
    for cp in svc.read_model.checkpoints(cmd.session_id):
        item = cp.to_dict()
        item["active"] = cp.checkpoint_id == row.active_checkpoint_id
        checkpoints.append(item)
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
    )


def list_sessions(cmd: c.ListSessions, svc: Services) -> r.SessionsResult:
    rows = svc.read_model.sessions(limit=cmd.limit, offset=cmd.offset)
    return r.SessionsResult(sessions=[session_info(x) for x in rows])
