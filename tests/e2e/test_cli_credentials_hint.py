""""A summary call without credentials says which key or
setting is missing" — for the model that made the call. With
``context_compaction.summary_model`` set, ``ctxc compact`` summarizes with that model,
so the hint must name its key and its ``models`` entry, not the session model's."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_inprocess import run_cli
from context_compaction import Settings, bootstrap

SUMMARY_MODEL = "anthropic/claude-3-5-haiku-20241022"


def test_the_missing_credentials_hint_names_the_summary_model_and_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    text = "word " * 400
    with bootstrap(Settings(database_url=url, summarizer="extractive")) as bus:
        assert bus.dispatch_json({"type": "start_session", "session_id": "S", "model": "gpt-4o"})["ok"]
        for i in range(12):
            assert bus.dispatch_json({"type": "append_messages", "session_id": "S", "messages": [
                {"role": "user", "content": f"q{i} {text}", "turn_id": f"t{i}"},
                {"role": "assistant", "content": f"a{i} {text}", "turn_id": f"t{i}"}]})["ok"]
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__SUMMARY_MODEL", SUMMARY_MODEL)
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__KEEP_RECENT_TOKENS", "1000")
    capsys.readouterr()
    assert run_cli(["--db", url, "compact", "S", "--summarizer", "llm"]) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: summary_failed: the summary call failed"), line
    assert f"no credentials for model {SUMMARY_MODEL!r}" in line and "ANTHROPIC_API_KEY" in line, line
    assert "OPENAI_API_KEY" not in line and "'gpt-4o'" not in line, line
