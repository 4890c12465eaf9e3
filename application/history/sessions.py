"""Handlers of the raw-log commands (the queries are in ``queries.py``)."""

from __future__ import annotations

import json
import logging
from typing import Any

from context_compaction.domain.budget import SUMMARY_OUTPUT_CAP, resolve_window
from context_compaction.domain.errors import (
    IdempotencyConflict,
    InvalidCommand,
    InvalidMessage,
    SessionExists,
    SessionNotFound,
)
from context_compaction.domain.messages import Message, MessageRecord
from context_compaction.domain.session import Session
from context_compaction.domain.summary import smallest_window

from ..contracts import commands as c
from ..contracts import results as r
from ..runtime.idempotency import first_result
from ..contracts.ports import CommandRecord, ConcurrencyConflict
from .queries import live_row
from ..runtime.services import AUTO_COMMAND_PREFIX, Services, mutate

from context_compaction.application.history.forks import refuse_purge_with_forks, subagent_parent  # noqa: E402 (issue 42)

log = logging.getLogger("context_compaction.sessions")


# ------------------------------------------------------------------ commands
def start_session(cmd: c.StartSession, svc: Services) -> r.StartSessionResult:
    def answered() -> r.StartSessionResult | None:
        earlier = svc.read_model.command(cmd.command_id) if cmd.command_id else None
        return _started_before(svc, cmd, earlier) if earlier is not None else None

    return first_result(cmd.command_id, answered, lambda: _start_session(cmd, svc))


