"""/info after an overflow shows the window the provider reported beside the learned
one (issue 38): before, only the learned window in our estimate units was shown (3,904
for a provider that said 6,000), which an operator could not match to the provider's
error. Over real HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx

from context_compaction import Settings, bootstrap
from context_compaction.infrastructure.demo.scenario import coding_session
from context_compaction.infrastructure.http import create_app
from http_server import Server

TOKEN = "reported-window-token-0123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEXT = ("This model's maximum context length is {n} tokens. However, your messages resulted in {p} tokens. "
        "Please reduce the length of the messages.")


def test_info_after_an_overflow_shows_the_providers_window(tmp_path: Path) -> None:
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'w.db'}", summarizer="extractive",
                             context_compaction={"keep_recent_tokens": 3_000}))
    try:
        with Server(create_app(bus, token=TOKEN, max_body_bytes=1_000_000)) as srv, httpx.Client(base_url=srv.url, headers=AUTH) as client:
            def do(command: dict) -> dict:
                reply = client.post("/v1/commands", json=command).json()
                assert reply["ok"], reply
                return reply["result"]

            do({"type": "start_session", "session_id": "s", "model": "gpt-4o"})
            for turn in coding_session(4, big_output_chars=2_000):
                do({"type": "append_messages", "session_id": "s", "messages": turn.messages()})
            before = do({"type": "get_context_usage", "session_id": "s"})
            assert before["reported_window_tokens"] is None
            first = do({"type": "prepare_turn", "session_id": "s"})
            estimate = first["usage"]["used_tokens"]
            provider_count = estimate * 3 // 2  # the provider counts half again as many tokens
            do({"type": "recover_overflow", "session_id": "s", "request_id": first["request_id"],
                "error_message": TEXT.format(n=6_000, p=provider_count)})
            info = do({"type": "get_context_usage", "session_id": "s"})
    finally:
        bus.close()
    assert info["effective_window_tokens"] == 6_000 * estimate // provider_count < 6_000
    assert info["reported_window_tokens"] == 6_000
    assert "provider reported 6,000" in info["text"]
