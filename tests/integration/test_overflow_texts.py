"""Overflow recovery with the error texts providers really send (issue 12; spec §11.3, §17).

Every text below is a provider's own wording (OpenAI, gpt-5, OpenAI Responses, Anthropic,
Gemini, vLLM, Mistral, OpenRouter); litellm's ``ContextWindowExceededError`` (the real
class) wraps them. The recovery tests put the fixture's numbers into the same wording.
"""

from __future__ import annotations

from pathlib import Path

import litellm
import pytest

from context_compaction.domain.overflow import BREADCRUMB, parse_overflow
from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, RecordingSummarizer, assistant, err, ok, tool, user
from overflow_texts import REAL_TEXTS, wrapped

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)


# The same wordings with the fixture's window {n} and prompt size {p}.
TEMPLATES = [
    ("openai", "This model's maximum context length is {n} tokens. However, your messages resulted in {p} "
               "tokens. Please reduce the length of the messages."),
    ("gpt-5", "Input tokens exceed the configured limit of {n} tokens. Your messages resulted in {p} tokens. "
              "Please reduce the length of the messages."),
    ("anthropic", "prompt is too long: {p} tokens > {n} maximum"),
    ("anthropic-max-tokens", "input length and `max_tokens` exceed context limit: {p} + 8192 > {n}, decrease "
                             "input length or `max_tokens` and try again"),
    ("gemini", "The input token count ({p}) exceeds the maximum number of tokens allowed ({n})."),
    ("vllm", "This model's maximum context length is {n} tokens. However, you requested {p_plus} tokens ({p} in "
             "the messages, 10000 in the completion). Please reduce the length of the messages or completion."),
    ("mistral", "Prompt contains {p} tokens and 0 draft tokens, too large for model with {n} maximum context "
                "length"),
    ("openrouter", "This endpoint's maximum context length is {n} tokens. However, you requested about {p} "
                   "tokens ({p} of text input). Please reduce the length of either one, or use the "
                   "\"middle-out\" transform to compress your prompt automatically."),
    ("litellm-wrapped", "{litellm}"),
    ("openai-responses", "Your input exceeds the context window of this model. Please adjust your input and try "
                         "again."),
]

SID = "s"
SYSTEM = "You are a careful coding agent."


@pytest.mark.parametrize("name,text,window,prompt", REAL_TEXTS, ids=[t[0] for t in REAL_TEXTS])
@pytest.mark.parametrize("through_litellm", [False, True], ids=["raw", "litellm"])
def test_the_window_is_read_from_every_providers_text(name, text, window, prompt, through_litellm) -> None:
    message = wrapped(text) if through_litellm else text
    if through_litellm:
        assert message.startswith("litellm.ContextWindowExceededError")
    info = parse_overflow(message)
    assert (info.window, info.prompt_tokens) == (window, prompt)


def sqlite_harness(tmp_path: Path, **settings) -> Harness:
    return Harness(tmp_path / "o.db", **{"summarizer": "extractive", **settings})


def build(h: Harness, turns: int = 5) -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for t in coding_session(turns, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("Next: add a test.", turn_id="next")]}))


def prepare(h: Harness, **extra) -> dict:
    return ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": SYSTEM, **extra}))


def recover(h: Harness, request: dict, text: str, **extra) -> dict:
    return h.do({"type": "recover_overflow", "session_id": SID, "request_id": request["request_id"],
                 "error_message": text, **extra})


