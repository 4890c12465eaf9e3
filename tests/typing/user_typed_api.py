"""A host's script, checked by ``mypy --strict`` (test_typing.py): every line type-checks
and every ``assert_type`` holds. Never run; only read by the type checker."""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel, SecretStr

from context_compaction import CompactionConfig, ModelConfig, Settings, bootstrap, commands
from context_compaction.application.contracts import results

settings = Settings(
    database_url="sqlite:///agent.db",
    summarizer="llm",
    models={"gpt-4o": ModelConfig(token_limit=64_000, api_base="http://127.0.0.1:4000/v1", api_key=SecretStr("sk-x"))},
    context_compaction=CompactionConfig(reserve_tokens=8192, summary_model="gpt-4o-mini"),
)
bus = bootstrap(settings)

started = bus.dispatch(commands.StartSession(session_id="s1", model="gpt-4o"))
assert_type(started, results.StartSessionResult)
assert_type(started.version, int)


class ProviderMessage(BaseModel):  # what litellm's ``choices[0].message`` is: a pydantic model
    role: str
    content: str | None


# Messages as plain dicts (the README's way), as provider objects, or as our Message.
appended = bus.dispatch(commands.AppendMessages(
    session_id="s1",
    messages=[{"role": "user", "content": "hi"}, ProviderMessage(role="assistant", content="hello")],
    command_id="c1",
))
assert_type(appended.seqs, list[int])

request = bus.dispatch(commands.PrepareTurn(
    session_id="s1", system_prompt="You are terse.",
    tools=[{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
))
assert_type(request, results.TurnRequest)
assert_type(request.request_id, str)
assert_type(request.messages, list[dict[str, Any]])
assert_type(request.completion_kwargs(), dict[str, Any])
assert_type(request.usage, results.ContextUsage)
assert_type(request.compaction, results.CompactOutcome | None)

retried = bus.dispatch(commands.RecoverOverflow(
    session_id="s1", request_id=request.request_id, error_message="context_length_exceeded"))
assert_type(retried, results.TurnRequest)

usage = bus.dispatch(commands.GetContextUsage(session_id="s1"))
assert_type(usage, results.ContextUsage)
assert_type(usage.text, str)

outcome = bus.dispatch(commands.Compact(session_id="s1"))
assert_type(outcome, results.CompactOutcome)
assert_type(outcome.tokens_after, int)

history = bus.dispatch(commands.GetHistory(session_id="s1", from_seq=1, limit=10))
assert_type(history, results.HistoryResult)
first = history.messages[0]
assert_type(first, results.HistoryMessage)
assert_type(first.seq, int)
assert_type(first.tool_calls[0].function.name, str)

checkpoints = bus.dispatch(commands.ListCheckpoints(session_id="s1")).checkpoints
assert_type(checkpoints[0], results.CheckpointInfo)
assert_type(checkpoints[0].first_retained_seq, int)

entries = bus.dispatch(commands.RecallTimeline(session_id="s1")).entries
assert_type(entries[0].content, str)

attempts = bus.dispatch(commands.ListCompactionAttempts(session_id="s1")).attempts
assert_type(attempts[0].error_code, str | None)

events = bus.dispatch(commands.ReadEvents(after=0, limit=500)).events
assert_type(events[0], results.FeedEvent)
assert_type(events[-1].position, int)

assert_type(bus.dispatch(commands.SearchHistory(session_id="s1", query="port")).hits[0].seq, int)
assert_type(bus.dispatch(commands.GetProjection(session_id="s1")), results.ProjectionResult)
assert_type(bus.dispatch(commands.ReplaySession(session_id="s1")).projection, results.ProjectionResult)
assert_type(bus.dispatch(commands.RecordUsage(
    session_id="s1", request_id=request.request_id, prompt_tokens=12)), results.RecordUsageResult)
assert_type(bus.dispatch(commands.PinMessages(session_id="s1", seqs=[1])).pinned_seqs, list[int])
assert_type(bus.dispatch(commands.ListSessions()).sessions[0], results.SessionInfo)
assert_type(bus.dispatch(commands.DeleteSession(session_id="s1")), results.DeleteSessionResult)

envelope = bus.dispatch_json({"type": "get_history", "session_id": "s1"})
assert_type(envelope, dict[str, Any])
bus.close()
