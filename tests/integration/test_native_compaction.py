"""Provider-native compaction as a summarizer (issue 17, ADR 0039), over real HTTP
through litellm against a local fake of OpenAI's Responses compaction (fakeresponses.py).

The opaque state is stored with the checkpoint beside a readable shadow summary; it is
replayed only to the provider and model that made it, never sent anywhere else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from backends import MakeHarness
from context_compaction.domain.projection import SUMMARY_HEADER
from context_compaction.infrastructure.catalog import LiteLLMCatalog
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.native_compaction import (
    ITEMS_FIELD,
    responses_input,
)
from context_compaction.infrastructure.summarizers import import_litellm
from context_compaction.infrastructure.tokens import TiktokenCounter
from context_compaction.infrastructure.verify import verify
from fakeresponses import ANTHROPIC_BETA, FakeResponses, fake_encrypted, fake_signature
from helpers import FAKE_MODEL, Harness, err, ok

SID = "s"
OTHER_MODEL = "openai/other-model"
SHADOW = "## Objective\nFix the flaky refund test in /srv/payments-api."
SYSTEM = "You are a coding agent."


@pytest.fixture
def fake() -> Iterator[FakeResponses]:
    server = FakeResponses().start()
    server.default.text = SHADOW
    yield server
    server.stop()


def settings(fake: FakeResponses, **extra: Any) -> dict[str, Any]:
    model = {"api_base": fake.base_url, "api_key": "test-key", "token_limit": 32_000}
    return {
        "summarizer": "native",
        "native_compaction": {"readable": "llm"},
        "summary_timeout_seconds": 10.0,
        "models": {FAKE_MODEL: model, OTHER_MODEL: model},
        "context_compaction": {"keep_recent_tokens": 2000},
        **extra,
    }


def session(make_harness: MakeHarness, fake: FakeResponses, turns: int = 8, **extra: Any) -> Harness:
    h = make_harness("main", **settings(fake, **extra))
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    for t in coding_session(turns, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    return h


def prepare(h: Harness, model: str | None = None) -> dict[str, Any]:
    command: dict[str, Any] = {"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM, "tools": []}
    if model:
        command["model"] = model
    return ok(h.do(command))


def stored_state(h: Harness) -> dict[str, Any]:
    events = ok(h.do({"type": "read_events", "limit": 1000}))["events"]
    committed = [e for e in events if e["type"] == "CheckpointCommitted"]
    assert committed, "no checkpoint was committed"
    return committed[-1]["payload"]["provider_state"]


def test_native_compaction_stores_the_opaque_state_beside_a_readable_shadow(make_harness: MakeHarness, fake) -> None:
    h = session(make_harness, fake)
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["status"] == "compacted" and outcome["provider_kind"] == "native:openai"
    compact_calls = fake.of("/responses/compact")
    assert len(compact_calls) == 1 and len(fake.of("/chat/completions")) == 1
    sent = compact_calls[0].body
    assert sent["model"] == "fake-model" and isinstance(sent["input"], list)
    assert any(i.get("type") == "function_call_output" for i in sent["input"])  # tool output went too
    state = stored_state(h)
    assert (state["provider"], state["model"], state["kind"]) == ("openai", FAKE_MODEL, "openai_responses_compact")
    items = state["message"]["provider_specific_fields"][ITEMS_FIELD]
    assert items[-1]["type"] == "compaction"
    assert items[-1]["encrypted_content"] == fake_encrypted("fake-model", sent["input"])
    checkpoint = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]
    assert checkpoint["summary"].startswith(SHADOW)  # the readable shadow is the summary
    assert checkpoint["native_state"] == {"provider": "openai", "model": FAKE_MODEL, "kind": "openai_responses_compact"}
    assert "provider_state" not in checkpoint and "fake1:" not in json.dumps(checkpoint)


def test_prepare_turn_for_the_same_model_replays_the_opaque_items(make_harness: MakeHarness, fake) -> None:
    h = session(make_harness, fake)
    ok(h.do({"type": "compact", "session_id": SID}))
    state = stored_state(h)
    turn = prepare(h)
    assert turn["messages"][1] == state["message"]  # in place of the summary block
    assert SUMMARY_HEADER not in json.dumps(turn["messages"])
    # Honest accounting: the summary part counts the native message that is sent.
    counter = TiktokenCounter(LiteLLMCatalog().provider_of)
    encoding = counter.encoding_for(FAKE_MODEL)
    assert turn["usage"]["breakdown"]["summary"] == counter.count_message(state["message"], encoding)
    sent_items = json.dumps(state["message"]["provider_specific_fields"][ITEMS_FIELD], ensure_ascii=False)
    # (the items' JSON text, give or take how its keys are ordered and spaced)
    assert turn["usage"]["breakdown"]["summary"] >= 0.9 * counter.count_text(sent_items, encoding.partition("*")[0])
    # Ready to pass: the Responses API takes the items verbatim.
    instructions, items = responses_input(turn["messages"])
    assert instructions == SYSTEM
    import_litellm().responses(
        model=FAKE_MODEL, instructions=instructions, input=items,
        api_base=fake.base_url, api_key="k", store=False, max_retries=0,
    )
    replayed = fake.of("/responses")[-1].body["input"]
    compaction = state["message"]["provider_specific_fields"][ITEMS_FIELD][-1]
    assert [i for i in replayed if i.get("type") == "compaction"] == [compaction]


@pytest.mark.parametrize("model", [OTHER_MODEL, "anthropic/claude-sonnet-4-5", "gpt-4o"])
def test_the_opaque_state_is_never_sent_to_another_provider_or_model(
    make_harness: MakeHarness, fake, model: str
) -> None:
    h = session(make_harness, fake)
    ok(h.do({"type": "compact", "session_id": SID}))
    secret = stored_state(h)["message"]["provider_specific_fields"][ITEMS_FIELD][-1]["encrypted_content"]
    turn = prepare(h, model)
    payload = json.dumps(turn["messages"])
    assert secret not in payload and ITEMS_FIELD not in payload and "compaction" not in payload
    block = json.dumps(turn["messages"][1]["content"], ensure_ascii=False)  # (a list with a cache breakpoint for Anthropic)
    assert SUMMARY_HEADER in block and SHADOW.splitlines()[1] in block
    for query in ({"type": "get_projection", "session_id": SID, "model": model},
                  {"type": "replay_session", "session_id": SID, "model": model}):
        assert secret not in json.dumps(ok(h.do(query)))
    if model == OTHER_MODEL:  # what actually goes over the wire, both APIs
        litellm = import_litellm()
        litellm.completion(model=model, messages=turn["messages"], api_base=fake.base_url, api_key="k")
        instructions, items = responses_input(turn["messages"])
        litellm.responses(model=model, instructions=instructions, input=items,
                          api_base=fake.base_url, api_key="k", store=False, max_retries=0)
        for request in fake.requests[-2:]:
            assert secret not in json.dumps(request.body) and "compaction" not in json.dumps(request.body)


def test_restart_and_replay_restore_both_byte_identically(make_harness: MakeHarness, fake) -> None:
    h = session(make_harness, fake)
    ok(h.do({"type": "compact", "session_id": SID}))
    before = {m: json.dumps(prepare(h, m)["messages"]) for m in (FAKE_MODEL, OTHER_MODEL)}
    version = ok(h.do({"type": "replay_session", "session_id": SID}))["version"]
    h.reopen()
    calls = fake.calls
    after = {m: json.dumps(prepare(h, m)["messages"]) for m in (FAKE_MODEL, OTHER_MODEL)}
    assert after == before and fake.calls == calls  # restore calls no provider
    for model in (FAKE_MODEL, OTHER_MODEL):
        replayed = ok(h.do({"type": "replay_session", "session_id": SID, "at_version": version, "model": model}))
        assert json.dumps(replayed["projection"]["messages"]) == json.dumps(json.loads(before[model])[1:])
    _, app = h._db()
    report = verify(app, h.bus.services.read_model)  # rm_checkpoints.provider_state from the events
    assert report.ok, report.text()
    h.bus.services.read_model.rebuild()
    h.reopen()
    assert {m: json.dumps(prepare(h, m)["messages"]) for m in (FAKE_MODEL, OTHER_MODEL)} == before


def test_a_failed_native_call_is_summary_failed_and_commits_nothing(make_harness: MakeHarness, fake) -> None:
    h = session(make_harness, fake)
    fake.fail_compact = 5
    events = h.events()
    failure = err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert "native compaction" in failure["message"]
    assert h.events() == events and len(fake.of("/responses/compact")) == 1  # no retry
    assert fake.of("/chat/completions") == []  # no readable summary in its place
    assert ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"] == []


def test_a_failed_shadow_summary_is_summary_failed_too(make_harness: MakeHarness, fake) -> None:
    from fakeprovider import Reply

    h = session(make_harness, fake)
    fake.queue(Reply(status=500))
    events = h.events()
    err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert h.events() == events and len(fake.of("/responses/compact")) == 1


def test_the_next_compaction_continues_from_the_native_items(make_harness: MakeHarness, fake) -> None:
    h = session(make_harness, fake, turns=6)
    ok(h.do({"type": "compact", "session_id": SID}))
    first = stored_state(h)["message"]["provider_specific_fields"][ITEMS_FIELD]
    for t in coding_session(8, big_output_chars=2_000)[6:]:
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "compact", "session_id": SID}))
    second_input = fake.of("/responses/compact")[-1].body["input"]
    assert second_input[: len(first)] == first  # not the readable summary block
    assert SUMMARY_HEADER not in json.dumps(second_input)


def test_a_provider_without_a_compact_endpoint_gets_the_readable_summary_only(make_harness: MakeHarness, fake) -> None:
    model = "mistral/mistral-large-latest"
    h = make_harness("main", **settings(fake, native_compaction={"readable": "extractive"},
                                        models={model: {"token_limit": 32_000}}))
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    for t in coding_session(8, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["provider_kind"] == "extractive" and fake.requests == []
    checkpoint = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]
    assert checkpoint["native_state"] is None


# ------------------------------------------------------------------ Anthropic
CLAUDE = "anthropic/claude-opus-4-6"
CLAUDE_OTHER = "anthropic/claude-sonnet-4-6"


def claude_session(make_harness: MakeHarness, fake: FakeResponses) -> Harness:
    model = {"api_base": fake.root_url, "api_key": "test-key", "token_limit": 32_000}
    h = make_harness("main", **settings(
        fake, native_compaction={"readable": "extractive"}, models={CLAUDE: model, CLAUDE_OTHER: model}))
    ok(h.do({"type": "start_session", "session_id": SID, "model": CLAUDE}))
    for t in coding_session(8, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    return h


def test_anthropic_compaction_block_is_stored_and_replayed_byte_exact_to_its_model(make_harness: MakeHarness, fake) -> None:
    h = claude_session(make_harness, fake)
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["provider_kind"] == "native:anthropic"
    (asked,) = fake.of("/messages")
    assert asked.body["compaction"] == {"type": "summarize"} and ANTHROPIC_BETA in asked.headers["anthropic-beta"]
    # Claude is counted x1.25 (ADR 0008): the 2,048-token reserve is 1,638 of its own (ADR 0111)
    assert asked.body["max_tokens"] == 1_638, asked.body["max_tokens"]
    state = stored_state(h)
    assert (state["provider"], state["model"], state["kind"]) == ("anthropic", CLAUDE, "anthropic_compaction")
    (block,) = state["message"]["provider_specific_fields"]["compaction_blocks"]
    assert block["signature"] == fake_signature("claude-opus-4-6", block["content"])
    turn = prepare(h)
    assert turn["messages"][1] == state["message"]
    assert SUMMARY_HEADER not in json.dumps(turn["messages"])
    h.reopen()
    assert prepare(h)["messages"] == turn["messages"]  # restored byte-identically
    # Ready to pass: litellm sends the block first, with the beta header, nothing beside it.
    import_litellm().completion(model=CLAUDE, messages=turn["messages"], api_base=fake.root_url,
                                api_key="k", max_tokens=100, num_retries=0)
    sent = fake.of("/messages")[-1]
    assert "compaction" not in sent.body and ANTHROPIC_BETA in sent.headers["anthropic-beta"]
    assert sent.body["messages"][0]["content"] == [block]  # (no sanitised empty text beside it)


@pytest.mark.parametrize("model", [CLAUDE_OTHER, OTHER_MODEL])
def test_anthropic_compaction_block_is_never_sent_to_another_model(make_harness: MakeHarness, fake, model: str) -> None:
    h = claude_session(make_harness, fake)
    ok(h.do({"type": "compact", "session_id": SID}))
    (block,) = stored_state(h)["message"]["provider_specific_fields"]["compaction_blocks"]
    turn = prepare(h, model)
    assert block["signature"] not in json.dumps(turn["messages"]) and "compaction" not in json.dumps(turn["messages"])
    base = fake.root_url if model == CLAUDE_OTHER else fake.base_url
    import_litellm().completion(model=model, messages=turn["messages"], api_base=base, api_key="k",
                                max_tokens=100, num_retries=0)
    wire = json.dumps(fake.requests[-1].body)
    assert block["signature"] not in wire and '"compaction"' not in wire


@pytest.mark.parametrize("failure", ["soft", "overloaded"])
def test_a_failed_anthropic_compaction_is_summary_failed(make_harness: MakeHarness, fake, failure: str) -> None:
    h = claude_session(make_harness, fake)
    if failure == "soft":
        fake.soft_fail = 1
    else:
        fake.fail_compact = 1
    events = h.events()
    err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert h.events() == events and len(fake.of("/messages")) == 1
