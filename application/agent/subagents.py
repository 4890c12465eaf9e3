"""Sub-agent sessions (issue 42, ADR 0081): ``complete_subagent`` makes a sub-agent's
result its parent's tool result for the call that spawned it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from context_compaction.domain.errors import InvalidCommand, SessionExists
from context_compaction.domain.messages import Message
from context_compaction.domain.tree import SUBAGENT, link_of

from context_compaction.application.contracts import commands as c
from context_compaction.application.contracts import results as r
from context_compaction.application.runtime.services import Services
from context_compaction.application.history.sessions import append_messages


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


@dataclass(frozen=True)
class SubagentSpec:
    """How ``TurnRunner`` runs a tool as a sub-agent session (``TurnRunner(subagents=
    {name: SubagentSpec(...)})``): the child's model, system prompt and tools; its task is
    the call's ``task`` argument (else the arguments as given)."""

    model: str
    system_prompt: str | None = None
    tools: Sequence[dict[str, Any]] = ()
    task_of: Callable[[dict[str, Any]], str] | None = None


def subagent_session_id(parent_session_id: str, call_id: str) -> str:
    """The child's id: the parent's and the call's, hashed when they are too long."""
    sid = f"{parent_session_id}/{call_id}"
    return sid if len(sid) <= 256 else "subagent-" + hashlib.sha256(sid.encode()).hexdigest()


async def run_subagent(runner: Any, parent_session_id: str, call: dict[str, Any], spec: SubagentSpec) -> str:
    """Start the sub-agent's session linked to ``call`` (once: a retried turn finds it),
    run its turn through ``runner`` to its answer, and return the answer, which the
    runner appends as the parent's tool result (closing the link)."""
    child = subagent_session_id(parent_session_id, call["id"])
    try:
        await runner.bus.adispatch(c.StartSession(
            session_id=child, model=spec.model, parent_session_id=parent_session_id,
            parent_tool_call_id=call["id"]))
    except SessionExists:
        pass  # (a retry of the same call: the child continues)
    task = spec.task_of(call) if spec.task_of else _task(call["arguments"])
    result = await runner.run(child, task, system_prompt=spec.system_prompt, tools=list(spec.tools),
                              model=spec.model)
    return str(result.answer or "")


def _task(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("task"), str):
        return value["task"]
    return arguments
