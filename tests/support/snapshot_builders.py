"""A compacted session and its checkpoint, for the snapshot and native-compaction tests."""

from __future__ import annotations

from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.messages import parse_message
from context_compaction.domain.session import (
    Session,
)

MESSAGES = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "name": "f", "arguments": "{}"}, {"id": "b", "name": "f", "arguments": "{}"}]},
    {"role": "tool", "tool_call_id": "a", "content": "ra"},
    {"role": "tool", "tool_call_id": "b", "content": "rb"},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "more"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "name": "g", "arguments": "{}"}]},
]


def checkpoint(checkpoint_id: str, generation: int, first_retained_seq: int, **changes: object) -> Checkpoint:
    values: dict[str, object] = dict(
        checkpoint_id=checkpoint_id, generation=generation, parent_checkpoint_id=None,
        summary="sum", first_retained_seq=first_retained_seq, source_max_seq=7,
        trigger_reason="manual", provider_kind="extractive", model="gpt-4o",
        tokens_before=100, tokens_after=10, degraded=False,
        summary_source={"source_messages": 5}, created_at="2024-01-01T00:00:02+00:00",
    )
    values.update(changes)
    return Checkpoint(**values)  # type: ignore[arg-type]


def build_session() -> Session:
    session = Session.start("s1", "gpt-4o", None, created_at="2024-01-01T00:00:00+00:00", command_id="c0")
    session.append_messages(
        [parse_message(m) for m in MESSAGES], command_id="c1", created_at="2024-01-01T00:00:01+00:00"
    )
    session.commit_checkpoint(checkpoint("cp_1", 1, 6))
    return session
