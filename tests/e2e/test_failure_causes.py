"""A failed summary call says why, in every interface (issue 35, finding 3): the
exception's type, the provider's status and message with secrets redacted, and the
credentials hint the CLI gave alone before. Over real HTTP to the local fake provider,
through litellm; and litellm's own exception objects for the redaction."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from cli_inprocess import run_cli
from context_compaction import CompactionConfig, ModelConfig, Settings, bootstrap, commands
from context_compaction.domain.errors import StorageError, SummaryFailed
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL
from http_server import Server

KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c"
TOKEN = "causes-token-0123456789"
TEXT = "word " * 400


def _unauthorized() -> Reply:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. Header was Authorization: Bearer {KEY}",
                      "type": "invalid_request_error", "code": "invalid_api_key"}}
    return Reply(status=401, raw=json.dumps(body))


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _settings(tmp_path: Path, provider: FakeProvider, *, key: str | None = KEY) -> Settings:
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}", summarizer="llm", summary_timeout_seconds=10,
        models={FAKE_MODEL: ModelConfig(token_limit=32_000, api_base=provider.base_url,
                                        api_key=SecretStr(key) if key else None)},
        context_compaction=CompactionConfig(keep_recent_tokens=1000),
    )


def _session(bus: object) -> None:
    assert bus.dispatch_json({"type": "start_session", "session_id": "S", "model": FAKE_MODEL})["ok"]  # type: ignore[attr-defined]
    for i in range(12):
        assert bus.dispatch_json({"type": "append_messages", "session_id": "S", "messages": [  # type: ignore[attr-defined]
            {"role": "user", "content": f"q{i} {TEXT}", "turn_id": f"t{i}"},
            {"role": "assistant", "content": f"a{i} {TEXT}", "turn_id": f"t{i}"}]})["ok"]


def _assert_cause(details: dict[str, object]) -> None:
    assert details["error_class"] == "AuthenticationError", details
    assert details["status_code"] == 401, details
    assert "Incorrect API key provided" in str(details["cause"]), details
    assert KEY not in json.dumps(details), details
    assert "Bearer [redacted]" in str(details["cause"]), details
    assert "summarize offline" in str(details["hint"]), details


@pytest.fixture
def bus(tmp_path: Path, provider: FakeProvider) -> Iterator[object]:
    with bootstrap(_settings(tmp_path, provider)) as bus:
        _session(bus)
        yield bus


def test_python_callers_get_the_cause_in_details(bus: object, provider: FakeProvider) -> None:
    provider.queue(_unauthorized())
    with pytest.raises(SummaryFailed) as caught:
        bus.dispatch(commands.Compact(session_id="S"))  # type: ignore[attr-defined]
    _assert_cause(caught.value.details)
    assert "AuthenticationError (HTTP 401)" in caught.value.message and KEY not in caught.value.message


def test_json_callers_get_the_cause_in_details(bus: object, provider: FakeProvider) -> None:
    provider.queue(_unauthorized())
    reply = bus.dispatch_json({"type": "compact", "session_id": "S"})  # type: ignore[attr-defined]
    assert reply["ok"] is False and reply["error"]["code"] == "summary_failed"
    _assert_cause(reply["error"]["details"])


def test_http_callers_get_the_cause_in_details(bus: object, provider: FakeProvider) -> None:
    from context_compaction.infrastructure.http import create_app

    provider.queue(_unauthorized())
    with Server(create_app(bus, token=TOKEN, max_body_bytes=64_000)) as server:
        r = httpx.post(f"{server.url}/v1/commands", json={"type": "compact", "session_id": "S"},
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert r.status_code == 422 and r.json()["error"]["code"] == "summary_failed"
    _assert_cause(r.json()["error"]["details"])


def test_a_missing_key_names_the_variable_in_every_interface(
    tmp_path: Path, provider: FakeProvider, capsys: pytest.CaptureFixture[str],
) -> None:
    settings = _settings(tmp_path, provider, key=None)
    with bootstrap(settings) as bus:
        _session(bus)
        reply = bus.dispatch_json({"type": "compact", "session_id": "S"})
    details = reply["error"]["details"]
    assert "OPENAI_API_KEY" in details["hint"] and details["error_class"], details
    assert "OPENAI_API_KEY" in reply["error"]["message"]
    # the dispatch subcommand answers the same envelope, hint included
    config = tmp_path / "s.json"
    config.write_text(json.dumps({"models": {FAKE_MODEL: {"token_limit": 32000, "api_base": provider.base_url}},
                                  "context_compaction": {"keep_recent_tokens": 1000}, "summarizer": "llm"}))
    import io
    import sys

    stdin = io.StringIO(json.dumps({"type": "compact", "session_id": "S"}) + "\n")
    saved, sys.stdin = sys.stdin, stdin
    try:
        capsys.readouterr()
        assert run_cli(["--config", str(config), "--db", settings.database_url, "dispatch"]) == 1
    finally:
        sys.stdin = saved
    envelope = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "OPENAI_API_KEY" in envelope["error"]["details"]["hint"], envelope


def test_litellm_exception_objects_are_redacted() -> None:
    from context_compaction.infrastructure.failure_causes import provider_cause
    from context_compaction.infrastructure.summarizers import import_litellm

    litellm = import_litellm()
    os.environ.pop("SOME_SERVICE_TOKEN", None)
    cases = [
        litellm.AuthenticationError(message=f"invalid x-api-key: {KEY}", llm_provider="anthropic", model="m"),
        litellm.RateLimitError(message="slow down; key=abcd1234efgh5678", llm_provider="openai", model="m"),
        litellm.APIConnectionError(message="cannot reach https://user:hunter2pass@proxy.local/v1",
                                   llm_provider="openai", model="m"),
        litellm.InternalServerError(message="upstream said Bearer eyJhbGciOi.payload.sig",
                                    llm_provider="openai", model="m"),
    ]
    seen = [provider_cause(exc) for exc in cases]
    assert [d["error_class"] for d in seen] == [
        "AuthenticationError", "RateLimitError", "APIConnectionError", "InternalServerError"]
    assert seen[0]["status_code"] == 401 and seen[0]["provider"] == "anthropic"
    assert seen[1]["status_code"] == 429
    text = json.dumps(seen)
    for secret in (KEY, "abcd1234efgh5678", "hunter2pass", "eyJhbGciOi.payload.sig"):
        assert secret not in text, (secret, text)
    assert "[redacted]" in seen[2]["cause"] and "proxy.local" in seen[2]["cause"]


def test_a_storage_error_carries_its_cause(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as caught:
        bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}"))
    assert caught.value.details["cause"], caught.value.details
    assert StorageError("the read model lost a row").details == {"cause": "the read model lost a row"}
    assert SummaryFailed("the summary is empty").details["cause"] == "the summary is empty"


@pytest.mark.parametrize("text, secret", [
    ("Authorization: Token 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),  # a scheme other than Bearer
    ("GET /v1?authorization=Bearer%209f8e7d6c5b4a3928", "9f8e7d6c5b4a3928"),  # URL-encoded
    ("Incorrect API key provided: 0123456789abcdef0123456789abcdef. You can find", "0123456789abcdef0123456789abcdef"),
    ("invalid key xai-Ab12Cd34Ef56Gh78Ij90Kl12", "Ab12Cd34Ef56Gh78Ij90Kl12"),  # xAI
    ("invalid gsk_Ab12Cd34Ef56Gh78Ij90Kl12", "Ab12Cd34Ef56Gh78Ij90Kl12"),  # Groq
    ("invalid hf_Ab12Cd34Ef56Gh78Ij90Kl12", "Ab12Cd34Ef56Gh78Ij90Kl12"),  # Hugging Face
    ("proxy said password%3Dhunter2hunter2", "hunter2hunter2"),
])
def test_secrets_in_other_shapes_are_redacted_without_knowing_them(text: str, secret: str) -> None:
    """Review of issue 35: forms the first patterns let through (no configured key to
    remove by value)."""
    from context_compaction.infrastructure.failure_causes import provider_cause

    cause = provider_cause(RuntimeError(text))["cause"]
    assert secret not in cause and "[redacted]" in cause, cause


def test_a_key_in_any_key_variable_is_removed_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """``AWS_SECRET_ACCESS_KEY`` (no ``API_KEY`` suffix) as litellm's Bedrock reads it."""
    from context_compaction.infrastructure.failure_causes import provider_cause

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCY")
    cause = provider_cause(RuntimeError("signature mismatch for wJalrXUtnFEMIK7MDENGbPxRfiCY"))["cause"]
    assert "wJalrXUtnFEMIK7MDENGbPxRfiCY" not in cause, cause


