"""Provider-native compaction (issue 17, ADR 0039): the pure parts — what a compact
response must hold, how the summarized range becomes the provider's input, and that the
in-turn trim keeps a native block."""

from __future__ import annotations

import pytest

from context_compaction.domain.errors import SummaryFailed
from context_compaction.domain.projection import SUMMARY_HEADER
from context_compaction.domain.provider_messages import ProviderIdentity
from context_compaction.domain.summary import SourceEntry, SummarySource
from context_compaction.application.contracts.ports import SummaryRequest
from context_compaction.infrastructure.native_compaction import (
    ITEMS_FIELD,
    OPENAI_COMPACT,
    compact_input,
    compacted_items,
    compaction_messages,
)


def test_a_compact_response_without_one_final_compaction_item_is_refused() -> None:
    good = [{"type": "message", "role": "user", "content": []}, {"type": "compaction", "encrypted_content": "x"}]
    assert compacted_items(good) == good
    for bad in ([], None, good[:1], [good[1], good[0]], [good[1], good[1]],
                [{"type": "compaction", "encrypted_content": ""}]):
        with pytest.raises(SummaryFailed):
            compacted_items(bad)


def test_the_in_turn_trim_keeps_a_native_block_like_the_summary_block() -> None:
    from context_compaction.domain.overflow import trim_request

    native = {"role": "user", "content": None, "provider_specific_fields": {ITEMS_FIELD: [{"type": "compaction"}]}}
    messages = [{"role": "system", "content": "s"}, native,
                {"role": "user", "content": "old"}, {"role": "assistant", "content": "old answer"},
                {"role": "user", "content": "now"}]
    trimmed = trim_request(messages, sizes=[1, 50, 50, 50, 1], keep_from=4, limit=60, count=lambda m: 50)
    assert trimmed.messages == [messages[0], native, messages[4]]




def request(entries: list[SourceEntry], previous_summary: str | None = None,
            previous_state: dict | None = None, model: str = "openai/m") -> SummaryRequest:
    source = SummarySource(previous_summary, entries, len(entries), 0, 0,
                           entries[0].seq if entries else None, entries[-1].seq if entries else None)
    return SummaryRequest("s", model, [], source, 100, previous_provider_state=previous_state)


ENTRIES = [
    SourceEntry(3, "tool", "orphan output", tool_call_id="gone"),  # its call was left out
    SourceEntry(4, "user", "fix the test"),
    SourceEntry(5, "assistant", "reading", tool_calls=(("c1", "read", '{"p": 1}'),)),
    SourceEntry(6, "tool", "file text", tool_call_id="c1", tool_name="read"),
    SourceEntry(7, "assistant", "", tool_calls=(("c2", "run", "{}"),)),  # never answered
]


def test_the_compact_input_pairs_calls_and_frames_a_readable_previous_summary() -> None:
    items = compact_input(request(ENTRIES, previous_summary="old facts"), ProviderIdentity("openai", "openai/m"))
    assert items[0]["role"] == "user" and items[0]["content"].startswith(SUMMARY_HEADER)
    assert items[1:] == [
        {"role": "user", "content": "fix the test"},
        {"role": "assistant", "content": "reading"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"p": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "file text"},
    ]


def test_the_compact_input_continues_from_native_items_of_the_same_model_only() -> None:
    native = [{"type": "message", "role": "user", "content": []}, {"type": "compaction", "encrypted_content": "e"}]
    state = {"provider": "openai", "model": "openai/m", "kind": OPENAI_COMPACT,
             "message": {"role": "user", "content": None, "provider_specific_fields": {ITEMS_FIELD: native}}}
    same = compact_input(request(ENTRIES[1:2], "old", state), ProviderIdentity("openai", "openai/m"))
    assert same[:2] == native and SUMMARY_HEADER not in str(same)
    other = compact_input(request(ENTRIES[1:2], "old", {**state, "model": "openai/n"}),
                          ProviderIdentity("openai", "openai/m"))
    assert "encrypted_content" not in str(other) and other[0]["content"].startswith(SUMMARY_HEADER)


def test_the_anthropic_input_puts_the_previous_block_first_and_nests_tool_calls() -> None:
    block = {"type": "compaction", "content": "c", "signature": "s"}
    message = {"role": "assistant", "content": None, "provider_specific_fields": {"compaction_blocks": [block]}}
    state = {"provider": "anthropic", "model": "anthropic/c", "kind": "anthropic_compaction", "message": message}
    out = compaction_messages(request(ENTRIES, "old", state, model="anthropic/c"),
                              ProviderIdentity("anthropic", "anthropic/c"))
    assert out[0] == message and out[0] is not message
    assert out[1:] == [
        {"role": "user", "content": "fix the test"},
        {"role": "assistant", "content": "reading", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "file text"},
    ]


def test_a_checkpoint_refuses_provider_state_that_names_no_maker_or_message() -> None:
    from context_compaction.domain.errors import InvalidCommand
    from snapshot_builders import build_session, checkpoint

    good = {"provider": "openai", "model": "openai/m", "kind": OPENAI_COMPACT, "message": {"role": "user"}}
    for bad in ({**good, "provider": ""}, {k: v for k, v in good.items() if k != "model"}, {**good, "message": "x"}):
        session = build_session()
        with pytest.raises(InvalidCommand):
            session.commit_checkpoint(checkpoint("cp_2", 2, 7, provider_state=bad))
    session = build_session()
    assert session.commit_checkpoint(checkpoint("cp_2", 2, 7, provider_state=good)) == 2
    assert session.collect_events()[-1].provider_state == good
