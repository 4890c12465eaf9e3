"""The LLM summary path through litellm over real HTTP to a local fake provider (spec §10)."""

from __future__ import annotations

import re

from pathlib import Path

import pytest

from context_compaction.domain.summary import HEADINGS
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider, Reply
from backends import MakeHarness
from helpers import FAKE_MODEL, Harness, err, llm_settings, ok

#: Handler unit tests: on the in-memory store (ADR 0045); tests of storage among them
#: are marked ``backends("sqlite", "postgres")``.
BACKENDS = ("memory",)

SID = "s"
SUMMARY = "\n\n".join(f"## {h}\nNone." for h in HEADINGS).replace(
    "## Objective\nNone.", "## Objective\nFix the flaky refund test in /srv/payments-api."
)


def make(make_harness: MakeHarness, provider: FakeProvider, **extra) -> Harness:
    h = make_harness("llm", **llm_settings(provider.base_url, **extra),
                context_compaction={"keep_recent_tokens": 2000})
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    for t in coding_session(8, big_output_chars=2_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    return h


def test_one_completion_call_per_compaction_with_the_contracted_request(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=SUMMARY))
    h = make(make_harness, provider)
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["status"] == "compacted" and outcome["provider_kind"] == "llm:openai"
    assert provider.calls == 1
    body = provider.requests[0].body
    assert provider.requests[0].path.endswith("/chat/completions")
    assert body["model"] == "fake-model"
    assert "tools" not in body and "tool_choice" not in body
    assert body["temperature"] <= 0.2
    assert body["max_tokens"] == 2048
    system, material = body["messages"]
    assert system["role"] == "system" and material["role"] == "user"
    for heading in HEADINGS:
        assert f"## {heading}" in system["content"]
    for rule in ("corrections override", "verbatim", "Do not output tool calls", "not instructions"):
        assert rule.lower() in (system["content"] + material["content"]).lower()
    assert "unknown_not_persisted_separately" in material["content"]
    assert "base64 omitted" in material["content"]  # screenshots arrive as type and size
    stored = ok(h.do({"type": "list_checkpoints", "session_id": SID}))["checkpoints"][0]
    # The model's text is stored as given; the ledger (ADR 0031) only adds the must-keep
    # items it left out, each under its heading with its seq.
    restored = [ln for ln in stored["summary"].splitlines() if ln not in SUMMARY.splitlines()]
    assert stored["ledger"]["restored"] > 0 and restored
    # (and the heading of the Fact Checklist section they open, issue 44)
    assert all(re.search(r"\(seq \d+\)$", ln) for ln in restored if ln.strip() and not ln.startswith("## ")), restored
    assert "Fix the flaky refund test in /srv/payments-api." in stored["summary"]
    h.close()


def test_the_second_compaction_sends_the_previous_summary_and_only_new_messages(make_harness: MakeHarness, provider) -> None:
    provider.queue(Reply(text=SUMMARY), Reply(text=SUMMARY.replace("Fix", "Fixed")))
    h = make(make_harness, provider)
    first = ok(h.do({"type": "compact", "session_id": SID}))
    for t in coding_session(14, big_output_chars=2_000)[8:]:
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    second = ok(h.do({"type": "compact", "session_id": SID}))
    assert provider.calls == 2
    material = provider.requests[1].body["messages"][1]["content"]
    assert "<previous_summary>" in material and "Fix the flaky refund test" in material
    seqs = [int(line.split()[1].rstrip("]")) for line in material.splitlines() if line.startswith("[seq ")]
    assert min(seqs) == first["first_retained_seq"]
    assert max(seqs) == second["first_retained_seq"] - 1
    h.close()


@pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's serializer on the garbage reply
@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500),
        Reply(text=""),
        Reply(text=None),
        Reply(raw="<html>not json</html>"),
        Reply(text="## Objective\ncut", finish_reason="length"),
        Reply(text="   \n  "),
        Reply(delay=2.5),
    ],
    ids=["http-500", "empty", "null-content", "garbage", "truncated", "blank", "timeout"],
)
def test_a_failing_summary_call_is_summary_failed_and_changes_nothing(make_harness: MakeHarness, provider, reply) -> None:
    h = make(make_harness, provider, timeout=1.0)
    live = ok(h.do({"type": "get_projection", "session_id": SID}))
    events = h.events()
    provider.queue(reply)
    e = err(h.do({"type": "compact", "session_id": SID}), "summary_failed")
    assert e["message"]
    assert provider.calls == 1  # no hidden retries, no second model call
    assert h.events() == events
    assert ok(h.do({"type": "get_projection", "session_id": SID})) == live
    provider.queue(Reply(text=SUMMARY))
    # The retry succeeds; it gets a 10 s timeout, so a loaded machine cannot make it time out.
    retry = h.new_bus(summary_timeout_seconds=10.0)
    assert ok(retry.dispatch_json({"type": "compact", "session_id": SID}))["status"] == "compacted"
    h.close()


def test_a_model_counted_with_a_safety_factor_is_asked_for_its_own_tokens(make_harness: MakeHarness, provider) -> None:
    # Before: max_tokens was the output reserve in the session's units (cl100k x 1.25 for
    # mistral/), so a summary the provider kept within it counted 1.25 times that and was
    # refused ("the summary has 515 tokens, over its 500 limit").
    from context_compaction.infrastructure.tokens import offline_encoding

    cl100k = offline_encoding("cl100k_base")

    def obedient(request):  # type: ignore[no-untyped-def]
        words = " ".join(f"item{i}=v{i * 7}" for i in range(2_000))
        body = cl100k.decode(cl100k.encode("## Objective\n- keep going\n## Exact Facts\n- " + words)
                             [: request.body["max_tokens"]])
        return Reply(text=body)

    model = "mistral/fake-model"
    h = make_harness("llm", summarizer="llm", summary_timeout_seconds=10.0,
                     models={model: {"api_base": provider.base_url, "api_key": "test-key", "token_limit": 2_000}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    for k in range(12):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            {"role": "user", "content": f"Question {k}: " + "please check the logs " * 12},
            {"role": "assistant", "content": f"Answer {k}: " + "all fine " * 12}]}))
    provider.queue(obedient)
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["status"] == "compacted", outcome
    asked = provider.requests[0].body["max_tokens"]
    assert asked <= 500 / 1.25  # (the output reserve of a 2,000-token window, in mistral's tokens)
    h.close()
