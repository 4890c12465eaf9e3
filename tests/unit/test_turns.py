"""The turn lifecycle: prepare_turn, measured usage, overflow recovery (issue 4, spec §20.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_compaction.domain.overflow import BREADCRUMB, parse_overflow
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import Reply
from backends import MakeHarness
from helpers import FAKE_MODEL, Harness, RecordingSummarizer, err, llm_settings, ok, user
from turns_builders import SID, SYSTEM, build, checkpoints, overflow_text, prepare

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)


# ----------------------------------------------------------- the trigger
def test_threshold_does_not_compact_and_threshold_plus_one_compacts_once(make_harness: MakeHarness) -> None:
    h = make_harness("t")
    build(h)
    used = ok(h.do({"type": "get_context_usage", "session_id": SID, "system_prompt": SYSTEM}))["used_tokens"]
    reserve = 2_000
    at = h.new_bus(models={"gpt-4o": {"token_limit": used + reserve}},
                   context_compaction={"reserve_tokens": reserve, "keep_recent_tokens": 3000})
    request = prepare(h, at)
    assert request["usage"]["compression_threshold_tokens"] == used == request["usage"]["used_tokens"]
    assert request["compaction"] is None and checkpoints(h) == []
    over = h.new_bus(models={"gpt-4o": {"token_limit": used + reserve - 1}},
                     context_compaction={"reserve_tokens": reserve, "keep_recent_tokens": 3000})
    request = prepare(h, over)
    assert request["compaction"]["status"] == "compacted"
    assert request["compaction"]["trigger_reason"] == "auto"
    assert request["usage"]["used_tokens"] <= request["usage"]["compression_threshold_tokens"]
    assert request["messages"][1]["content"].startswith("[Historical conversation summary")
    assert len(checkpoints(h)) == 1
    again = prepare(h, over)  # the same turn: never a second attempt
    assert again["compaction"] is None and len(checkpoints(h)) == 1
    h.close()


def test_a_failed_auto_summary_under_the_hard_window_keeps_the_projection(make_harness: MakeHarness) -> None:
    h = make_harness("t", adapters={"summarizer": RecordingSummarizer(fail=True)},
                models={"gpt-4o": {"token_limit": 30_000}},
                context_compaction={"reserve_tokens": 16_384, "keep_recent_tokens": 3000})
    build(h)
    live = ok(h.do({"type": "get_projection", "session_id": SID}))
    events = h.events()
    request = prepare(h)
    assert request["usage"]["used_tokens"] > request["usage"]["compression_threshold_tokens"]
    assert request["usage"]["used_tokens"] <= request["usage"]["effective_window_tokens"]
    assert request["compaction"] is None
    assert any("auto compaction failed (summary_failed)" in w for w in request["warnings"])
    assert request["messages"][1:] == live["messages"]
    assert h.events() == events
    h.close()


def test_a_smaller_model_over_the_hard_window_commits_a_degraded_checkpoint_before_sending(
    make_harness: MakeHarness, provider
) -> None:
    h = make_harness("t", **llm_settings(provider.base_url, token_limit=9_000),
                context_compaction={"keep_recent_tokens": 2000})
    build(h, model="gpt-4o")
    before = ok(h.do({"type": "get_context_usage", "session_id": SID}))["used_tokens"]
    assert before > 9_000
    ok(h.do({"type": "configure_session", "session_id": SID, "model": FAKE_MODEL}))
    provider.queue(Reply(status=500))  # the one summary attempt fails
    request = prepare(h)
    assert provider.calls == 1  # only the summary call: no doomed chat request went out
    assert "tools" not in provider.requests[0].body
    compaction = request["compaction"]
    assert compaction["degraded"] is True and compaction["trigger_reason"] == "overflow"
    assert request["usage"]["used_tokens"] <= request["usage"]["effective_window_tokens"]
    summary = request["messages"][1]["content"]
    assert BREADCRUMB in summary and "Omitted:" in summary
    assert checkpoints(h)[0]["degraded"] is True
    assert ok(h.do({"type": "recall_timeline", "session_id": SID}))["entries"] == []  # no Timeline
    h.close()


def test_fixed_parts_over_the_threshold_are_refused_and_change_nothing(make_harness: MakeHarness) -> None:
    h = make_harness("t", models={"gpt-4o": {"token_limit": 8_192}})
    build(h, turns=2)
    events = h.events()
    huge = "policy " * 5_000
    e = err(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": huge}),
            "fixed_context_exceeds_budget")
    assert e["details"]["breakdown"]["system"] > 4_096
    assert set(e["details"]["breakdown"]) == {"overhead", "system", "tools", "knowledge", "plan", "pinned"}
    assert h.events() == events and checkpoints(h) == []
    h.close()


# ------------------------------------------------------- measured usage
def test_usage_source_is_measured_exactly_when_the_calibration_key_matches(make_harness: MakeHarness) -> None:
    h = make_harness("t", context_compaction={"keep_recent_tokens": 3000})
    build(h, turns=4)
    first = prepare(h)
    assert first["usage"]["usage_source"] == "estimated"
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": first["request_id"], "prompt_tokens": 7_777}))
    same = prepare(h)
    assert same["usage"]["usage_source"] == "measured+estimated" and same["usage"]["used_tokens"] == 7_777
    ok(h.do({"type": "append_messages", "session_id": SID,
             "messages": [{"role": "assistant", "content": "On it.", "turn_id": "next"}]}))
    grown = prepare(h)
    assert grown["usage"]["usage_source"] == "measured+estimated"
    suffix = grown["usage"]["breakdown"]["history"] - same["usage"]["breakdown"]["history"]
    assert grown["usage"]["used_tokens"] == 7_777 + suffix > 7_777
    assert prepare(h, system_prompt="Another prompt")["usage"]["usage_source"] == "estimated"
    assert prepare(h, knowledge="New recall")["usage"]["usage_source"] == "estimated"
    assert prepare(h, model="gpt-4o-mini")["usage"]["usage_source"] == "estimated"
    assert prepare(h)["usage"]["usage_source"] == "measured+estimated"
    ok(h.do({"type": "compact", "session_id": SID}))  # a new generation
    assert prepare(h)["usage"]["usage_source"] == "estimated"
    after = prepare(h)
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": after["request_id"], "prompt_tokens": 500}))
    assert prepare(h)["usage"]["usage_source"] == "measured+estimated"
    h.reopen()  # calibration lives in memory only
    assert prepare(h)["usage"]["usage_source"] == "estimated"
    err(h.do({"type": "record_usage", "session_id": SID, "request_id": after["request_id"], "prompt_tokens": 1}),
        "unknown_request")
    h.close()


def test_a_request_of_another_session_is_unknown(make_harness: MakeHarness) -> None:
    h = make_harness("t")
    build(h, turns=1)
    ok(h.do({"type": "start_session", "session_id": "other", "model": "gpt-4o"}))
    request = prepare(h)
    for command in ({"type": "record_usage", "prompt_tokens": 5}, {"type": "recover_overflow"}):
        err(h.do({**command, "session_id": "other", "request_id": request["request_id"]}), "unknown_request")
    h.close()


def test_a_mid_turn_request_is_trimmed_locally_never_checkpointed(make_harness: MakeHarness) -> None:
    h = make_harness("t", models={"gpt-4o": {"token_limit": 40_000}},
                context_compaction={"reserve_tokens": 16_384, "keep_recent_tokens": 3000})
    build(h, turns=8, big=8_000)  # ~29k tokens: over the 23,616 threshold
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        {"role": "assistant", "content": None, "turn_id": "next",
         "tool_calls": [{"id": "n1", "name": "run_tests", "arguments": "{}"}]},
        {"role": "tool", "tool_call_id": "n1", "content": "3 passed", "turn_id": "next"}]}))
    events = h.events()
    request = prepare(h)
    assert request["phase"] == "continuation"
    assert request["compaction"] is None and checkpoints(h) == []
    assert h.events() == events
    assert any(w.startswith("request trimmed within the turn") for w in request["warnings"])
    current = request["messages"][request["turn_start_index"]:]
    assert current[0]["content"] == "Next: add a regression test."
    assert [m["role"] for m in current] == ["user", "assistant", "tool"]
    h.close()


# ------------------------------------------------------ recover_overflow
def test_parse_overflow_reads_openai_anthropic_and_litellm_texts() -> None:
    openai = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    assert parse_overflow(openai).window == 8192 and parse_overflow(openai).prompt_tokens == 9000
    anthropic = "prompt is too long: 210000 tokens > 200000 maximum"
    assert parse_overflow(anthropic).window == 200000 and parse_overflow(anthropic).prompt_tokens == 210000
    wrapped = ("litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: "
               "OpenAIException - " + openai)
    assert parse_overflow(wrapped).window == 8192
    assert parse_overflow("something went wrong").window is None


def test_overflow_recovers_with_the_real_window_and_retries_only_once(make_harness: MakeHarness) -> None:
    h = make_harness("t", context_compaction={"keep_recent_tokens": 3000})
    build(h)
    first = prepare(h)
    assert first["usage"]["effective_window_tokens"] == 128_000
    provider_count = int(first["usage"]["used_tokens"] * 1.2)  # the provider counts 20 % more
    retry = ok(h.do({"type": "recover_overflow", "session_id": SID, "request_id": first["request_id"],
                     "error_message": overflow_text(16_000, provider_count)}))
    assert retry["retry_of"] == first["request_id"]
    assert retry["compaction"]["trigger_reason"] == "overflow" and retry["compaction"]["degraded"] is False
    assert retry["usage"]["effective_window_tokens"] == int(16_000 / 1.2)  # in our own token units
    assert retry["usage"]["window_source"] == "provider overflow error"
    assert retry["usage"]["used_tokens"] <= retry["usage"]["compression_threshold_tokens"]
    err(h.do({"type": "recover_overflow", "session_id": SID, "request_id": retry["request_id"],
              "error_message": overflow_text(16_000)}), "overflow_retry_exhausted")
    err(h.do({"type": "recover_overflow", "session_id": SID, "request_id": first["request_id"],
              "error_message": overflow_text(16_000)}), "overflow_retry_exhausted")
    h.close()


def test_overflow_with_a_failed_summary_trims_whole_turns_as_degraded(make_harness: MakeHarness) -> None:
    h = make_harness("t", adapters={"summarizer": RecordingSummarizer(fail=True)},
                context_compaction={"keep_recent_tokens": 3000})
    build(h)
    events = h.events()
    first = prepare(h)
    assert h.events() == events  # under 128k: nothing to do before sending
    retry = ok(h.do({"type": "recover_overflow", "session_id": SID, "request_id": first["request_id"],
                     "error_message": overflow_text(12_000)}))
    c = retry["compaction"]
    assert c["degraded"] is True and c["trigger_reason"] == "overflow"
    assert "Raw history unchanged" in c["report"]
    cp = checkpoints(h)[0]
    assert cp["provider_kind"] == "deterministic" and BREADCRUMB in cp["summary"]
    history = ok(h.do({"type": "get_history", "session_id": SID}))["messages"]
    boundary = next(m for m in history if m["seq"] == c["first_retained_seq"])
    assert boundary["role"] == "user" and not boundary["steering"]  # a whole-turn boundary
    assert ok(h.do({"type": "recall_timeline", "session_id": SID}))["entries"] == []
    assert retry["usage"]["used_tokens"] < first["usage"]["used_tokens"]
    h.close()


def test_the_turns_one_summary_attempt_is_shared_by_auto_and_overflow(make_harness: MakeHarness) -> None:
    spy = RecordingSummarizer(fail=True)
    h = make_harness("t", adapters={"summarizer": spy},
                models={"gpt-4o": {"token_limit": 30_000}}, context_compaction={"keep_recent_tokens": 3000})
    build(h)
    first = prepare(h)  # auto attempt fails; under the hard window, so the request goes out
    assert len(spy.requests) == 1 and first["compaction"] is None
    retry = ok(h.do({"type": "recover_overflow", "session_id": SID, "request_id": first["request_id"],
                     "error_message": overflow_text(20_000)}))
    assert len(spy.requests) == 1  # no second summary call in the same turn
    assert retry["compaction"]["degraded"] is True
    assert "this turn already used its one summary attempt" in retry["warnings"]
    h.close()


def test_overflow_after_tool_progress_is_not_recovered_from_history(make_harness: MakeHarness) -> None:
    h = make_harness("t")
    build(h, turns=2)
    request = prepare(h)
    events = h.events()
    err(h.do({"type": "recover_overflow", "session_id": SID, "request_id": request["request_id"],
              "error_message": overflow_text(4_000), "tool_progress": True}), "overflow_not_recoverable")
    assert h.events() == events
    err(h.do({"type": "recover_overflow", "session_id": SID, "request_id": "req_nope",
              "error_message": "x"}), "unknown_request")
    h.close()


@pytest.mark.parametrize("kind", ["record_usage", "recover_overflow"])
def test_turn_commands_validate_their_payloads(make_harness: MakeHarness, kind: str) -> None:
    h = make_harness("t")
    bad = {"type": kind, "session_id": SID, "request_id": "", "prompt_tokens": -1, "tool_progress": "yes"}
    err(h.do(bad), "invalid_command")
    h.close()
