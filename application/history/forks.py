"""Sessions as a tree (issue 42, ADR 0081): ``fork_session``, sub-agent sessions and
``complete_subagent``, the tree of ``list_sessions``.

A fork is one event: the child's ``Started`` names its parent and the parent's
version, and carries the parent's aggregate state at that version (no message body).
Reads resolve the inherited prefix from the parent's events (``TreeReadModel``), so a
fork costs what ``start_session`` costs, whatever the parent's length.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from context_compaction.domain.errors import (
    IdempotencyConflict,
    InvalidCommand,
    SessionDeleted,
    SessionExists,
    SessionHasChildren,
    SessionNotFound,
)
from context_compaction.domain.session import Session
from context_compaction.domain.tree import FORK, fork_of, link_of, subagent_link

from context_compaction.application.contracts import commands as c
from context_compaction.application.contracts import results as r
from context_compaction.application.runtime.idempotency import first_result
from context_compaction.application.contracts.ports import CommandRecord, ConcurrencyConflict
from context_compaction.application.runtime.services import Services

log = logging.getLogger("context_compaction.forks")


# ---------------------------------------------------------------- fork_session
def fork_session(cmd: c.ForkSession, svc: Services) -> r.ForkSessionResult:
    # A host command id makes the fork idempotent as it does a start (ADR 0019, 0071):
    # a retry answers the first fork, an id used for anything else is a conflict.
    def answered() -> r.ForkSessionResult | None:
        assert cmd.command_id is not None
        earlier = svc.read_model.command(cmd.command_id)
        if earlier is None:
            if svc.read_model.revert_command(cmd.command_id) is not None:
                raise _reused(cmd.command_id)
            return None
        return _forked_before(svc, cmd, earlier)

    return first_result(cmd.command_id, answered, lambda: _fork_session(cmd, svc))


def _reused(command_id: str) -> IdempotencyConflict:
    return IdempotencyConflict(
        f"command_id {command_id!r} was already used for another command; nothing was changed",
        details={"command_id": command_id},
    )


def _forked_before(svc: Services, cmd: c.ForkSession, earlier: CommandRecord) -> r.ForkSessionResult:
    """The first result of a fork whose command id comes back, or a conflict when the
    id started something else (another session, another parent, another fork point)."""
    assert cmd.command_id is not None
    if earlier.kind != "start_session" or earlier.session_id != cmd.new_session_id:
        raise _reused(cmd.command_id)
    child = svc.events.load(cmd.new_session_id, version=1)
    link = link_of(child)
    if (link is None or link.kind != FORK or link.parent_session_id != cmd.session_id
            or (cmd.at_version is not None and link.fork_version != cmd.at_version)
            or (cmd.at_seq is not None and link.fork_seq < cmd.at_seq)):
        raise _reused(cmd.command_id)
    return r.ForkSessionResult(
        session_id=cmd.new_session_id, parent_session_id=cmd.session_id, fork_version=link.fork_version,
        fork_seq=link.fork_seq, version=child.version, next_seq=child.next_seq,
        context_generation=child.context_generation,
        active_checkpoint_id=child.active_checkpoint.checkpoint_id if child.active_checkpoint else None,
    )


def _fork_session(cmd: c.ForkSession, svc: Services) -> r.ForkSessionResult:
    if cmd.at_version is not None and cmd.at_seq is not None:
        raise InvalidCommand("give at_version or at_seq, not both")
    if cmd.new_session_id == cmd.session_id:
        raise InvalidCommand("a fork needs a new session id, not its parent's")
    now = svc.events.load(cmd.session_id)
    if now.deleted:
        raise SessionDeleted(f"session {cmd.session_id!r} is deleted; it cannot be forked")
    version = _fork_version(svc, now, cmd)
    if _exists(svc, cmd.new_session_id):
        raise SessionExists(f"session {cmd.new_session_id!r} already exists")
    parent = now if version == now.version else svc.events.load(cmd.session_id, version=version)
    closed = parent._held_closed()
    if closed is None:
        # A copy loaded from a snapshot does not hold the tool groups behind its
        # checkpoint (ADR 0051); the child needs them for a command naming an old seq.
        parent = svc.events.load_complete_at(cmd.session_id, version)  # type: ignore[attr-defined]
        closed = parent._held_closed() or []
    command_id = cmd.command_id or svc.ids.new_id("cmd")
    # (placeholders, not message text: the child's projection replaces the same results)
    cleared = svc.read_model.cleared_results(cmd.session_id, upto_version=version)
    child = fork_of(parent, cmd.new_session_id, created_at=svc.now(), command_id=command_id,
                    closed_groups=closed, cleared=cleared)
    try:
        svc.events.save(child)
    except ConcurrencyConflict:
        raise SessionExists(f"session {cmd.new_session_id!r} already exists") from None
    log.info("session forked", extra={"session_id": cmd.new_session_id, "parent_session_id": cmd.session_id,
                                       "fork_version": version})
    return r.ForkSessionResult(
        session_id=cmd.new_session_id, parent_session_id=cmd.session_id, fork_version=version,
        fork_seq=parent.next_seq - 1, version=child.version, next_seq=child.next_seq,
        context_generation=child.context_generation,
        active_checkpoint_id=child.active_checkpoint.checkpoint_id if child.active_checkpoint else None,
    )


def _exists(svc: Services, session_id: str) -> bool:
    try:
        svc.events.load(session_id)
    except SessionNotFound:
        return False
    return True


def _fork_version(svc: Services, now: Session, cmd: c.ForkSession) -> int:
    if cmd.at_version is not None:
        if cmd.at_version > now.version:
            raise InvalidCommand(
                f"at_version {cmd.at_version} is after the session's version {now.version}",
                details={"version": now.version},
            )
        return cmd.at_version
    if cmd.at_seq is not None:
        if cmd.at_seq > now.next_seq - 1:
            raise InvalidCommand(
                f"at_seq {cmd.at_seq} is after the session's last seq {now.next_seq - 1}",
                details={"max_seq": now.next_seq - 1},
            )
        link = link_of(now)
        if link is not None and link.kind == FORK and cmd.at_seq < link.fork_seq:
            # This session was born holding seqs up to fork_seq: it never was "right after
            # at_seq", and its version 1 would silently give the whole inherited prefix.
            raise InvalidCommand(
                f"at_seq {cmd.at_seq} is in the history {cmd.session_id!r} inherited from "
                f"{link.parent_session_id!r} (seqs up to {link.fork_seq}); fork "
                f"{link.parent_session_id!r} at that seq instead",
                details={"parent_session_id": link.parent_session_id, "fork_seq": link.fork_seq},
            )
        return _version_of_seq(svc, cmd.session_id, cmd.at_seq, now.version)
    return now.version


def _version_of_seq(svc: Services, session_id: str, seq: int, newest: int) -> int:
    """The version whose event appended ``seq``: the fork keeps the history up to it and
    nothing recorded after it (a later checkpoint, a later clear). A binary search over
    versions (``next_seq`` grows with the version): O(log n) loads, each from a snapshot."""
    lo, hi = 1, newest
    while lo < hi:
        mid = (lo + hi) // 2
        if svc.events.load(session_id, version=mid).next_seq - 1 >= seq:
            hi = mid
        else:
            lo = mid + 1
    return lo


# ------------------------------------------------------------ sub-agent sessions
def subagent_parent(cmd: c.StartSession, svc: Services) -> dict[str, Any] | None:
    """The ``parent`` of a sub-agent's ``Started`` (None: a root session). The call
    that spawns it must be one the parent still waits on."""
    if cmd.parent_session_id is None:
        if cmd.parent_tool_call_id is not None:
            raise InvalidCommand("parent_tool_call_id needs parent_session_id")
        return None
    if cmd.parent_session_id == cmd.session_id:
        raise InvalidCommand("a session cannot be its own parent")
    parent = svc.events.load(cmd.parent_session_id)
    if parent.deleted:
        raise SessionDeleted(f"session {cmd.parent_session_id!r} is deleted")
    if cmd.parent_tool_call_id is not None and cmd.parent_tool_call_id not in parent.open_calls:
        raise InvalidCommand(
            f"tool call {cmd.parent_tool_call_id!r} is not waiting for a result in session "
            f"{cmd.parent_session_id!r}",
            details={"parent_session_id": cmd.parent_session_id},
        )
    return subagent_link(cmd.parent_session_id, cmd.parent_tool_call_id)


# ---------------------------------------------------------------------- reads
def tree_fields(svc: Services, session_id: str) -> dict[str, Any]:
    """What ``/info`` and ``list_sessions`` add for a session in a tree."""
    row = svc.read_model.tree_row(session_id)  # type: ignore[attr-defined]
    children = svc.read_model.children(session_id)  # type: ignore[attr-defined]
    fields: dict[str, Any] = {"children": [child.session_id for child in children]}
    if row is not None:
        fields.update(parent_session_id=row.link.parent_session_id, tree_kind=row.link.kind,
                      parent_tool_call_id=row.link.parent_tool_call_id)
        if row.link.kind == FORK:
            fields.update(fork_version=row.link.fork_version, fork_seq=row.link.fork_seq)
    return fields


def session_tree(
    svc: Services, roots: list[r.SessionInfo], info_of: Callable[[Any], r.SessionInfo], depth: int = 0
) -> list[r.SessionTreeNode]:
    """``roots`` with their children nested (``info_of``: a session row as its info)."""
    nodes = []
    for info in roots:
        kids = []
        for child in svc.read_model.children(info.session_id):  # type: ignore[attr-defined]
            row = svc.read_model.session(child.session_id)
            if row is not None and depth < 64:
                kids.append(info_of(row))
        nodes.append(r.SessionTreeNode(session=info, children=session_tree(svc, kids, info_of, depth + 1)))
    return nodes


def refuse_purge_with_forks(svc: Services, session_id: str) -> None:
    """A purge erases the events a fork reads its inherited history from: refused
    while a fork that is not purged itself inherits from this session (ADR 0081)."""
    children = getattr(svc.read_model, "children", None)
    if children is None:
        return
    readers = [child.session_id for child in children(session_id)
               if child.link.kind == FORK and child.link.fork_seq > 0 and not _purged(svc, child.session_id)]
    if readers:
        raise SessionHasChildren(
            f"session {session_id!r} has forks that read their history from it; purge them first",
            details={"children": readers},
        )


def _purged(svc: Services, session_id: str) -> bool:
    try:
        session = svc.events.load(session_id)
    except SessionNotFound:
        return True
    return bool(session.__dict__.get("purged"))


def roll_up_children(svc: Services, usage: r.ContextUsage, usage_of: Callable[[str], r.ContextUsage]) -> None:
    """/info's roll-up: each child's own usage (and its children's), summed."""
    children = getattr(svc.read_model, "children", None)
    if children is None:
        return
    for child in children(usage.session_id):
        row = svc.read_model.session(child.session_id)
        if row is None or row.deleted:
            continue
        sub = usage_of(child.session_id)
        usage.children.append(r.ChildUsage(session_id=child.session_id, kind=child.link.kind,
                                           used_tokens=sub.used_tokens, children_tokens=sub.children_tokens))
        usage.children_tokens += sub.used_tokens + sub.children_tokens
    if usage.children:
        usage.text += f"\n{'Children':<22}{len(usage.children)} sessions, {usage.children_tokens:,} tokens"
