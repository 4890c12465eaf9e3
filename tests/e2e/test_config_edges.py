"""Settings that explain themselves (issue 15, ADR 0029): a misspelled ``CTXC_*``
variable is reported, a bad value names its setting and variable and why without
echoing it, and ``Settings(...)`` keeps its field typing for type checkers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from pydantic import ValidationError

from context_compaction.application.contracts.settings import Settings, UnknownSettingWarning, problems
from helpers import mypy_package_root


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("CTXC_") and not key.upper().startswith("CTXC_TEST_"):
            monkeypatch.delenv(key)


def test_a_misspelled_variable_is_a_warning_with_the_closest_setting(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from context_compaction.application.contracts import settings as module

    monkeypatch.setattr(module, "_reported", set())  # logged once per process: this test's process
    monkeypatch.setenv("CTXC_SUMARIZER", "extractive")
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTON__RESERVE_TOKENS", "1")
    with caplog.at_level(logging.WARNING, logger="context_compaction.settings"), \
            pytest.warns(UnknownSettingWarning) as record:
        settings = Settings()
    texts = [str(w.message) for w in record]
    assert any("CTXC_SUMARIZER names no setting" in t and "did you mean CTXC_SUMMARIZER?" in t for t in texts)
    assert any("CTXC_CONTEXT_COMPACTON__RESERVE_TOKENS" in t and "CTXC_CONTEXT_COMPACTION" in t for t in texts)
    assert settings.summarizer == "llm"  # ignored, as the warning says
    logged = [r for r in caplog.records if r.name == "context_compaction.settings"]
    assert {getattr(r, "variable", None) for r in logged} >= {"CTXC_SUMARIZER"}
    assert all("extractive" not in r.getMessage() for r in logged)  # never the value
    with caplog.at_level(logging.WARNING, logger="context_compaction.settings"), \
            pytest.warns(UnknownSettingWarning):
        Settings()  # warned again, logged once per process
    assert len([r for r in caplog.records if r.name == "context_compaction.settings"]) == len(logged)


def test_a_misspelled_nested_part_is_reported_and_the_rest_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__RESERVE_TOKEN", "5")
    monkeypatch.setenv("CTXC_MODELS__GPT-4O__TOKEN_LIMT", "7")
    monkeypatch.setenv("CTXC_MODELS__GPT-4O__TOKEN_LIMIT", "9000")
    monkeypatch.setenv("CTXC_LOG_JSON__LEVEL", "1")
    with pytest.warns(UnknownSettingWarning) as record:
        settings = Settings()
    texts = sorted(str(w.message) for w in record)
    assert any("CTXC_CONTEXT_COMPACTION__RESERVE_TOKEN names no setting" in t
               and "did you mean CTXC_CONTEXT_COMPACTION__RESERVE_TOKENS?" in t for t in texts)
    assert any("did you mean CTXC_MODELS__GPT-4O__TOKEN_LIMIT?" in t for t in texts)
    assert any("CTXC_LOG_JSON takes no nested variables" in t for t in texts)
    assert settings.context_compaction.reserve_tokens == 16384 and settings.models["gpt-4o"].token_limit == 9000


def test_a_warning_filter_turns_a_misspelling_into_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_DATABSE_URL", "sqlite:///x.db")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownSettingWarning)
        with pytest.raises(UnknownSettingWarning, match="did you mean CTXC_DATABASE_URL"):
            Settings()


def test_our_other_variables_are_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_HTTP_TOKEN", "a-long-enough-token")
    monkeypatch.setenv("CTXC_TEST_ANYTHING", "1")
    monkeypatch.setenv("CTXC_MODELS__GPT-4O__TOKEN_LIMIT", "5000")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Settings().models["gpt-4o"].token_limit == 5000


def test_a_bad_value_names_the_setting_the_variable_and_why_and_never_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXC_SNAPSHOT_INTERVAL", "-1")
    monkeypatch.setenv("CTXC_MODELS", '{"gpt-4o": {"token_limit": "sk-secret-999"}}')
    with pytest.raises(ValidationError) as info:
        Settings(summary_timeout_seconds=0)
    lines = problems(info.value)
    assert "snapshot_interval (from CTXC_SNAPSHOT_INTERVAL): Input should be greater than or equal to 0" in lines
    assert "summary_timeout_seconds: Input should be greater than 0" in lines  # given in code
    assert any(line.startswith("models.gpt-4o.token_limit (from CTXC_MODELS): ") for line in lines)
    assert "sk-secret-999" not in str(info.value) and "sk-secret-999" not in "\n".join(lines)
    assert "snapshot_interval" in str(info.value)  # pydantic's own text names the setting too


def test_a_misspelled_key_in_a_file_gets_the_closest_setting(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"summariser": "extractive", "context_compaction": {"reserve_tokenz": 1}}')
    with pytest.raises(ValidationError) as info:
        Settings.from_file(path)
    assert sorted(problems(info.value)) == [
        "context_compaction.reserve_tokenz: no such setting; did you mean context_compaction.reserve_tokens?",
        "summariser: no such setting; did you mean summarizer?",
    ]


def test_a_settings_file_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{nope")
    with pytest.raises(ValueError, match="s.json: settings file is not valid JSON"):
        Settings.from_file(path)




@pytest.mark.slow
def test_a_misspelled_keyword_is_a_type_error(tmp_path: Path) -> None:
    script = tmp_path / "user_settings.py"
    script.write_text(
        "from context_compaction import Settings\n"
        "ok = Settings(database_url='sqlite:///x.db', summarizer='extractive')\n"
        "bad = Settings(databse_url='sqlite:///x.db')\n"
        "wrong = Settings(snapshot_interval='often')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / ".mypy_cache"), str(script)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MYPYPATH": mypy_package_root(tmp_path / "src")})
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert any(":3:" in e and 'Unexpected keyword argument "databse_url"' in e for e in errors), proc.stdout
    assert any(":4:" in e and "snapshot_interval" in e for e in errors), proc.stdout
    assert not [e for e in errors if ":2:" in e], proc.stdout
