"""Explicit prompt-cache breakpoints for providers that need them (issue 17, ADR 0035).

OpenAI-style providers cache a request's longest stored prefix by themselves; Anthropic
caches only up to blocks marked ``cache_control`` (at most four per request). Between
compactions our requests are append-only, so three marks keep the cache warm: the end
of the system prompt (tools and system), the end of the summary block (stable until the
next checkpoint) and the last message (the prefix the next request extends). litellm
passes a content block's ``cache_control`` through, and a tool message's own
``cache_control`` onto its ``tool_result`` block.
"""

from __future__ import annotations

from typing import Any

from context_compaction.domain.projection import SUMMARY_HEADER

EPHEMERAL = {"type": "ephemeral"}
#: Providers whose caching needs explicit breakpoints (the others cache on their own).
EXPLICIT_CACHE_PROVIDERS = frozenset({"anthropic"})
MAX_BREAKPOINTS = 4


def with_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with breakpoints on the system prompt, the summary block
    and the last message that can carry one; the given dicts are not changed."""
    marks: list[int] = []
    if messages and messages[0]["role"] == "system":
        marks.append(0)
    for index in range(min(2, len(messages))):
        content = messages[index].get("content")
        if messages[index]["role"] == "user" and isinstance(content, str) and content.startswith(SUMMARY_HEADER):
            marks.append(index)
    for index in range(len(messages) - 1, -1, -1):
        if _markable(messages[index]):
            marks.append(index)
            break
    out = list(messages)
    for index in sorted(set(marks))[:MAX_BREAKPOINTS]:
        out[index] = _marked(messages[index])
    return out


def _markable(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message["role"] == "tool" or bool(content)


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    copy = dict(message)
    content = message.get("content")
    if message["role"] == "tool" or not content or not isinstance(content, (str, list)):
        copy["cache_control"] = dict(EPHEMERAL)
    elif isinstance(content, str):
        copy["content"] = [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
    elif isinstance(content, list) and isinstance(content[-1], dict):
        blocks = list(content)
        blocks[-1] = {**blocks[-1], "cache_control": dict(EPHEMERAL)}
        copy["content"] = blocks
    return copy
