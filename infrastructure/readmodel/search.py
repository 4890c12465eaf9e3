"""Full-text search over the raw history (``search_history``, issue 16, ADR 0033).

``rm_search`` holds each message's searchable text, projected from ``MessageAppended``
in the events' transaction; the engine indexes it (schema.py ``SEARCH_INDEX``). The
query is user text: it reaches SQL only as a bound parameter, and for FTS5 every term
is a quoted string, so no FTS operator (``OR``, ``NEAR``, ``*``, ``:``, ``^``) of the
user's is ever interpreted.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from context_compaction.domain.summary import storable_text

#: Characters of a snippet either side of the first match.
SNIPPET_RADIUS = 80
_WORD = re.compile(r"\w", re.UNICODE)
_SPACE = re.compile(r"\s+")


def search_text(content: Any, tool_calls: Any, name: Any) -> str:
    """What a message offers to search: its text parts, tool calls (name and
    arguments) and the tool name. Never reasoning or provider-private state."""
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    for call in tool_calls or ():
        if isinstance(call, dict):
            parts.append(f"{call.get('name', '')} {call.get('arguments', '')}")
    if isinstance(name, str) and name:
        parts.append(name)
    return storable_text("\n".join(p for p in parts if p))


def query_terms(query: str) -> list[str]:
    """The whitespace-separated chunks of ``query`` that hold a word character."""
    return [chunk for chunk in query.split() if _WORD.search(chunk)]


def fts5_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression: every term a quoted phrase, all required."""
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


def snippet(body: str, terms: list[str]) -> str:
    """Up to ``2 * SNIPPET_RADIUS`` characters around the first term found, on one
    line, without control characters."""
    lowered = body.lower()
    at = min((i for i in (lowered.find(t.lower()) for t in terms) if i >= 0), default=0)
    start = max(0, at - SNIPPET_RADIUS)
    end = min(len(body), at + SNIPPET_RADIUS)
    text = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") else ch
        for ch in body[start:end]
    )
    text = _SPACE.sub(" ", text).strip()
    return ("…" if start > 0 else "") + text + ("…" if end < len(body) else "")


# (session_id, match, session_id, limit): hits with their visibility and whether the
# active checkpoint covers them. Higher score is better on both engines.
_SELECT = (
    "SELECT s.seq, s.role, s.turn_id, s.body, {score} AS score, m.visible,"
    " CASE WHEN c.first_retained_seq IS NOT NULL AND s.seq < c.first_retained_seq"
    " THEN 1 ELSE 0 END"
    " FROM {source}"
    " JOIN {{t}}rm_messages m ON m.session_id = s.session_id AND m.seq = s.seq"
    " JOIN {{t}}rm_sessions ss ON ss.session_id = s.session_id"
    " LEFT JOIN {{t}}rm_checkpoints c ON c.checkpoint_id = ss.active_checkpoint_id"
    " WHERE {match} AND s.session_id = ?{visible}"
    " ORDER BY score DESC, s.seq LIMIT ?"
)


def search_sql(dialect: str, include_invalidated: bool) -> str:
    visible = "" if include_invalidated else " AND m.visible = 1"
    if dialect == "postgres":
        return _SELECT.format(
            score="ts_rank(to_tsvector('simple', s.body), plainto_tsquery('simple', ?))",
            source="{t}rm_search s",
            match="to_tsvector('simple', s.body) @@ plainto_tsquery('simple', ?)",
            visible=visible,
        )
    return _SELECT.format(
        score="-bm25(rm_search_fts)",
        source="rm_search_fts JOIN rm_search s ON s.rowid = rm_search_fts.rowid",
        match="rm_search_fts MATCH ?",
        visible=visible,
    )


def search_params(dialect: str, terms: list[str], session_id: str, limit: int) -> tuple[Any, ...]:
    if dialect == "postgres":
        text = " ".join(terms)
        return (text, text, session_id, limit)
    return (fts5_match(terms), session_id, limit)
