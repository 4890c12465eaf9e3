"""Settings from code, `CTXC_*` environment variables and JSON files (README "Configuration")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from context_compaction.application.contracts.settings import Settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("CTXC_"):
            monkeypatch.delenv(key)


def test_defaults_without_environment() -> None:
    s = Settings()
    assert s.database_url == "sqlite:///ctxc.db"
    assert s.context_compaction.reserve_tokens == 16384
    assert s.models == {} and s.log_json is False


def test_nested_fields_use_double_underscores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__RESERVE_TOKENS", "8192")
    monkeypatch.setenv("CTXC_LIMITS__MAX_BATCH_MESSAGES", "7")
    s = Settings()
    assert s.context_compaction.reserve_tokens == 8192
    assert s.context_compaction.keep_recent_tokens == 20000  # untouched siblings keep defaults
    assert s.limits.max_batch_messages == 7


def test_maps_take_json_and_merge_with_nested_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_MODELS", '{"gpt-4o": {"token_limit": 64000}}')
    monkeypatch.setenv("CTXC_POSTGRES", '{"pool_size": 3}')
    monkeypatch.setenv("CTXC_POSTGRES__MAX_OVERFLOW", "2")
    s = Settings()
    assert s.models["gpt-4o"].token_limit == 64000
    assert (s.postgres.pool_size, s.postgres.max_overflow) == (3, 2)


def test_names_are_case_insensitive_and_scalars_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ctxc_log_json", "true")
    monkeypatch.setenv("CTXC_Summarizer", "extractive")
    monkeypatch.setenv("CTXC_SUMMARY_TIMEOUT_SECONDS", "2.5")
    s = Settings()
    assert s.log_json is True and s.summarizer == "extractive" and s.summary_timeout_seconds == 2.5


def test_api_keys_from_the_environment_stay_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_MODELS", '{"gpt-4o": {"api_key": "sk-test-123"}}')
    s = Settings()
    key = s.models["gpt-4o"].api_key
    assert key is not None and key.get_secret_value() == "sk-test-123"
    assert "sk-test-123" not in repr(s)


def test_code_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_DATABASE_URL", "sqlite:///from-env.db")
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__ENABLED", "false")
    s = Settings(database_url="sqlite:///from-code.db")
    assert s.database_url == "sqlite:///from-code.db"
    assert s.context_compaction.enabled is False


def test_other_ctxc_variables_are_not_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # CTXC_HTTP_TOKEN belongs to `ctxc serve`, CTXC_TEST_* to the test suite.
    monkeypatch.setenv("CTXC_HTTP_TOKEN", "t")
    monkeypatch.setenv("CTXC_TEST_POSTGRES_URL", "postgresql://x")
    assert Settings().database_url == "sqlite:///ctxc.db"


def test_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_SNAPSHOT_INTERVAL", "-1")
    with pytest.raises(ValidationError):
        Settings()
    monkeypatch.setenv("CTXC_SNAPSHOT_INTERVAL", "10")
    with pytest.raises(ValidationError):
        Settings(not_a_setting=1)


def test_from_file_with_overrides(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"summarizer": "extractive", "context_compaction": {"reserve_tokens": 1}}))
    s = Settings.from_file(path, log_json=True)
    assert s.summarizer == "extractive" and s.context_compaction.reserve_tokens == 1 and s.log_json


def test_nested_variables_reach_into_maps_and_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_MODELS__GPT-4O__TOKEN_LIMIT", "5000")
    monkeypatch.setenv("CTXC_POSTGRES__SCHEMA", "tenant_a")
    s = Settings()
    assert s.models["gpt-4o"].token_limit == 5000
    assert s.postgres.schema_name == "tenant_a"


def test_a_variable_that_must_hold_json_is_refused_without_echoing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXC_MODELS", "sk-secret-not-json")
    with pytest.raises(ValueError) as info:
        Settings()
    assert "CTXC_MODELS" in str(info.value) and "sk-secret" not in str(info.value)


def test_a_summarizer_is_any_registered_name_and_an_unknown_one_is_refused_at_bootstrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Adding a summarizer is its module and one registry entry (docs/architecture.md):
    settings take the new name without a change of their own."""
    from context_compaction.domain.errors import ContextCompactionError
    from context_compaction.infrastructure import summarizers
    from context_compaction.infrastructure.bootstrap import bootstrap
    from context_compaction.infrastructure.summarizers import ExtractiveSummarizer

    class Shouting(ExtractiveSummarizer):
        pass

    monkeypatch.setitem(summarizers.SUMMARIZERS, "shouting", lambda settings: Shouting())
    bus = bootstrap(Settings(database_url="memory://", summarizer="shouting"))
    try:
        assert isinstance(bus.services.summarizer, Shouting)
    finally:
        bus.close()
    bad = [
        {"summarizer": "shoutng"},
        {"summarizer": "native", "native_compaction": {"readable": "native"}},
        {"summarizer": "native", "native_compaction": {"readable": "nope"}},
    ]
    for fields in bad:
        with pytest.raises(ContextCompactionError) as caught:
            bootstrap(Settings(database_url="memory://", **fields)).close()
        assert caught.value.code == "invalid_command", fields
    with pytest.raises(ValidationError):
        Settings(summarizer="")
