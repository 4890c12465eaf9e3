"""Projection rules (spec §7.1, §5.11, §20.4): framing, provider state, tool-chain repair."""

from __future__ import annotations

import pytest

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.projection import (
    SUMMARY_FOOTER,
    SUMMARY_HEADER,
    ProjectionBuilder,
    build_projection,
)
from context_compaction.domain.provider_messages import ProviderIdentity
from helpers import Harness, assistant, err, ok, tool, user
from projection_builders import rec

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

CLAUDE = ProviderIdentity("anthropic", "anthropic/claude-sonnet-4-5")


def test_the_summary_is_a_framed_user_message_before_the_tail() -> None:
    p = build_projection(
        checkpoint=Checkpoint(
            checkpoint_id="cp_1", generation=1, parent_checkpoint_id=None,
            summary="## Objective\nfix it", first_retained_seq=5, source_max_seq=4,
            trigger_reason="manual", provider_kind="extractive", model="m",
            tokens_before=100, tokens_after=10, degraded=False, summary_source={}, created_at="",
        ),
        messages=[rec(5, "user"), rec(6, "assistant")],
        context_generation=1,
        identity=None,
    )
    first = p.messages[0]
    assert first["role"] == "user"
    assert first["content"].startswith(SUMMARY_HEADER + "\n")
    assert first["content"].endswith("\n" + SUMMARY_FOOTER)
    assert "## Objective\nfix it" in first["content"]
    assert p.first_raw_seq == 5 and p.checkpoint_id == "cp_1"
    assert all(m["role"] != "system" for m in p.messages)


def test_provider_state_replays_only_to_the_same_provider_and_model() -> None:
    state = {"provider": "anthropic", "model": "claude-sonnet-4-5",
             "data": {"thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "sig"}]}}
    messages = [rec(1, "user"), rec(2, "assistant", state=state, reasoning="visible thoughts")]
    same = build_projection(checkpoint=None, messages=messages, context_generation=0, identity=CLAUDE)
    other = build_projection(checkpoint=None, messages=messages, context_generation=0,
                             identity=ProviderIdentity("openai", "gpt-4o"))
    other_model = build_projection(checkpoint=None, messages=messages, context_generation=0,
                                   identity=ProviderIdentity("anthropic", "anthropic/claude-opus-4-1"))
    assert same.messages[1]["thinking_blocks"][0]["signature"] == "sig"
    assert same.messages[1]["reasoning_content"] == "visible thoughts"
    for p in (other, other_model):
        assert "thinking_blocks" not in p.messages[1] and "reasoning_content" not in p.messages[1]


def test_same_inputs_give_byte_identical_messages() -> None:
    messages = [rec(1, "user"), rec(2, "assistant", calls=["a"], content=None), rec(3, "tool", call_id="a")]
    a = build_projection(checkpoint=None, messages=messages, context_generation=0, identity=CLAUDE)
    b = build_projection(checkpoint=None, messages=[dict(m) for m in messages], context_generation=0,
                         identity=CLAUDE)
    assert json.dumps(a.messages) == json.dumps(b.messages)


def test_repair_moves_interleaved_steering_and_drops_orphans() -> None:
    messages = [
        rec(1, "tool", call_id="ghost"),
        rec(2, "assistant", calls=["a", "b"], content=None),
        rec(3, "tool", call_id="a"),
        rec(4, "user", steering=True),
        rec(5, "tool", call_id="b"),
        rec(6, "assistant", calls=["c"], content=None),
        rec(7, "assistant"),
    ]
    p = build_projection(checkpoint=None, messages=messages, context_generation=0, identity=None)
    assert p.included_seqs == [2, 3, 5, 4, 7]
    assert [m["role"] for m in p.messages] == ["assistant", "tool", "tool", "user", "assistant"]
    assert any("dropped tool result seq 1" in d for d in p.diagnostics)
    assert any("unanswered tool call 'c'" in d for d in p.diagnostics)


records_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.booleans()),
        st.tuples(st.just("assistant"), st.integers(0, 3)),
        st.tuples(st.just("tool"), st.integers(0, 6)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(records_strategy, st.lists(st.integers(1, 8), max_size=8))
def test_the_incremental_builder_equals_a_full_rebuild(shape, chunks) -> None:
    messages, call_no, open_ids = [], 0, []
    for seq, (role, arg) in enumerate(shape, start=1):
        if role == "user":
            messages.append(rec(seq, "user", steering=arg))
        elif role == "assistant":
            ids = [f"k{call_no + i}" for i in range(arg)]
            call_no += arg
            open_ids += ids
            messages.append(rec(seq, "assistant", calls=ids, content=None if ids else "a"))
        else:
            target = open_ids[arg % len(open_ids)] if open_ids and arg < 5 else f"ghost{arg}"
            messages.append(rec(seq, "tool", call_id=target))
    builder = ProjectionBuilder(None)
    i = 0
    for size in chunks or [len(messages)]:
        builder.extend(messages[i : i + size])
        i += size
    builder.extend(messages[i:])
    incremental = builder.build(checkpoint=None, context_generation=0)
    full = build_projection(checkpoint=None, messages=messages, context_generation=0, identity=None)
    assert incremental.messages == full.messages
    assert incremental.included_seqs == full.included_seqs
    assert incremental.max_raw_seq == full.max_raw_seq
    assert sorted(incremental.diagnostics) == sorted(full.diagnostics)


def test_snapshot_steps_follow_what_a_snapshot_holds_and_stay_bounded() -> None:
    # ADR 0051: a compacted session's snapshot holds only its open work, so its step is
    # the fixed interval whatever its size (they doubled with the version before, and a
    # cold load at 100k messages replayed up to 12k events). ADR 0061: a session never
    # compacted holds every tool group, so its snapshots get sparser as they grow, up to
    # 16 intervals.
    from context_compaction.infrastructure.eventstore import snapshot_step

    assert {snapshot_step(100, groups) for groups in (0, 10, 255, 511)} == {100}
    assert [snapshot_step(100, g) for g in (512, 1_023, 1_024, 2_048, 4_096)] == [200, 200, 400, 800, 1_600]
    assert snapshot_step(100, 10_000_000) == 1_600


