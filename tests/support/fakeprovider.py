"""A local OpenAI-compatible chat-completions server, reached through litellm over real HTTP.

It records every request, and answers from a queue of scripted replies: text, tool
calls, delays, HTTP 500, empty content, garbage, or the OpenAI
``context_length_exceeded`` 400.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    cached_tokens: int | None = None  # reported as usage.prompt_tokens_details.cached_tokens
    context_window: int | None = None  # answer 400 context_length_exceeded with this window
    raw: str | None = None  # send this body verbatim (garbage)
    gate: threading.Event | None = None  # wait for it before answering

    @staticmethod
    def calls(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> Reply:
        return Reply(
            text=text,
            tool_calls=[
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, name, args in calls
            ],
            finish_reason="tool_calls",
        )


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    headers: dict[str, str] = field(default_factory=dict)
    """The request's headers, names lower-case (``authorization`` carries the key)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])


class FakeProvider:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: deque[Reply | Callable[[Recorded], Reply]] = deque()
        self.default: Reply = Reply(text="## Objective\nNone.")
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------- control
    def queue(self, *replies: Reply | Callable[[Recorded], Reply]) -> None:
        with self._lock:
            self.replies.extend(replies)

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            item = self.replies.popleft() if self.replies else self.default
        return item(request) if callable(item) else item

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = provider._next(Recorded(self.path, body, headers=headers))
                if reply.gate is not None:
                    reply.gate.wait(timeout=30)
                if reply.delay:
                    time.sleep(reply.delay)
                status, payload = provider.render(reply, body)
                data = payload.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: stop() returns within it (the default 0.5 s adds up).
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # ------------------------------------------------------------ replies
    @staticmethod
    def render(reply: Reply, body: dict[str, Any]) -> tuple[int, str]:
        if reply.raw is not None:
            return reply.status, reply.raw
        if reply.context_window is not None:
            message = (
                f"This model's maximum context length is {reply.context_window} tokens. "
                f"However, your messages resulted in {reply.context_window + 1000} tokens. "
                "Please reduce the length of the messages."
            )
            error = {"message": message, "type": "invalid_request_error",
                     "param": "messages", "code": "context_length_exceeded"}
            return 400, json.dumps({"error": error})
        if reply.status >= 400:
            return reply.status, json.dumps(
                {"error": {"message": "the fake provider failed", "type": "server_error"}}
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else 100
        return 200, json.dumps(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": 20,
                    "total_tokens": prompt_tokens + 20,
                    **({"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
                       if reply.cached_tokens is not None else {}),
                },
            }
        )
