"""A local fake of OpenAI's Responses API compaction, reached through litellm over HTTP.

It speaks the shapes documented in docs/research/provider-native-compaction.md §1/§4:

* ``POST /v1/responses/compact`` {model, input, instructions?} → a ``response.compaction``
  whose ``output`` is the input's user messages followed by one ``compaction`` item with
  ``encrypted_content = "fake1:" + model + ":" + sha256(input)[:16]``;
* ``POST /v1/responses`` → 400 ``invalid_encrypted_content`` when an input item of type
  ``compaction`` was not made for the request's model, else a minimal ``response``;
* ``POST /v1/messages`` with ``compaction`` (Anthropic on-demand compaction, §2A/§4.3)
  → one block ``{type: compaction, content, signature: "sig1:" + model + ":" +
  sha256(content)[:16]}``; without it (§4.4), a request carrying a block is refused
  (400, the documented ``error_code``) unless the beta header is there and the block
  is the only one, first in ``messages[0]``, and signed for this model and content;
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


ANTHROPIC_BETA = "compact-2026-09-04"


def fake_signature(model: str, content: str) -> str:
    return f"sig1:{model}:{hashlib.sha256(content.encode()).hexdigest()[:16]}"


class FakeResponses(FakeProvider):
    """``FakeProvider`` plus the Responses and Anthropic endpoints; ``fail_compact``
    answers the next compactions with an HTTP error, ``soft_fail`` an Anthropic
    compaction with an empty 200."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_compact = 0
        self.soft_fail = 0
        self._path = threading.local()
        self.compactions = 0

    @property
    def root_url(self) -> str:
        """The server without ``/v1`` (litellm appends ``/v1/messages`` for Anthropic)."""
        return self.base_url.removesuffix("/v1")

    def _next(self, request: Recorded) -> Reply:
        self._path.value = request
        if request.path.startswith(("/v1/responses", "/v1/messages")):
            with self._lock:
                self.requests.append(request)
            return Reply()
        return super()._next(request)

    def render(self, reply: Reply, body: dict[str, Any]) -> tuple[int, str]:  # type: ignore[override]
        request = self._path.value
        path = request.path
        if path.startswith("/v1/messages"):
            return self._anthropic(body, request.headers)
        if path.startswith("/v1/responses/compact"):
            return self._compact(body)
        if path.startswith("/v1/responses"):
            return self._respond(body)
        return FakeProvider.render(reply, body)

    def of(self, path: str) -> list[Recorded]:
        """The recorded requests to ``path`` (its end), in order."""
        return [r for r in self.requests if r.path.rstrip("/").endswith(path)]

    # ------------------------------------------------------------ endpoints
    def _count(self) -> tuple[int, bool, bool]:
        with self._lock:
            failing = self.fail_compact > 0
            self.fail_compact -= failing
            soft = self.soft_fail > 0
            self.soft_fail -= soft
            self.compactions += 1
            return self.compactions, failing, soft

    def _compact(self, body: dict[str, Any]) -> tuple[int, str]:
        n, failing, _ = self._count()
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


    def _anthropic(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str]:
        model = str(body.get("model"))
        messages = body.get("messages") or []
        blocks = [(i, j, b) for i, m in enumerate(messages) if isinstance(m.get("content"), list)
                  for j, b in enumerate(m["content"]) if isinstance(b, dict) and b.get("type") == "compaction"]
        has_beta = ANTHROPIC_BETA in headers.get("anthropic-beta", "")
        if ("compaction" in body or blocks) and not has_beta:
            return _anthropic_error(f"requires anthropic-beta: {ANTHROPIC_BETA}")
        if len(blocks) > 1 or (blocks and blocks[0][:2] != (0, 0)):
            return _anthropic_error("a compaction block must be the first block", "compaction_block_misplaced")
        if blocks:
            block = blocks[0][2]
            if block.get("signature") != fake_signature(model, str(block.get("content"))):
                return _anthropic_error("bad compaction signature", "compaction_signature_invalid")
        if "compaction" not in body:
            return 200, json.dumps({
                "id": "msg_t", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 50, "output_tokens": 5},
            })
        for refused in ("context_management", "stop_sequences"):
            if refused in body:
                return _anthropic_error(f"{refused} cannot be combined with compaction")
        if not messages:
            return _anthropic_error("nothing to summarize", "compaction_nothing_to_summarize")
        last = messages[-1]
        if last.get("role") == "assistant" and any(
            isinstance(b, dict) and b.get("type") == "tool_use" for b in last.get("content") or []
        ):
            return _anthropic_error("the last assistant turn has an unanswered tool call")
        n, failing, soft = self._count()
        if failing:
            return 529, json.dumps({"type": "error", "error": {
                "type": "overloaded_error", "message": "overloaded",
                "details": {"error_code": "compaction_unavailable"}}})
        content = f"Summary {n} of {len(messages)} messages."
        blocks_out = [] if soft else [
            {"type": "compaction", "content": content, "signature": fake_signature(model, content)}]
        return 200, json.dumps({
            "id": f"msg_c{n}", "type": "message", "role": "assistant", "model": model,
            "content": blocks_out, "stop_reason": "max_tokens" if soft else "compaction",
            "usage": {"input_tokens": 0, "output_tokens": 0,
                      "iterations": [{"type": "compaction", "input_tokens": 144, "output_tokens": 276}]},
        })


def _anthropic_error(message: str, code: str | None = None) -> tuple[int, str]:
    error: dict[str, Any] = {"type": "invalid_request_error", "message": message}
    if code:
        error["details"] = {"error_code": code}
    return 400, json.dumps({"type": "error", "error": error})


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
