"""Sub-agent sessions (issue 42, ADR 0081): ``complete_subagent`` makes a sub-agent's
result its parent's tool result for the call that spawned it."""

from __future__ import annotations

import hashlib

from context_compaction.domain.errors import InvalidCommand
from context_compaction.domain.messages import Message
from context_compaction.domain.tree import SUBAGENT, link_of

from context_compaction.application import commands as c
from context_compaction.application import results as r
from context_compaction.application.services import Services
from context_compaction.application.sessions import append_messages


def complete_subagent(cmd: c.CompleteSubagent, svc: Services) -> r.CompleteSubagentResult:
    """The sub-agent's result becomes the parent's tool result (one append on the
    parent, idempotent: its command id is derived from the child's id)."""
    child = svc.events.load(cmd.session_id)
    link = link_of(child)
    if link is None or link.kind != SUBAGENT or link.parent_tool_call_id is None:
        raise InvalidCommand(
            f"session {cmd.session_id!r} is not a sub-agent spawned by a tool call",
            details={"session_id": cmd.session_id},
        )
    parent = svc.events.load(link.parent_session_id)
    command_id = "subagent-" + hashlib.sha256(cmd.session_id.encode()).hexdigest()[:40]
    if link.parent_tool_call_id not in parent.open_calls:
        earlier = svc.read_model.command(command_id)
        return r.CompleteSubagentResult(
            session_id=cmd.session_id, parent_session_id=link.parent_session_id,
            parent_tool_call_id=link.parent_tool_call_id,
            seq=earlier.first_seq if earlier is not None else None, already_answered=earlier is None,
        )
    message = Message(role="tool", tool_call_id=link.parent_tool_call_id, content=cmd.result)
    appended = append_messages(
        c.AppendMessages(session_id=link.parent_session_id, messages=[message], command_id=command_id), svc
    )
    return r.CompleteSubagentResult(
        session_id=cmd.session_id, parent_session_id=link.parent_session_id,
        parent_tool_call_id=link.parent_tool_call_id, seq=appended.seqs[0], already_answered=False,
    )
