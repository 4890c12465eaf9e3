"""Per-model settings reach the calls that need them (issue 15, ADR 0040): the summary
goes to ``context_compaction.summary_model`` on its own endpoint, and a host passing
``TurnRequest.completion_kwargs()`` to litellm reaches the session model's ``api_base``
with its ``api_key`` — which no JSON answer, repr or log line carries.

Over real HTTP to local fake providers (tests/support/fakeprovider.py), through litellm.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from context_compaction import CompactionConfig, ModelConfig, Settings, bootstrap, commands
from context_compaction.domain.summary import HEADINGS
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.summarizers import import_litellm
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL

SID = "s"
SUMMARY_MODEL = "openai/cheap-model"
SESSION_KEY = "sk-session-7f3a9c"
SUMMARY_KEY = "sk-summary-51be0d"
SUMMARY = "\n\n".join(f"## {h}\nNone." for h in HEADINGS)


@pytest.fixture
def summaries() -> Iterator[FakeProvider]:
    """A second provider: the summary model's own endpoint."""
    fake = FakeProvider().start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the settings may point litellm anywhere.
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def settings(tmp_path: Path, provider: FakeProvider, summaries: FakeProvider, *, summary_limit: int) -> Settings:
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'ctx.db'}",
        summarizer="llm",
        summary_timeout_seconds=10,
        models={
            FAKE_MODEL: ModelConfig(token_limit=32_000, api_base=provider.base_url, api_key=SecretStr(SESSION_KEY)),
            SUMMARY_MODEL: ModelConfig(
                token_limit=summary_limit, api_base=summaries.base_url, api_key=SecretStr(SUMMARY_KEY)
            ),
        },
        context_compaction=CompactionConfig(keep_recent_tokens=2000, summary_model=SUMMARY_MODEL),
    )


def started(s: Settings) -> object:
    bus = bootstrap(s)
    bus.dispatch(commands.StartSession(session_id=SID, model=FAKE_MODEL))
    for turn in coding_session(8, big_output_chars=2_000):
        bus.dispatch(commands.AppendMessages(session_id=SID, messages=turn.messages()))
    return bus


def test_the_summary_goes_to_the_summary_model_on_its_own_endpoint(
    tmp_path: Path, provider: FakeProvider, summaries: FakeProvider
) -> None:
    summaries.queue(Reply(text=SUMMARY))
    bus = started(settings(tmp_path, provider, summaries, summary_limit=6_000))
    try:
        outcome = bus.dispatch(commands.Compact(session_id=SID))
        assert outcome.status == "compacted" and outcome.provider_kind == "llm:openai"
        assert provider.calls == 0 and summaries.calls == 1
        sent = summaries.requests[0]
        assert sent.body["model"] == "cheap-model"
        assert sent.headers["authorization"] == f"Bearer {SUMMARY_KEY}"
        # Its 6,000-token window caps the summary request (the session's is 32,000).
        assert sent.body["max_tokens"] <= 6_000 // 4
        attempt = bus.dispatch(commands.ListCompactionAttempts(session_id=SID)).attempts[0]
        assert (attempt.outcome, attempt.model) == ("compacted", SUMMARY_MODEL)
        checkpoint = bus.dispatch(commands.ListCheckpoints(session_id=SID)).checkpoints[0]
        assert checkpoint.model == SUMMARY_MODEL
        # The session keeps its model: the next request is for it.
        request = bus.dispatch(commands.PrepareTurn(session_id=SID, system_prompt="sys"))
        assert request.model == FAKE_MODEL
    finally:
        bus.close()


def test_without_a_summary_model_the_session_model_summarizes(
    tmp_path: Path, provider: FakeProvider, summaries: FakeProvider
) -> None:
    provider.queue(Reply(text=SUMMARY))
    s = settings(tmp_path, provider, summaries, summary_limit=6_000)
    s = s.model_copy(update={"context_compaction": CompactionConfig(keep_recent_tokens=2000)})
    bus = started(s)
    try:
        assert bus.dispatch(commands.Compact(session_id=SID)).status == "compacted"
        assert (provider.calls, summaries.calls) == (1, 0)
        assert provider.requests[0].body["model"] == "fake-model"
        assert bus.dispatch(commands.ListCompactionAttempts(session_id=SID)).attempts[0].model == FAKE_MODEL
    finally:
        bus.close()


def test_a_host_passing_completion_kwargs_reaches_the_configured_api_base(
    tmp_path: Path, provider: FakeProvider, summaries: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    provider.queue(Reply(text="The race is in the refund handler.", prompt_tokens=77))
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
    bus = started(settings(tmp_path, provider, summaries, summary_limit=6_000))
    caplog.set_level(logging.DEBUG)
    try:
        request = bus.dispatch(commands.PrepareTurn(session_id=SID, system_prompt="sys", tools=[tool]))
        summary_calls = summaries.calls  # (the turn may have compacted: that is the summary model's)
        kwargs = request.completion_kwargs()
        assert set(kwargs) == {"model", "messages", "tools", "api_base", "api_key"}
        response = import_litellm().completion(**kwargs, num_retries=0)
        assert response.choices[0].message.content == "The race is in the refund handler."
        assert provider.calls == 1 and summaries.calls == summary_calls
        sent = provider.requests[0]
        assert sent.body["model"] == "fake-model"
        assert sent.headers["authorization"] == f"Bearer {SESSION_KEY}"
        # (litellm leaves out an assistant's ``content: null``; the rest arrives as built)
        assert [m["role"] for m in sent.messages] == [m["role"] for m in request.messages]
        assert sent.messages[-1] == request.messages[-1] and sent.body["tools"] == [tool]
        # The key is in that dict only: not in JSON answers (which carry api_base), the
        # model's repr or dump, nor any log line of the turn.
        envelope = bus.dispatch_json({"type": "prepare_turn", "session_id": SID, "system_prompt": "sys"})
        assert envelope["result"]["api_base"] == provider.base_url
        outputs = [str(envelope), repr(request), str(request), request.model_dump_json(),
                   bus.dispatch_json_bytes({"type": "prepare_turn", "session_id": SID}).decode()]
        assert [SESSION_KEY in text for text in outputs] == [False] * len(outputs)
        assert not [r for r in caplog.records if SESSION_KEY in r.getMessage() or SESSION_KEY in str(vars(r))]
    finally:
        bus.close()


def test_a_model_without_credentials_gives_only_model_messages_and_tools(tmp_path: Path) -> None:
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'ctx.db'}", summarizer="extractive"))
    try:
        bus.dispatch(commands.StartSession(session_id=SID, model="gpt-4o"))
        bus.dispatch(commands.AppendMessages(session_id=SID, messages=[{"role": "user", "content": "hi"}]))
        request = bus.dispatch(commands.PrepareTurn(session_id=SID))
        assert request.completion_kwargs() == {"model": "gpt-4o", "messages": request.messages}
        assert request.api_base is None
    finally:
        bus.close()
