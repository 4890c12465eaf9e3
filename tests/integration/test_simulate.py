"""Policy replay (issue 43): ``simulate`` reproduces the recorded policy's compactions on
the demo session exactly, its figures for every policy are deterministic, the peers'
defaults are rows; on memory, SQLite and PostgreSQL; and ``ctxc simulate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backends import MakeHarness
from context_compaction.application.contracts.settings import Settings
from context_compaction.infrastructure.bootstrap import bootstrap
from context_compaction.infrastructure.demo import run as demo
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.simulate import Policy, simulate
from helpers import ok

BACKENDS = ("memory", "sqlite", "postgres")
PEERS = ["langchain-summarization", "claude-code", "codex", "no-auto-compaction"]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    workdir = tmp_path_factory.mktemp("sim") / "demo"
    facts = demo.run_demo(workdir, out=lambda *_: None)
    return Path(facts["db"]), facts


def _demo_bus(db: Path):
    return bootstrap(Settings(
        database_url=f"sqlite:///{db}", summarizer="extractive",
        models={demo.MODEL: {"token_limit": demo.CONFIGURED_WINDOW}},
        context_compaction={"reserve_tokens": 8_192, "keep_recent_tokens": 6_000},
    ))


@pytest.mark.backends("sqlite")
def test_the_demo_sessions_own_policy_is_reproduced_exactly(demo_db, backend) -> None:
    db, facts = demo_db
    with _demo_bus(db) as bus:
        first = simulate(bus, demo.SID, system_prompt=demo.SYSTEM_PROMPT, tools=demo.TOOLS)
        again = simulate(bus, demo.SID, system_prompt=demo.SYSTEM_PROMPT, tools=demo.TOOLS)
    recorded = first.rows[0]
    assert recorded.policy == "recorded"
    assert first.recorded_compactions == facts["auto_compactions"] + facts["overflow_recoveries"] == 4
    assert recorded.compactions == first.recorded_compactions
    assert recorded.compactions_by_reason == first.recorded_by_reason == {"auto": 3, "overflow": 1}
    # Extractive recordings are remade, not reused (the replay's summarizer is the same).
    assert recorded.recorded_summaries == 0 and recorded.summary_calls == 4
    assert [r.policy for r in first.rows] == ["recorded", *PEERS]
    assert all(r.tokens_sent > 0 and 0 <= r.cacheable_share <= 1 and r.cost_usd > 0 for r in first.rows)
    # Deterministic: every figure of every policy, twice.
    assert [r.model_dump() for r in again.rows] == [r.model_dump() for r in first.rows]
    assert "codex" in first.text and "(context_window * 9) / 10" in first.text


def _recorded_session(make_harness: MakeHarness, **extra):
    """A session recorded as the replay drives one: a request at each turn's start."""
    h = make_harness("rec", context_compaction={"keep_recent_tokens": 3_000},
                     models={"gpt-4o": {"token_limit": 20_000}}, **extra)
    ok(h.do({"type": "start_session", "session_id": "r", "model": "gpt-4o"}))
    for turn in coding_session(10, big_output_chars=3_000):
        messages = turn.messages()
        first = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        ok(h.do({"type": "append_messages", "session_id": "r", "messages": messages[:first]}))
        ok(h.do({"type": "prepare_turn", "session_id": "r"}))
        ok(h.do({"type": "append_messages", "session_id": "r", "messages": messages[first:]}))
    return h


def test_simulate_on_every_store_matches_the_recorded_count(make_harness: MakeHarness, tmp_path: Path) -> None:
    h = _recorded_session(make_harness)
    attempts = ok(h.do({"type": "list_compaction_attempts", "session_id": "r"}))["attempts"]
    committed = sum(1 for a in attempts if a["outcome"] == "compacted")
    assert committed >= 2
    lazy = Policy("lazy", "test", {"context_compaction": {"reserve_tokens": 2_000}})
    result = simulate(h.bus, "r", [lazy], peers=False)
    recorded, other = result.rows
    assert result.recorded_compactions == committed == recorded.compactions
    assert other.policy == "lazy" and other.settings["reserve_tokens"] == 2_000
    assert other.compactions <= recorded.compactions  # a later trigger never compacts more often here
    assert ok(h.do({"type": "list_compaction_attempts", "session_id": "r"}))["attempts"] == attempts  # untouched
    h.close()


@pytest.mark.backends("sqlite")
def test_ctxc_simulate_prints_the_table(demo_db, backend, tmp_path: Path, capsys) -> None:
    from cli_inprocess import run_cli as main  # (leaves logging as it found it)

    db, _ = demo_db
    config = tmp_path / "demo.json"
    config.write_text(json.dumps({"models": {demo.MODEL: {"token_limit": demo.CONFIGURED_WINDOW}},
                                  "context_compaction": {"reserve_tokens": 8_192, "keep_recent_tokens": 6_000}}))
    eager = tmp_path / "eager.json"
    eager.write_text(json.dumps({"context_compaction": {"reserve_tokens": 30_000}}))
    prompt = tmp_path / "system.txt"
    prompt.write_text(demo.SYSTEM_PROMPT)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(demo.TOOLS))
    code = main(["simulate", "--session", demo.SID, "--db", str(db), "--config", str(config),
                 "--settings", str(eager), "--system-prompt-file", str(prompt), "--tools-file", str(tools),
                 "--json", "--summarizer", "extractive"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["policy"]: r for r in out["rows"]}
    assert rows["recorded"]["compactions"] == out["recorded_compactions"] == 4
    assert set(rows) == {"recorded", "eager", *PEERS}
    assert rows["eager"]["settings"]["reserve_tokens"] == 30_000


@pytest.mark.backends("memory")
def test_recorded_llm_summaries_are_reused_where_the_cut_matches(make_harness: MakeHarness, backend) -> None:
    from helpers import RecordingSummarizer

    text = "## Objective\n- Fix the flaky refund test.\n\n## Progress\n- Patched the retry loop."
    h = _recorded_session(make_harness, adapters={"summarizer": RecordingSummarizer(text=text)})
    checkpoints = ok(h.do({"type": "list_checkpoints", "session_id": "r"}))["checkpoints"]
    assert checkpoints and {cp["provider_kind"] for cp in checkpoints} == {"fake"}
    result = simulate(h.bus, "r", peers=False)
    (recorded,) = result.rows
    assert recorded.compactions == result.recorded_compactions == len(checkpoints)
    assert recorded.recorded_summaries == recorded.summary_calls == len(checkpoints)
    h.close()
