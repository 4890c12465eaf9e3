"""Issue 43's figures under attack: a retried record_usage, a model without prices, a
committed candidate's balance, the forecast of a session with 0 or 1 turns; on memory,
SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from context_compaction.domain.costs import Prices, Usage, price
from context_compaction.infrastructure.catalog import LiteLLMCatalog
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL, Harness, assistant, llm_settings, ok, user

BACKENDS = ("memory", "sqlite", "postgres")
SID = "k"
SUMMARY = "## Objective\n- Fix the flaky refund test.\n\n## Progress\n- Patched the retry loop."


def _session(make_harness: MakeHarness, model: str = "gpt-4o", **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 3000})
    h = make_harness("costr", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    return h


def _turns(h: Harness, n: int, start: int = 0) -> None:
    for t in coding_session(start + n, big_output_chars=3_000)[start:]:
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))


def test_a_retried_record_usage_is_counted_once(make_harness: MakeHarness) -> None:
    """A host that retries ``record_usage`` (its answer lost) records the same request
    again: the request was sent and billed once."""
    h = _session(make_harness)
    _turns(h, 2)
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    usage = {"type": "record_usage", "session_id": SID, "request_id": request["request_id"],
             "prompt_tokens": 10_000, "cached_tokens": 4_000, "completion_tokens": 500}
    first = ok(h.do(usage))
    assert ok(h.do(usage)) == first
    h.reopen()
    cost = ok(h.do({"type": "get_session_cost", "session_id": SID}))
    assert cost["requests"]["calls"] == 1 and cost["requests"]["prompt_tokens"] == 10_000
    assert cost["total"]["total_usd"] == pytest.approx(0.025)
    h.close()


def test_record_usage_keeps_working_when_the_log_cannot_be_written(make_harness: MakeHarness, backend) -> None:
    if backend == "memory":
        pytest.skip("needs SQL to break the store")
    h = _session(make_harness)
    _turns(h, 2)
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    app = h.inspect.app
    table = f"{app.name.lower()}_events" if h.is_postgres else "stored_events"
    h.fail_inserts(table)
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": request["request_id"], "prompt_tokens": 900}))
    h.allow_inserts(table)
    assert ok(h.do({"type": "get_session_cost", "session_id": SID}))["requests"]["calls"] == 0  # it did fail
    h.close()


def test_a_model_without_prices_is_never_shown_as_free(make_harness: MakeHarness) -> None:
    h = _session(make_harness, model="openai/our-private-model")
    _turns(h, 2)
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": request["request_id"],
             "prompt_tokens": 5_000, "completion_tokens": 50}))
    cost = ok(h.do({"type": "get_session_cost", "session_id": SID}))
    assert cost["total"]["priced"] is False and cost["per_model"][0]["prices_source"] == "unknown"
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert info["cost_usd"] is None  # not 0.0: unknown is not free
    line = next(t for t in info["text"].splitlines() if t.startswith("Cost"))
    assert "$0.0000" not in line and "openai/our-private-model" in line
    ok(h.do({"type": "compact", "session_id": SID}))
    (attempt,) = ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]
    net = attempt["net"]
    assert net["priced"] is False and net["net_usd"] is None and net["saved_usd"] is None
    h.close()


def test_a_committed_candidate_is_netted_with_its_summary_call(make_harness: MakeHarness,
                                                                provider: FakeProvider) -> None:
    """The dry run made (and paid) the summary: the committed compaction's balance
    includes it, and the session's summary total counts it once."""
    price_in, price_out = 1e-6, 4e-6
    settings = llm_settings(provider.base_url, token_limit=100_000, context_compaction={"keep_recent_tokens": 3_000})
    settings["models"][FAKE_MODEL].update(input_cost_per_token=price_in, output_cost_per_token=price_out)
    h = _session(make_harness, model=FAKE_MODEL, **settings)
    _turns(h, 6)
    provider.queue(Reply(text=SUMMARY, prompt_tokens=5_000))
    dry = ok(h.do({"type": "compact", "session_id": SID, "dry_run": True}))
    summary_usd = 5_000 * price_in + 20 * price_out
    assert dry["summary_cost_usd"] == pytest.approx(summary_usd)
    done = ok(h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": dry["candidate_id"]}))
    assert done["status"] == "compacted"
    committed, candidate = ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]
    assert (committed["outcome"], candidate["outcome"]) == ("compacted", "candidate")
    assert committed["net"]["summary_usd"] == pytest.approx(summary_usd)
    assert committed["net"]["spent_usd"] == pytest.approx(summary_usd + committed["net"]["invalidated_cache_usd"])
    cost = ok(h.do({"type": "get_session_cost", "session_id": SID}))
    assert cost["summaries"]["calls"] == 1 and cost["summaries"]["total_usd"] == pytest.approx(summary_usd)
    assert cost["compactions"][0]["net"]["summary_usd"] == pytest.approx(summary_usd)
    h.close()


def test_the_forecast_of_an_empty_and_a_one_turn_session(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    f = info["forecast"]
    assert f["turns_observed"] == 0 and f["tokens_per_turn"] is None and f["turns_to_threshold"] is None
    assert "unknown" in info["text"]
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [user("only a question")]}))
    f = ok(h.do({"type": "get_context_usage", "session_id": SID}))["forecast"]
    assert f["turns_observed"] == 0 and f["turns_to_threshold"] is None  # the turn is not complete
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [assistant("an answer " * 50)]}))
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    f = info["forecast"]
    assert f["turns_observed"] == 1 and f["tokens_per_turn"] > 0
    assert f["turns_to_threshold"] == -(-f["tokens_to_threshold"] // f["tokens_per_turn"])
    h.close()


def test_a_long_prompt_is_billed_at_the_models_long_prompt_tier() -> None:
    """gemini-2.5-pro in the bundled map: $1.25 / M input up to 200k prompt tokens, then
    $2.50 input, $0.25 cache read, $15 output for the whole request (what
    ``litellm.cost_per_token`` gives too: 0.5275 and 0.135)."""
    p = Prices.from_entry(LiteLLMCatalog().entry("gemini-2.5-pro"))
    long = price(Usage(prompt=250_000, cached=50_000, completion=1_000), p)
    assert long.input == pytest.approx(200_000 * 2.5e-6) and long.cached == pytest.approx(50_000 * 2.5e-7)
    assert long.completion == pytest.approx(1_000 * 15e-6) and long.total == pytest.approx(0.5275)
    short = price(Usage(prompt=100_000, completion=1_000), p)
    assert short.total == pytest.approx(100_000 * 1.25e-6 + 1_000 * 10e-6)  # 0.135
