"""Context-overflow recovery rules (spec §11.3-§11.4). Pure.

* ``parse_overflow`` reads the real window out of a provider's error text;
* ``degraded_summary`` is the breadcrumb of a checkpoint made without a summary;
* ``trim_request`` is the in-turn, request-local trim: it never touches the log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .summary import head_tail

BREADCRUMB = (
    "[Earlier conversation omitted during context-overflow recovery.\n"
    "Raw history remains available, but no semantic summary was produced.]"
)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"prompt is too long:\s*(\d+)\s*tokens\s*>\s*(\d+)\s*maximum", re.I), "prompt,max"),
    (re.compile(r"maximum context length is\s*(\d+)\s*tokens", re.I), "max"),
    (re.compile(r"resulted in\s*(\d+)\s*tokens", re.I), "prompt"),
    (re.compile(r"context(?: window| length)? (?:limit |size )?of\s*(\d+)\s*tokens", re.I), "max"),
    (re.compile(r"(\d+)\s*tokens?\s*(?:context window|context length|maximum context)", re.I), "max"),
    (re.compile(r"input length .*?exceeds? .*?(\d{4,})", re.I), "max"),
)


@dataclass(frozen=True)
class OverflowInfo:
    window: int | None
    prompt_tokens: int | None


def parse_overflow(message: str) -> OverflowInfo:
    """The window (and prompt size) a provider reported in its overflow error, if any.

    OpenAI: "maximum context length is N tokens ... resulted in M tokens";
    Anthropic: "prompt is too long: M tokens > N maximum"; litellm wraps both in
    ``ContextWindowExceededError`` whose text still contains them.
    """
    window: int | None = None
    prompt: int | None = None
    for pattern, kind in _PATTERNS:
        match = pattern.search(message or "")
        if not match:
            continue
        if kind == "prompt,max":
            prompt = prompt or int(match.group(1))
            window = window or int(match.group(2))
        elif kind == "max":
            window = window or int(match.group(1))
        else:
            prompt = prompt or int(match.group(1))
    if window is not None and window < 256:
        window = None  # not a plausible context window
    return OverflowInfo(window=window, prompt_tokens=prompt)


def degraded_summary(
    *, omitted_turns: int, first_seq: int, last_seq: int, previous_summary: str | None
) -> str:
    """What a degraded checkpoint says: only what was dropped, no invented facts."""
    turns = "turn" if omitted_turns == 1 else "turns"
    note = f"{BREADCRUMB}\nOmitted: {omitted_turns} earlier {turns} (message seq {first_seq}-{last_seq})."
    if previous_summary and previous_summary.strip():
        return f"{previous_summary.strip()}\n\n{note}"
    return note


# --------------------------------------------------------------- in-turn trim
@dataclass
class TrimResult:
    messages: list[dict[str, Any]]
    truncated_tool_results: int
    dropped_messages: int
    tokens: int


def trim_request(
    messages: Sequence[dict[str, Any]],
    *,
    sizes: Sequence[int],
    keep_from: int,
    limit: int,
    count: Callable[[dict[str, Any]], int],
    tool_chars: int = 1_000,
) -> TrimResult:
    """Spec §11.4: shrink a request copy without touching durable history.

    ``messages[keep_from:]`` (the current turn) is kept as is. Before it, first the
    old tool results are cut to head/tail copies; if that is not enough, whole older
    messages are dropped oldest first — but a leading system message and the summary
    block stay, and tool results never outlive their assistant call. ``sizes`` are the
    messages' token counts; ``count`` counts a shortened copy.
    """
    out = list(messages)
    sizes = list(sizes)
    total = sum(sizes)
    truncated = 0
    for i in range(keep_from):
        if total <= limit:
            break
        m = out[i]
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and len(m["content"]) > tool_chars:
            m = out[i] = {**m, "content": head_tail(m["content"], tool_chars)[0]}
            new = count(m)
            total += new - sizes[i]
            sizes[i] = new
            truncated += 1
    protected = 0
    while protected < keep_from and out[protected].get("role") == "system":
        protected += 1
    if protected < keep_from and _is_summary_block(out[protected]):
        protected += 1
    dropped = 0
    i = protected
    end = keep_from
    while total > limit and i < end:
        group_end = i + 1
        if out[i].get("role") == "assistant" and out[i].get("tool_calls"):
            while group_end < end and out[group_end].get("role") == "tool":
                group_end += 1
        total -= sum(sizes[i:group_end])
        del out[i:group_end]
        del sizes[i:group_end]
        dropped += group_end - i
        end -= group_end - i
    # Never leave a tool result whose call was dropped at the front of what remains.
    while i < len(out) and i < end and out[i].get("role") == "tool":
        total -= sizes[i]
        del out[i]
        del sizes[i]
        dropped += 1
        end -= 1
    return TrimResult(out, truncated, dropped, total)


def _is_summary_block(message: dict[str, Any]) -> bool:
    from .projection import SUMMARY_HEADER

    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_HEADER)


def message_digest_text(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)
