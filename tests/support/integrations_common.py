"""What the framework adapters' tests share (issue 40): a window small enough to compact
several times in a 30-turn run, and the checks on what the model received."""

from __future__ import annotations

from typing import Any

from context_compaction import commands
from context_compaction.domain.projection import SUMMARY_HEADER

MODEL = "gpt-4o"
WINDOW = 6_000
TURNS = 30

#: A 6,000-token window: compaction above 5,000 tokens, ~1,200 tokens of raw tail kept
#: (the extractive summary needs room of its own).
SMALL_WINDOW: dict[str, Any] = {
    "summarizer": "extractive",
    "models": {MODEL: {"token_limit": WINDOW}},
    "context_compaction": {"reserve_tokens": 1_000, "keep_recent_tokens": 1_200},
}


def tokens(texts: list[str]) -> int:
    """What a request holds, counted apart from the library: tiktoken over each
    message's texts, plus 4 per message for the chat framing."""
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    return sum(len(encoding.encode(t)) + 4 for t in texts)


def filler(n: int, words: int = 40) -> str:
    """``words`` distinct words (each a few tokens)."""
    return f"item {n}: " + " ".join(_WORDS[(n + i) % len(_WORDS)] for i in range(words))


_WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
          "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def is_summary_text(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(SUMMARY_HEADER)


def assert_tool_pairs(calls_then_results: list[tuple[str, list[str]]]) -> None:
    """``(kind, ids)`` per message, kind "call" (an assistant's tool call ids), "result"
    (a tool result's id) or "other": every call answered right after it, every result
    answering a call just made."""
    open_ids: list[str] = []
    for kind, ids in calls_then_results:
        if kind == "result":
            assert ids[0] in open_ids, f"tool result {ids[0]} answers no open call"
            open_ids.remove(ids[0])
            continue
        assert not open_ids, f"tool calls {open_ids} not answered before a {kind} message"
        if kind == "call":
            open_ids = list(ids)
    assert not open_ids, f"tool calls {open_ids} never answered"


def checkpoints(bus: Any, session_id: str) -> int:
    return len(bus.dispatch(commands.ListCheckpoints(session_id=session_id)).checkpoints)


def projection(bus: Any, session_id: str) -> list[dict[str, Any]]:
    return bus.dispatch(commands.GetProjection(session_id=session_id, model=MODEL)).messages


def history(bus: Any, session_id: str) -> list[Any]:
    return bus.dispatch(commands.GetHistory(session_id=session_id, include_invalidated=True)).messages


def same_or_shortened(stored: Any, sent: Any, tool_output: bool) -> bool:
    """``sent`` is ``stored``, or (a tool output) shortened by a request trimmed within
    its turn: request-local, the log keeps it whole."""
    if stored == sent:
        return True
    return tool_output and isinstance(sent, str) and isinstance(stored, str) and len(sent) < len(stored)
