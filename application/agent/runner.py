"""``TurnRunner``: the whole agent loop for hosts that want it (spec §11.2-§11.4).

append the user message → ``prepare_turn`` (auto-compaction at most once) → provider →
append the assistant message → run each tool call exactly once through the host's
executor → append results → next step, until the model answers without tool calls.

With ``context_compaction.background_ratio`` set, a prepared request that uses that share
of the threshold starts the summary in the background (``background_compaction.py``,
ADR 0038), at most once per turn; ``close`` cancels the attempts this runner started.

Overflow before any tool ran: ``recover_overflow`` and one retry of the rebuilt
request. Overflow after tools ran: a request-local trim of older turns' copies and one
retry of the same step; tools are never re-executed and no checkpoint is made mid-turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from context_compaction.domain.errors import ContextCompactionError, OverflowRetryExhausted
from context_compaction.domain.overflow import parse_overflow, trim_request

from ..contracts import commands as c
from ..contracts import results as r
from ..contracts.ports import ChatProvider, ContextOverflow, ToolExecutor
from ..compacting.background_compaction import start_background_compaction, wants_background
from .budget_tools import (
    BUDGET_TOOLS,
    COMPACT_NOW_REPLY,
    COMPACT_NOW_TOOL_NAME,
    CONTEXT_REMAINING_TOOL_NAME,
    run_context_remaining,
)
from .recall import RECALL_HISTORY_TOOL, RECALL_TOOL_NAME, run_recall
from ..runtime.turnlease import DEFAULT_LEASE_SECONDS, TurnLease

log = logging.getLogger("context_compaction.runner")


@dataclass
class TurnResult:
    session_id: str
    turn_id: str
    answer: str | None
    steps: int
    provider_calls: int
    tool_calls: int
    compactions: list[r.CompactOutcome] = field(default_factory=list)
    overflow_recoveries: int = 0
    in_turn_trims: int = 0
    warnings: list[str] = field(default_factory=list)
    first_seq: int | None = None
    last_seq: int | None = None
    stopped: str = "answered"
    background_started: bool = False
    """A background summary was started (or found running) during this turn."""


class TurnRunner:
    def __init__(
        self,
        bus: Any,
        provider: ChatProvider,
        execute_tool: ToolExecutor,
        *,
        max_steps: int = 32,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        subagents: dict[str, Any] | None = None,
    ) -> None:
        self.bus = bus
        #: tool name → ``subagents.SubagentSpec``: such a call runs a sub-agent session
        #: through this runner, its answer the call's result (issue 42).
        self.subagents = dict(subagents or {})
        self.provider = provider
        self.execute_tool = execute_tool
        self.max_steps = max_steps
        self.lease_seconds = lease_seconds
        self._leases: dict[str, TurnLease] = {}
        self._compact_asked: set[str] = set()
        self._offered: dict[str, set[str]] = {}
        self._inputs: dict[str, c.PrepareTurn] = {}

    def close(self) -> None:
        """Cancel the background summaries this runner started and join their threads:
        none commits afterwards (one whose commit had begun finishes it first)."""
        timeout = self.bus.services.settings.summary_timeout_seconds
        self.bus.services.turns.background.cancel(owner=self, timeout=timeout)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> TurnRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _dispatch(self, command: c.Command) -> Any:
        """The command off the event loop (``adispatch``, ADR 0042), once this turn still
        holds its session (ADR 0041)."""
        lease = self._leases.get(getattr(command, "session_id", ""))
        if lease is not None:
            await lease.ensure()
        return await self.bus.adispatch(command)

    async def run(
        self,
        session_id: str,
        user: str | dict[str, Any],
        *,
        system_prompt: str | None = None,
        tools: Sequence[dict[str, Any]] = (),
        knowledge: str | None = None,
        active_plan: str | None = None,
        model: str | None = None,
        turn_id: str | None = None,
        steering: Callable[[], Sequence[str]] | None = None,
        recall: bool = False,
        budget_tools: bool = False,
        compact_tool: bool = False,
    ) -> TurnResult:
        """Run one turn to its final answer; returns what happened.

        One turn per session at a time, across processes: while a turn runs (here or in
        another process on the same database) a second ``run`` on the session raises
        ``TurnInProgress`` before it appends anything (ADR 0041).

        ``recall``: offer the model the ``recall_history`` tool and answer its calls
        here, from the session's own history (never through ``execute_tool``).
        ``budget_tools`` / ``compact_tool``: offer ``context_remaining`` / ``compact_now``
        and answer them here (issue 43; budget_tools.py); a ``compact_now`` call compacts
        once the turn has ended.
        """
        memory = self.bus.services.turns
        offered = {n for on, n in ((budget_tools, CONTEXT_REMAINING_TOOL_NAME), (compact_tool, COMPACT_NOW_TOOL_NAME))
                   if on and not any(_tool_name(t) == n for t in tools)}
        tools = [*tools, *(BUDGET_TOOLS[n] for n in sorted(offered))]
        async with TurnLease(self.bus.services, session_id, self.lease_seconds) as lease:
            self._leases[session_id] = lease
            self._offered[session_id] = offered
            memory.turn_started(session_id)
            try:
                result = await self._run(
                    session_id, user, system_prompt=system_prompt, tools=list(tools),
                    knowledge=knowledge, active_plan=active_plan, model=model,
                    turn_id=turn_id or f"turn-{uuid.uuid4().hex[:12]}", steering=steering,
                    recall=recall,
                )
            finally:
                memory.turn_finished(session_id)
                self._leases.pop(session_id, None)
                self._offered.pop(session_id, None)
                self._inputs.pop(session_id, None)
                # Asked for by this turn only: a turn that failed takes its request along.
                asked = session_id in self._compact_asked
                self._compact_asked.discard(session_id)
        if asked:
            # After the turn (a manual compaction is refused while one runs).
            try:
                outcome = await self.bus.adispatch(c.Compact(session_id=session_id))
            except ContextCompactionError as exc:  # the turn itself succeeded: said, not raised
                result.warnings.append(f"compact_now: the compaction failed ({exc.code})")
            else:
                if outcome.status == "compacted":
                    result.compactions.append(outcome)
        return result

    async def _append(
        self,
        session_id: str,
        messages: list[dict[str, Any]],
        command_id: str,
        model: str | None = None,
    ) -> list[int]:
        result = await self._dispatch(
            c.AppendMessages(
                session_id=session_id, messages=messages, command_id=command_id, model=model
            )
        )
        return list(result.seqs)

    async def _run(
        self,
        session_id: str,
        user: str | dict[str, Any],
        *,
        system_prompt: str | None,
        tools: list[dict[str, Any]],
        knowledge: str | None,
        active_plan: str | None,
        model: str | None,
        turn_id: str,
        steering: Callable[[], Sequence[str]] | None,
        recall: bool = False,
    ) -> TurnResult:
        if recall and not any(_tool_name(t) == RECALL_TOOL_NAME for t in tools):
            tools = [*tools, RECALL_HISTORY_TOOL]
        message = {"role": "user", "content": user} if isinstance(user, str) else dict(user)
        message.setdefault("turn_id", turn_id)
        ids = _CommandIds(session_id, turn_id)
        seqs = await self._append(session_id, [message], ids("input"))
        result = TurnResult(session_id, turn_id, None, 0, 0, 0, first_seq=seqs[0], last_seq=seqs[-1])
        prepare = c.PrepareTurn(session_id=session_id, system_prompt=system_prompt, tools=tools or None,
                                knowledge=knowledge, active_plan=active_plan, model=model)
        self._inputs[session_id] = prepare  # what context_remaining measures the room of
        request = await self._dispatch(prepare)
        self._note(result, request)
        self._background(prepare, request, result)
        tool_progress = False
        for step in range(self.max_steps):
            result.steps = step + 1
            reply, request, exact = await self._call(session_id, request, tools, tool_progress, result)
            assistant = dict(reply.message)
            assistant["turn_id"] = turn_id
            seqs = await self._append(session_id, [assistant], ids(f"step{step}"), request.model)
            result.last_seq = seqs[-1]
            if reply.prompt_tokens is not None and exact:
                await self._record_usage(session_id, request, reply)
            calls = assistant.get("tool_calls") or []
            if not calls:
                result.answer = assistant.get("content")
                return result
            await self._run_tools(session_id, calls, recall=recall, ids=ids, result=result)
            tool_progress = True
            for text in (steering() if steering else ()):
                seqs = await self._append(session_id, [{"role": "user", "content": text, "steering": True,
                                                         "turn_id": turn_id}], ids(f"steer{step}"))
                result.last_seq = seqs[-1]
            request = await self._dispatch(prepare)
            self._note(result, request)
            self._background(prepare, request, result)
        result.stopped = "max_steps"
        result.warnings.append(f"stopped after {self.max_steps} steps without a final answer")
        return result

    async def _record_usage(self, session_id: str, request: r.TurnRequest, reply: Any) -> None:
        await self._dispatch(c.RecordUsage(
            session_id=session_id, request_id=request.request_id,
            prompt_tokens=reply.prompt_tokens, cached_tokens=reply.cached_tokens,
            cache_creation_tokens=reply.cache_creation_tokens,
            completion_tokens=reply.completion_tokens))

    async def _run_tools(self, session_id: str, calls: list[Any], *, recall: bool,
                         ids: "_CommandIds", result: TurnResult) -> None:
        """Run each call and append its result (a raising tool's result says so)."""
        for call in calls:
            flat = _flat_call(call)
            try:
                if recall and flat["name"] == RECALL_TOOL_NAME:
                    output = await asyncio.to_thread(run_recall, self.bus, session_id, flat["arguments"])
                elif flat["name"] in self._offered.get(session_id, ()):
                    output = await self._budget_tool(session_id, flat["name"])
                elif flat["name"] in self.subagents:  # (the parent's lease stays held, issue 42)
                    from context_compaction.application.agent.subagents import run_subagent

                    output = await run_subagent(self, session_id, flat, self.subagents[flat["name"]])
                else:
                    output = await self.execute_tool(flat)
            except Exception as exc:  # noqa: BLE001 - a tool failure is a result for the model
                output = f"error: the tool raised {type(exc).__name__}"
            result.tool_calls += 1
            seqs = await self._append(session_id, [{
                "role": "tool", "tool_call_id": flat["id"], "name": flat["name"],
                "content": output, "turn_id": result.turn_id}], ids(f"tool:{flat['id']}"))
            result.last_seq = seqs[-1]

    async def _budget_tool(self, session_id: str, name: str) -> str:
        if name == COMPACT_NOW_TOOL_NAME:
            self._compact_asked.add(session_id)
            return COMPACT_NOW_REPLY
        return await asyncio.to_thread(run_context_remaining, self.bus, session_id, self._inputs.get(session_id))

    def _background(self, prepare: c.PrepareTurn, request: r.TurnRequest, result: TurnResult) -> None:
        """At most one background summary per turn (issue 17, ADR 0038)."""
        if not result.background_started and wants_background(self.bus.services, request):
            start_background_compaction(self.bus.services, prepare, owner=self)
            result.background_started = True

    @staticmethod
    def _note(result: TurnResult, request: r.TurnRequest) -> None:
        if request.compaction is not None and request.compaction.status == "compacted":
            result.compactions.append(request.compaction)
        result.warnings += request.warnings

    async def _call(
        self,
        session_id: str,
        request: r.TurnRequest,
        tools: list[dict[str, Any]],
        tool_progress: bool,
        result: TurnResult,
    ) -> tuple[Any, r.TurnRequest, bool]:
        """One provider step with the overflow rules of spec §11.3/§11.4.

        Returns the reply, the request it answered, and whether the messages sent were
        exactly the prepared ones (only then may its usage calibrate the next budget).
        """
        messages = request.messages
        trimmed = False
        retried = False
        while True:
            result.provider_calls += 1
            try:
                reply = await self.provider.complete(model=request.model, messages=messages, tools=tools)
                return reply, request, not trimmed
            except ContextOverflow as overflow:
                if not tool_progress:
                    # Before any tool ran: the session may recover formally, once.
                    request = await self._dispatch(c.RecoverOverflow(
                        session_id=session_id, request_id=request.request_id,
                        error_message=str(overflow), tool_progress=False))
                    result.overflow_recoveries += 1
                    self._note(result, request)
                    messages, trimmed = request.messages, False
                    continue
                if retried:
                    raise OverflowRetryExhausted(
                        "the provider step overflowed again after its one in-turn retry",
                        details={"session_id": session_id, "request_id": request.request_id},
                    ) from None
                retried, trimmed = True, True
                messages = self._trim_step(request, messages, str(overflow))
                result.in_turn_trims += 1
                log.warning("in-turn overflow, retrying the step with a trimmed request",
                            extra={"session_id": session_id, "request_id": request.request_id})

    def _trim_step(
        self, request: r.TurnRequest, messages: list[dict[str, Any]], error: str
    ) -> list[dict[str, Any]]:
        """Spec §11.4: shorten older turns' tool results, then drop older turns, in a copy;
        the current turn (from ``turn_start_index``) is kept whole."""
        svc = self.bus.services
        encoding = svc.tokens.encoding_for(request.model)
        sizes = [svc.tokens.count_message(m, encoding) for m in messages]
        limit = request.usage.compression_threshold_tokens
        info = parse_overflow(error)
        if info.window:
            limit = min(limit, info.window - min(svc.settings.context_compaction.reserve_tokens, info.window // 2))
        estimate = sum(sizes)
        if info.prompt_tokens and info.prompt_tokens > estimate:
            limit = int(limit * estimate / info.prompt_tokens)  # the provider counts more than we do
        trimmed = trim_request(
            messages,
            sizes=sizes,
            keep_from=min(request.turn_start_index, len(messages)),
            limit=min(limit, estimate - 1),
            count=lambda m: svc.tokens.count_message(m, encoding),
        )
        return trimmed.messages


class _CommandIds:
    """Command ids of one turn's appends: unique across sessions (CONTRACT.md) and
    within the 256-character limit whatever the turn and tool-call ids are."""

    def __init__(self, session_id: str, turn_id: str) -> None:
        self.session_id = session_id
        self.turn_id = turn_id

    def __call__(self, step: str) -> str:
        key = "\0".join((self.session_id, self.turn_id, step)).encode("utf-8", "surrogatepass")
        return f"turn_{hashlib.blake2b(key, digest_size=16).hexdigest()}"


def _tool_name(tool: dict[str, Any]) -> str | None:
    fn = tool.get("function")
    return fn.get("name") if isinstance(fn, dict) else tool.get("name")


def _flat_call(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function")
    if isinstance(fn, dict):
        return {"id": call["id"], "name": fn.get("name", ""), "arguments": fn.get("arguments") or ""}
    return {"id": call["id"], "name": call.get("name", ""), "arguments": call.get("arguments") or ""}