def test_the_cli_text_output_shows_the_cause(
    tmp_path: Path, provider: FakeProvider, capsys: pytest.CaptureFixture[str],
) -> None:
    """Review of issue 35: ``ctxc compact`` without ``--json`` printed the type and the
    hint but not the provider's reason, which only ``--json`` showed."""
    settings = _settings(tmp_path, provider)
    with bootstrap(settings) as bus:
        _session(bus)
    config = tmp_path / "s.json"
    config.write_text(json.dumps({"models": {FAKE_MODEL: {"token_limit": 32000, "api_base": provider.base_url,
                                                          "api_key": KEY}},
                                  "context_compaction": {"keep_recent_tokens": 1000}, "summarizer": "llm"}))
    provider.queue(_unauthorized())
    capsys.readouterr()
    assert run_cli(["--config", str(config), "--db", settings.database_url, "compact", "S"]) == 1
    err = capsys.readouterr().err
    assert "error: summary_failed: the summary call failed: AuthenticationError (HTTP 401)" in err, err
    assert "cause: " in err and "Incorrect API key provided" in err and KEY not in err, err


def test_an_automatic_summary_that_failed_says_why_in_the_turn_warnings(tmp_path: Path, provider: FakeProvider) -> None:
    """Review of issue 35: ``prepare_turn``'s automatic compaction fails into a warning
    (the turn goes on), which carried the type and hint but not the provider's reason."""
    settings = _settings(tmp_path, provider).model_copy(update={  # threshold 8,000: the session is over it
        "models": {FAKE_MODEL: ModelConfig(token_limit=16_000, api_base=provider.base_url, api_key=SecretStr(KEY))},
        "context_compaction": CompactionConfig(keep_recent_tokens=1000, reserve_tokens=8_000)})
    with bootstrap(settings) as bus:
        _session(bus)
        provider.queue(_unauthorized())
        turn = bus.dispatch(commands.PrepareTurn(session_id="S"))
    failed = [w for w in turn.warnings if w.startswith("auto compaction failed (summary_failed)")]
    assert failed and "Incorrect API key provided" in failed[0] and KEY not in failed[0], (turn.warnings, provider.calls, turn.model_dump(exclude={"messages"}))
