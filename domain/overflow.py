"""Context-overflow recovery rules (spec §11.3-§11.4). Pure.

* ``parse_overflow`` reads the real window out of a provider's error text;
* ``degraded_summary`` is the breadcrumb of a checkpoint made without a summary;
* ``trim_request`` is the in-turn, request-local trim: it never touches the log.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .cutpoint import group_turns
from .summary import head_tail

BREADCRUMB = (
    "[Earlier conversation omitted during context-overflow recovery.\n"
    "Raw history remains available, but no semantic summary was produced.]"
)

_N = r"(\d[\d,]*)"  # providers print plain numbers; tolerate thousands separators

#: (pattern, the groups it captures) — the most specific texts first, each from a text
#: a provider really sends (ADR 0018; tests/integration/test_overflow_texts.py has them verbatim).
#: litellm's ``ContextWindowExceededError`` keeps the text after its own prefix.
_PATTERNS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.I), groups)
    for pattern, groups in (
        # Anthropic: the window is N, not A (A is the input, B the requested max_tokens).
        (rf"exceed context limit:\s*{_N}\s*\+\s*{_N}\s*>\s*{_N}", ("prompt", "output", "window")),
        (rf"prompt is too long:\s*{_N}\s*tokens\s*>\s*{_N}\s*maximum", ("prompt", "window")),
        # Gemini
        (rf"input token count \({_N}\) exceeds the maximum number of tokens allowed \({_N}\)",
         ("prompt", "window")),
        # OpenAI gpt-5 family
        (rf"exceed the configured limit of\s*{_N}\s*tokens", ("window",)),
        # Mistral ("Prompt contains X tokens ... too large for model with N maximum context length")
        (rf"prompt contains\s*{_N}\s*tokens", ("prompt",)),
        (rf"too large for model with\s*{_N}\s*maximum context length", ("window",)),
        # OpenAI, vLLM, OpenRouter, most OpenAI-compatible servers
        (rf"maximum context length is\s*{_N}\s*tokens", ("window",)),
        (rf"resulted in\s*{_N}\s*tokens", ("prompt",)),
        (rf"\({_N}\s*in (?:the messages|your prompt)", ("prompt",)),
        (rf"\({_N}\s*of text input", ("prompt",)),
        # a generic wording ("... exceeds the context window of N tokens")
        (rf"context (?:window|length) of\s*{_N}\s*tokens", ("window",)),
    )
)


#: Overflow wordings without a number (OpenAI's Responses-era text, Bedrock, the
#: OpenAI error code): still an overflow, recovered with the configured window (§11.3).
_UNNUMBERED = re.compile(
    r"context_length_exceeded|exceeds the context window|input is too long|prompt is too long",
    re.I,
)


@dataclass(frozen=True)
class OverflowInfo:
    window: int | None
    prompt_tokens: int | None


def parse_overflow(message: str) -> OverflowInfo:
    """The window (and prompt size) a provider reported in its overflow error, if any.

    Reads OpenAI ("maximum context length is N tokens ... resulted in M tokens", gpt-5:
    "exceed the configured limit of N tokens"), Anthropic ("prompt is too long: M tokens
    > N maximum", "input length and `max_tokens` exceed context limit: A + B > N"),
    Gemini ("The input token count (M) exceeds the maximum number of tokens allowed
    (N)"), vLLM and Mistral texts, also wrapped by litellm. A text without a number
    ("Your input exceeds the context window of this model") gives no window.
    """
    found: dict[str, int] = {}
    for pattern, groups in _PATTERNS:
        match = pattern.search(message or "")
        if match:
            for name, value in zip(groups, match.groups(), strict=True):
                found.setdefault(name, int(value.replace(",", "")))
    window = found.get("window")
    if window is not None and window < 256:
        window = None  # not a plausible context window
    return OverflowInfo(window=window, prompt_tokens=found.get("prompt"))


def is_overflow(message: str) -> bool:
    """Does a provider's error text say the request was over the context window?"""
    info = parse_overflow(message)
    return info.window is not None or info.prompt_tokens is not None or bool(_UNNUMBERED.search(message or ""))


def describe_cut(summarized: Sequence[dict[str, Any]], split_turn: bool) -> tuple[int, int, str]:
    """(whole turns dropped, messages dropped of a split turn, the words for it).

    A degraded checkpoint says exactly what it left out: a split turn is not a turn.
    """
    turns = group_turns(summarized, [0] * len(summarized))  # type: ignore[arg-type]
    partial = turns[-1].end - turns[-1].start if split_turn and turns else 0
    whole = len(turns) - (1 if partial else 0)
    parts = []
    if whole:
        parts.append(f"{whole} oldest turn{'s' if whole != 1 else ''}")
    if partial:
        first = summarized[turns[-1].start]["seq"]
        parts.append(
            f"the first {partial} message{'s' if partial != 1 else ''} of the turn at seq {first}"
        )
    seqs = f"message seq {summarized[0]['seq']}-{summarized[-1]['seq']}" if summarized else "nothing"
    return whole, partial, f"{' and '.join(parts) or 'nothing'} ({seqs})"


def degraded_summary(*, omitted: str, previous_summary: str | None) -> str:
    """What a degraded checkpoint says: only what was dropped, no invented facts."""
    note = f"{BREADCRUMB}\nOmitted: {omitted}."
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