def _start_session(cmd: c.StartSession, svc: Services) -> r.StartSessionResult:
    # As for appends, a generated command id makes our own retry after a lost
    # acknowledgement recognise its own success.
    command_id = cmd.command_id or svc.ids.new_id("cmd")
    for _ in range(3):
        if cmd.command_id is not None:
            earlier = svc.read_model.command(cmd.command_id)
            if earlier is not None:
                return _started_before(svc, cmd, earlier)
            _not_a_revert(svc, cmd.command_id)
        try:
            existing: Session | None = svc.events.load(cmd.session_id)
        except SessionNotFound:
            existing = None
        if existing is not None:
            if existing.start_command_id == command_id:
                _check_start_payload(svc, cmd)
                return r.StartSessionResult(session_id=cmd.session_id, version=existing.version)
            raise SessionExists(f"session {cmd.session_id!r} already exists")
        # (the same check as configure_session: a window no compaction can serve is refused
        # before the session exists, not at its first compaction; ADR 0091)
        _window_serves(svc, cmd.model, cmd.agent_token_limit)
        session = Session.start(
            cmd.session_id,
            cmd.model,
            cmd.agent_token_limit,
            created_at=svc.now(),
            command_id=command_id,
            parent=subagent_parent(cmd, svc),  # a sub-agent's session (issue 42)
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


def _not_a_revert(svc: Services, command_id: str) -> None:
    """A command id is unique across all commands: one a revert used is taken."""
    if svc.read_model.revert_command(command_id) is not None:
        raise _idempotency_conflict(command_id, "for another command")


def _not_taken(svc: Services, command_id: str | None) -> None:
    """A pin's id that an append, a start or a revert recorded: the host reused it for
    another command (a command id is unique across all commands, ADR 0019)."""
    if command_id is not None:
        if svc.read_model.command(command_id) is not None:
            raise _idempotency_conflict(command_id, "for another command")
        _not_a_revert(svc, command_id)


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

    def decide(s: Session) -> None:
        _window_serves(svc, cmd.model or s.model, cmd.agent_token_limit if set_limit else s.agent_token_limit)
        s.configure(model=cmd.model, agent_token_limit=cmd.agent_token_limit, set_limit=set_limit,
                    created_at=svc.now())

    _, session, _ = mutate(svc, cmd.session_id, decide)
    return r.ConfigureSessionResult(
        session_id=cmd.session_id,
        version=session.version,
        model=session.model,
        agent_token_limit=session.agent_token_limit,
    )


def _window_serves(svc: Services, model: str, agent_limit: int | None) -> None:
    """Refuse, before anything changes, a window no compaction can serve (issue 44, ADR
    0083): ``invalid_command`` naming the smallest window."""
    config = svc.settings.model_config_for(model)
    window = resolve_window(configured_limit=config.token_limit, catalog_limit=svc.catalog.max_input_tokens(model),
                            agent_limit=agent_limit).hard_window
    encoding = svc.tokens.encoding_for(model)
    smallest = smallest_window(lambda text: svc.tokens.count_text(text, encoding), SUMMARY_OUTPUT_CAP)
    if window < smallest:
        raise InvalidCommand(
            f"a {window:,}-token window for {model} is too small to compact; the smallest window is {smallest:,} tokens",
            details={"window": window, "smallest_window": smallest},
        )


def append_messages(cmd: c.AppendMessages, svc: Services) -> r.AppendMessagesResult:
    limits = svc.settings.limits
    if len(cmd.messages) > limits.max_batch_messages:
        raise InvalidCommand(
            f"{len(cmd.messages)} messages in one command; the limit is "
            f"{limits.max_batch_messages}"
        )
    needs_producer = False
    for index, message in enumerate(cmd.messages):
        # (one look at each message's provider output: the size and the producer use it)
        has_output = message.has_provider_output
        needs_producer = needs_producer or has_output
        size = _record_chars(message, has_output)
        if size > limits.max_message_chars:
            raise InvalidMessage(
                f"message {index} has {size:,} characters; the limit is "
                f"{limits.max_message_chars:,}"
            )

    def answered() -> r.AppendMessagesResult | None:
        assert cmd.command_id is not None
        earlier = svc.read_model.command(cmd.command_id)
        if earlier is not None:
            return _appended_before(svc, cmd, earlier)
        _not_a_revert(svc, cmd.command_id)
        return None

    return first_result(cmd.command_id, answered, lambda: _append(cmd, svc, needs_producer))


def _append(cmd: c.AppendMessages, svc: Services, needs_producer: bool) -> r.AppendMessagesResult:
    # Our own retries must be idempotent too (a commit whose acknowledgement was lost
    # is retried): every append carries a command id, the host's or a fresh one.
    generated = cmd.command_id is None
    command_id = cmd.command_id or svc.ids.new_id(AUTO_COMMAND_PREFIX)

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
    # (validated: pydantic-core builds it faster than ``model_construct``'s Python)
    return r.AppendMessagesResult(seqs=seqs, version=session.version, duplicate=not saved)


def _appended_before(
    svc: Services, cmd: c.AppendMessages, earlier: CommandRecord
) -> r.AppendMessagesResult:
    """The original seqs of a host command id seen before, or a conflict (ADR 0019)."""
    assert cmd.command_id is not None
    if earlier.kind != "append_messages" or earlier.session_id != cmd.session_id:
        raise _idempotency_conflict(cmd.command_id, "for another command")
    row = live_row(svc, cmd.session_id)
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


def _record_chars(message: Any, has_provider_output: bool) -> int:
    """Characters of a message's text: a quick sum for the common shapes."""
    content = message.content
    if (
        message.provider_state is None
        and not has_provider_output
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


def pin_messages(cmd: c.PinMessages, svc: Services) -> r.PinsResult:
    """Pins are idempotent by nature (a pinned seq stays pinned): ``command_id`` needs
    no record (ADR 0033). An id another command took is still a conflict."""
    _not_taken(svc, cmd.command_id)
    pinned, session, saved = mutate(svc, cmd.session_id, lambda s: s.pin(cmd.seqs, created_at=svc.now()))
    if saved:
        log.info("messages pinned", extra={"session_id": cmd.session_id, "count": len(pinned)})
    return r.PinsResult(session_id=cmd.session_id, pinned_seqs=pinned, version=session.version)


def unpin_messages(cmd: c.UnpinMessages, svc: Services) -> r.PinsResult:
    _not_taken(svc, cmd.command_id)
    pinned, session, saved = mutate(svc, cmd.session_id, lambda s: s.unpin(cmd.seqs, created_at=svc.now()))
    if saved:
        log.info("messages unpinned", extra={"session_id": cmd.session_id, "count": len(pinned)})
    return r.PinsResult(session_id=cmd.session_id, pinned_seqs=pinned, version=session.version)


def revert_checkpoint(cmd: c.RevertCheckpoint, svc: Services) -> r.RevertResult:
    """A retried revert (same ``command_id``) answers what the first one did (ADR 0033),
    a concurrent one too (ADR 0071)."""

    def answered() -> r.RevertResult | None:
        assert cmd.command_id is not None
        if svc.read_model.command(cmd.command_id) is not None:
            raise _idempotency_conflict(cmd.command_id, "for another command")
        done = svc.read_model.revert_command(cmd.command_id)
        if done is None:
            return None
        if (done.session_id, done.checkpoint_id) != (cmd.session_id, cmd.checkpoint_id):
            raise _idempotency_conflict(cmd.command_id, "for another checkpoint")
        return r.RevertResult(
            session_id=cmd.session_id, checkpoint_id=done.checkpoint_id,
            context_generation=done.generation, active_checkpoint_id=done.now_active,
            version=done.version,
        )

    return first_result(cmd.command_id, answered, lambda: _revert(cmd, svc))


def _revert(cmd: c.RevertCheckpoint, svc: Services) -> r.RevertResult:
    generation, session, _ = mutate(
        svc,
        cmd.session_id,
        lambda s: s.revert_checkpoint(cmd.checkpoint_id, command_id=cmd.command_id, created_at=svc.now()),
    )
    active = session.active_checkpoint
    log.info("checkpoint reverted", extra={"session_id": cmd.session_id, "generation": generation})
    return r.RevertResult(
        session_id=cmd.session_id, checkpoint_id=cmd.checkpoint_id, context_generation=generation,
        active_checkpoint_id=active.checkpoint_id if active else None, version=session.version,
    )


def purge_session(cmd: c.PurgeSession, svc: Services) -> r.PurgeSessionResult:
    """Record the purge, then erase the content (ADR 0072). Two transactions: a failure
    between them leaves a session recorded purged whose content is still there, which
    ``purge_session`` again completes (and ``ctxc verify`` names)."""
    if svc.eraser is None:
        raise InvalidCommand("this store cannot erase content (purge_session needs SQLite or PostgreSQL)")
    refuse_purge_with_forks(svc, cmd.session_id)  # their history is in its events (issue 42)
    _, session, _ = mutate(svc, cmd.session_id, lambda s: s.purge(created_at=svc.now()))
    erased, scrubbed = svc.eraser.erase(cmd.session_id)
    svc.contexts.drop(cmd.session_id)
    log.info("session purged", extra={"session_id": cmd.session_id, "count": erased})
    return r.PurgeSessionResult(session_id=cmd.session_id, version=session.version, erased_events=erased,
                                files_scrubbed=scrubbed)


def delete_session(cmd: c.DeleteSession, svc: Services) -> r.DeleteSessionResult:
    _, session, _ = mutate(svc, cmd.session_id, lambda s: s.delete(created_at=svc.now()))
    log.info("session deleted", extra={"session_id": cmd.session_id})
    return r.DeleteSessionResult(session_id=cmd.session_id, version=session.version)
