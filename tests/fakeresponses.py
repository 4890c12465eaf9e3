"""A local fake of OpenAI's Responses API compaction, reached through litellm over HTTP.

It speaks the shapes documented in docs/research/provider-native-compaction.md §1/§4:

* ``POST /v1/responses/compact`` {model, input, instructions?} → a ``response.compaction``
  whose ``output`` is the input's user messages followed by one ``compaction`` item with
  ``encrypted_content = "fake1:" + model + ":" + sha256(input)[:16]``;
* ``POST /v1/responses`` → 400 ``invalid_encrypted_content`` when an input item of type
  ``compaction`` was not made for the request's model, else a minimal ``response``;
* ``POST /v1/chat/completions`` → the chat fake of ``fakeprovider`` (the readable
  shadow summary, and requests to other models).

Every request is recorded (path and JSON body), as in ``FakeProvider``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from fakeprovider import FakeProvider, Recorded, Reply


def fake_encrypted(model: str, items: Any) -> str:
    digest = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()[:16]
    return f"fake1:{model}:{digest}"


class FakeResponses(FakeProvider):
    """``FakeProvider`` plus the Responses endpoints; ``fail_compact`` answers the next
    compaction with an HTTP error."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_compact = 0
        self._path = threading.local()
        self.compactions = 0

    def _next(self, request: Recorded) -> Reply:
        self._path.value = request.path
        if request.path.startswith("/v1/responses"):
            with self._lock:
                self.requests.append(request)
            return Reply()
        return super()._next(request)

    def render(self, reply: Reply, body: dict[str, Any]) -> tuple[int, str]:  # type: ignore[override]
        path = getattr(self._path, "value", "")
        if path.startswith("/v1/responses/compact"):
            return self._compact(body)
        if path.startswith("/v1/responses"):
            return self._respond(body)
        return FakeProvider.render(reply, body)

    def of(self, path: str) -> list[Recorded]:
        """The recorded requests to ``path`` (its end), in order."""
        return [r for r in self.requests if r.path.rstrip("/").endswith(path)]

    # ------------------------------------------------------------ endpoints
    def _compact(self, body: dict[str, Any]) -> tuple[int, str]:
        with self._lock:
            failing = self.fail_compact > 0
            if failing:
                self.fail_compact -= 1
            self.compactions += 1
            n = self.compactions
        if failing:
            return 500, json.dumps({"error": {"message": "compaction failed", "type": "server_error"}})
        items = body.get("input")
        model = str(body.get("model"))
        if not isinstance(items, list) or not items:
            return _invalid("input must be a non-empty list of items", "invalid_input")
        bad = _check_compaction_items(items, model)
        if bad:
            return bad
        users = [
            {"id": f"msg_{n}_{i}", "type": "message", "status": "completed", "role": "user",
             "content": [{"type": "input_text", "text": _text_of(item)}]}
            for i, item in enumerate(items)
            if item.get("role") == "user"
        ]
        compaction = {"id": f"cmp_{n}", "type": "compaction", "encrypted_content": fake_encrypted(model, items)}
        return 200, json.dumps({
            "id": f"resp_c{n}", "object": "response.compaction", "created_at": 1764967971,
            "output": [*users, compaction],
            "usage": {"input_tokens": 139, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 438, "output_tokens_details": {"reasoning_tokens": 64},
                      "total_tokens": 577},
        })

    def _respond(self, body: dict[str, Any]) -> tuple[int, str]:
        items = body.get("input")
        model = str(body.get("model"))
        if isinstance(items, list):
            bad = _check_compaction_items(items, model)
            if bad:
                return bad
        return 200, json.dumps({
            "id": "resp_1", "object": "response", "created_at": 1764967972, "status": "completed",
            "model": model,
            "output": [{"id": "msg_out", "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 55},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        })


def _check_compaction_items(items: list[Any], model: str) -> tuple[int, str] | None:
    for item in items:
        if isinstance(item, dict) and item.get("type") == "compaction":
            content = item.get("encrypted_content")
            if not isinstance(content, str) or not content.startswith(f"fake1:{model}:"):
                return _invalid("the compaction item was not made for this model", "invalid_encrypted_content")
    return None


def _invalid(message: str, code: str) -> tuple[int, str]:
    return 400, json.dumps({"error": {"type": "invalid_request_error", "code": code, "message": message}})


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
