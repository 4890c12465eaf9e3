"""What compaction costs (issue 43): prices from litellm's offline cost map, the
session's cost, the attempts' cost fields, the /info cost line; on memory, SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from context_compaction.domain.costs import NetFigure, Prices, Usage, net_figure, price
from context_compaction.infrastructure.catalog import LiteLLMCatalog
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL, Harness, llm_settings, ok

BACKENDS = ("memory", "sqlite", "postgres")
SID = "k"
SUMMARY = "## Objective\n- Fix the flaky refund test.\n\n## Progress\n- Patched the retry loop."


def prices(model: str) -> Prices:
    return Prices.from_entry(LiteLLMCatalog().entry(model))


# --------------------------------------------------------------- pure prices
def test_gpt_4o_priced_as_computed_by_hand() -> None:
    # gpt-4o in the bundled map: $2.50 / M input, $1.25 / M cached input, $10 / M output.
    cost = price(Usage(prompt=10_000, cached=4_000, completion=500), prices("gpt-4o"))
    assert cost.input == pytest.approx(6_000 * 2.5e-6)  # 0.015
    assert cost.cached == pytest.approx(4_000 * 1.25e-6)  # 0.005
    assert cost.completion == pytest.approx(500 * 10e-6)  # 0.005
    assert cost.total == pytest.approx(0.025)


def test_claude_sonnet_4_5_priced_as_computed_by_hand() -> None:
    # $3 / M input, $0.30 / M cache read, $3.75 / M cache write, $15 / M output.
    cost = price(Usage(prompt=20_000, cached=12_000, created=3_000, completion=1_000),
                 prices("claude-sonnet-4-5"))
    assert cost.input == pytest.approx(5_000 * 3e-6)  # 0.015
    assert cost.cached == pytest.approx(12_000 * 0.3e-6)  # 0.0036
    assert cost.created == pytest.approx(3_000 * 3.75e-6)  # 0.01125
    assert cost.completion == pytest.approx(1_000 * 15e-6)  # 0.015
    assert cost.total == pytest.approx(0.04485)


def test_an_unknown_model_is_unpriced_not_free() -> None:
    cost = price(Usage(prompt=1_000, completion=10), prices("openai/no-such-model"))
    assert cost.total == 0 and cost.priced is False


def test_net_figure_weighs_requests_saved_against_summary_and_cache_rewrite() -> None:
    p = prices("claude-sonnet-4-5")
    summary = price(Usage(prompt=30_000, completion=2_000), p)  # 0.09 + 0.03
    figure = net_figure(tokens_before=100_000, tokens_after=20_000, requests=10, measured=True,
                        prices=p, summary=summary)
    assert isinstance(figure, NetFigure)
    assert figure.saved == pytest.approx(80_000 * 10 * 0.3e-6)  # 0.24: shed tokens at the read price
    assert figure.invalidated == pytest.approx(20_000 * (3.75e-6 - 0.3e-6))  # 0.069
    assert figure.net == pytest.approx(0.24 - 0.12 - 0.069)


def test_the_provider_usage_shape_is_read() -> None:
    usage = Usage.from_provider({"prompt_tokens": 900, "completion_tokens": 40,
                                 "prompt_tokens_details": {"cached_tokens": 500},
                                 "cache_creation_input_tokens": 100})
    assert usage == Usage(900, 500, 100, 40)
    assert Usage.from_provider(None) is None


# ------------------------------------------------------------ on the stores
def _session(make_harness: MakeHarness, model: str = "gpt-4o", **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 3000})
    h = make_harness("cost", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": model}))
    return h


def _turns(h: Harness, n: int, start: int = 0) -> None:
    for t in coding_session(start + n, big_output_chars=3_000)[start:]:
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))


def _request(h: Harness, **usage) -> None:
    request = ok(h.do({"type": "prepare_turn", "session_id": SID}))
    ok(h.do({"type": "record_usage", "session_id": SID, "request_id": request["request_id"], **usage}))


def test_session_cost_prices_every_recorded_usage(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    _turns(h, 2)
    _request(h, prompt_tokens=10_000, cached_tokens=4_000, completion_tokens=500)
    _request(h, prompt_tokens=2_000, completion_tokens=100)
    cost = ok(h.do({"type": "get_session_cost", "session_id": SID}))
    expected = 0.025 + 2_000 * 2.5e-6 + 100 * 10e-6
    assert cost["requests"]["calls"] == 2
    assert cost["requests"]["total_usd"] == pytest.approx(expected)
    assert cost["summaries"]["calls"] == 0
    assert cost["total"]["total_usd"] == pytest.approx(expected)
    assert [m["model"] for m in cost["per_model"]] == ["gpt-4o"]
    assert cost["per_model"][0]["prices_source"] == "litellm"
    # Durable: a restart reads the same figures from the log.
    h.reopen()
    assert ok(h.do({"type": "get_session_cost", "session_id": SID})) == cost
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    assert info["cost_usd"] == pytest.approx(expected)
    assert f"${expected:,.4f} over 2 requests" in info["text"]
    h.close()


def test_price_overrides_in_settings_win_over_the_map(make_harness: MakeHarness) -> None:
    h = _session(make_harness, models={"gpt-4o": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}})
    _turns(h, 1)
    _request(h, prompt_tokens=1_000, cached_tokens=400, completion_tokens=100)
    cost = ok(h.do({"type": "get_session_cost", "session_id": SID}))
    # The cache-read price is still the map's (only the given fields are overridden).
    assert cost["total"]["total_usd"] == pytest.approx(600 * 1e-6 + 400 * 1.25e-6 + 100 * 2e-6)
    assert cost["per_model"][0]["prices_source"] == "settings"
    h.close()


def test_unknown_session_cost_is_session_not_found(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    assert h.do({"type": "get_session_cost", "session_id": "nope"})["error"]["code"] == "session_not_found"
    h.close()


def test_summary_usage_is_priced_with_its_attempt_and_the_compaction_netted(
    make_harness: MakeHarness, provider: FakeProvider
) -> None:
    """Over real HTTP: the fake provider reports the summary call's usage (prompt 5,000,
    cached 1,000, completion 20); its model's prices come from Settings."""
    price_in, price_out, price_read = 1e-6, 4e-6, 0.5e-6
    settings = llm_settings(provider.base_url, token_limit=100_000,
                            context_compaction={"keep_recent_tokens": 3_000})
    settings["models"][FAKE_MODEL].update(input_cost_per_token=price_in, output_cost_per_token=price_out,
                                          cache_read_input_token_cost=price_read)
    h = _session(make_harness, model=FAKE_MODEL, **settings)
    _turns(h, 6)
    provider.queue(Reply(text=SUMMARY, prompt_tokens=5_000, cached_tokens=1_000))
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    summary_usd = 4_000 * price_in + 1_000 * price_read + 20 * price_out
    assert outcome["summary_usage"] == {"model": FAKE_MODEL, "prompt_tokens": 5_000, "cached_tokens": 1_000,
                                        "cache_creation_tokens": 0, "completion_tokens": 20}
    assert outcome["summary_cost_usd"] == pytest.approx(summary_usd)
    _turns(h, 1, start=6)
    for _ in range(3):
        _request(h, prompt_tokens=3_000, completion_tokens=10)
    attempts = ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]
    (attempt,) = attempts
    assert attempt["summary_cost_usd"] == pytest.approx(summary_usd)
    net = attempt["net"]
    shed = outcome["tokens_before"] - outcome["tokens_after"]
    assert net["tokens_shed"] == shed and net["requests"] == 3 and net["measured"] and net["open"]
    assert net["saved_usd"] == pytest.approx(shed * 3 * price_read)
    # No cache-write price: the rewrite is billed at the input price, over the read price.
    assert net["invalidated_cache_usd"] == pytest.approx(outcome["tokens_after"] * (price_in - price_read))
    assert net["net_usd"] == pytest.approx(net["saved_usd"] - summary_usd - net["invalidated_cache_usd"])
    cost = ok(h.do({"type": "get_session_cost", "session_id": SID}))
    assert cost["summaries"]["calls"] == 1
    assert cost["summaries"]["total_usd"] == pytest.approx(summary_usd)
    assert cost["requests"]["total_usd"] == pytest.approx(3 * (3_000 * price_in + 10 * price_out))
    assert cost["compactions"][0]["net"] == net
    h.close()