@pytest.mark.parametrize("name,template", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_recovery_fits_the_reported_window_and_retries_once_per_turn(tmp_path: Path, name, template) -> None:
    h = sqlite_harness(tmp_path, context_compaction={"keep_recent_tokens": 3_000})
    build(h)
    first = prepare(h)
    estimate = first["usage"]["estimated_tokens"]
    n, p = estimate // 2, estimate * 11 // 10  # the provider counts 10 % more than we do
    inner = TEMPLATES[0][1].format(n=n, p=p)
    text = template.format(n=n, p=p, p_plus=p + 10_000, litellm=wrapped(inner))
    retry = ok(recover(h, first, text))
    usage = retry["usage"]
    assert retry["retry_of"] == first["request_id"] and retry["compaction"]["status"] == "compacted"
    if name == "openai-responses":  # no number: the configured window stays, the request shrinks
        assert usage["effective_window_tokens"] == first["usage"]["effective_window_tokens"]
        assert usage["used_tokens"] < first["usage"]["used_tokens"]
    else:  # the provider's window, in our units
        assert usage["window_source"] == "provider overflow error"
        assert usage["effective_window_tokens"] == n * estimate // p
        assert usage["used_tokens"] <= usage["compression_threshold_tokens"] < usage["effective_window_tokens"]
    # One recovery per turn: neither the rebuilt request nor the same turn prepared
    # again gets a second one.
    err(recover(h, retry, text), "overflow_retry_exhausted")
    err(recover(h, prepare(h), text), "overflow_retry_exhausted")
    h.close()


def test_an_unreadable_window_still_recovers_when_the_summary_fails(tmp_path: Path) -> None:
    """Before: no window, no retry — ``overflow_retry_exhausted`` straight away."""
    h = sqlite_harness(tmp_path, adapters={"summarizer": RecordingSummarizer(fail=True)},
                       context_compaction={"keep_recent_tokens": 3_000})
    build(h)
    first = prepare(h)
    retry = ok(recover(h, first, wrapped("Your input exceeds the context window of this model. "
                                         "Please adjust your input and try again.")))
    assert retry["compaction"]["degraded"] is True
    assert retry["usage"]["used_tokens"] < first["usage"]["estimated_tokens"]
    assert retry["usage"]["effective_window_tokens"] == 128_000  # the configured window stays
    h.close()


def big_turn(words: int = 1_500) -> list[dict]:
    """One complete turn of two tool batches, too big to keep whole."""
    return [
        user("Audit both services.", turn_id="t1"),
        assistant(None, [("a1", "read", '{"path": "billing.py"}')], turn_id="t1"),
        tool("a1", "billing " * words),
        assistant(None, [("a2", "read", '{"path": "ledger.py"}')], turn_id="t1"),
        tool("a2", "ledger " * words),
        assistant("Both read; the ledger lock is the culprit.", turn_id="t1"),
    ]


def one_big_turn(h: Harness) -> None:
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": big_turn()}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("Now fix it.", turn_id="t2")]}))


def test_nothing_to_compact_automatically_leaves_the_turns_summary_attempt_to_the_overflow(tmp_path: Path) -> None:
    spy = RecordingSummarizer()
    h = sqlite_harness(tmp_path, adapters={"summarizer": spy}, models={"gpt-4o": {"token_limit": 4_800}})
    one_big_turn(h)
    first = prepare(h)
    assert first["usage"]["used_tokens"] > first["usage"]["compression_threshold_tokens"]
    assert "auto compaction found nothing to compact" in first["warnings"] and spy.requests == []
    text = TEMPLATES[0][1].format(n=3_000, p=first["usage"]["estimated_tokens"])
    retry = ok(recover(h, first, text))
    assert len(spy.requests) == 1  # the turn's one summary attempt, splitting the big turn
    assert retry["compaction"]["degraded"] is False and retry["compaction"]["trigger_reason"] == "overflow"
    assert "this turn already used its one summary attempt" not in retry["warnings"]
    h.close()


def test_a_degraded_report_says_exactly_what_it_cut(tmp_path: Path) -> None:
    h = sqlite_harness(tmp_path, adapters={"summarizer": RecordingSummarizer(fail=True)},
                       models={"gpt-4o": {"token_limit": 4_800}})
    one_big_turn(h)
    first = prepare(h)
    retry = ok(recover(h, first, TEMPLATES[0][1].format(n=3_000, p=first["usage"]["estimated_tokens"])))
    c = retry["compaction"]
    assert c["degraded"] is True and c["first_retained_seq"] in (4, 6)  # inside the one old turn
    dropped = c["first_retained_seq"] - 1
    assert f"Dropped the first {dropped} messages of the turn at seq 1 (message seq 1-{dropped})" in c["report"]
    assert "oldest turn" not in c["report"]  # no whole turn was dropped
    summary = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]["summary"]
    assert BREADCRUMB in summary and f"the first {dropped} messages of the turn at seq 1" in summary
    assert c["summary_source"]["omitted_turns"] == 0
    assert c["summary_source"]["omitted_messages_of_split_turn"] == dropped
    h.close()


def test_the_pre_send_hard_check_uses_the_measured_figure(tmp_path: Path) -> None:
    """Over the hard window by the provider's count (not by ours): degrade before sending."""
    h = sqlite_harness(tmp_path, adapters={"summarizer": RecordingSummarizer(fail=True)},
                       models={"gpt-4o": {"token_limit": 40_000}}, context_compaction={"keep_recent_tokens": 3_000})
    build(h, turns=3)
    first = prepare(h)
    assert first["usage"]["used_tokens"] < first["usage"]["compression_threshold_tokens"]
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": first["request_id"], "prompt_tokens": 41_000}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        assistant("Added.", turn_id="next"), user("And the changelog.", turn_id="after")]}))
    request = prepare(h)
    assert request["compaction"] is not None and request["compaction"]["degraded"] is True
    assert any("over the hard window" in w for w in request["warnings"])
    assert request["usage"]["estimated_tokens"] < 40_000  # our own count alone would have sent it
    h.close()


def test_a_request_prepared_mid_turn_is_never_recovered_formally(tmp_path: Path) -> None:
    h = sqlite_harness(tmp_path)
    build(h, turns=2)
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        assistant(None, [("n1", "run_tests", "{}")], turn_id="next"), tool("n1", "3 passed")]}))
    request = prepare(h)
    assert request["phase"] == "continuation"
    events = h.events()
    for progress in (False, True):
        err(recover(h, request, TEMPLATES[0][1].format(n=4_000, p=9_000), tool_progress=progress),
            "overflow_not_recoverable")
    assert h.events() == events  # no checkpoint, no learned window
    h.close()
