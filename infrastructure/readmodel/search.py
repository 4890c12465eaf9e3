"""Full-text search over the raw history (``search_history``, issue 16, ADR 0033).

``rm_search`` holds each message's searchable text; the engine indexes it (schema.py
``SEARCH_INDEX``). It lags the appends (ADR 0049): a search first indexes its session's
messages above the session's mark (``index_session``). The query is user text: it
reaches SQL only as bound parameters, every FTS5 term a quoted string.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from context_compaction.domain.summary import storable_text

from ..database import Cur

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


SearchRow = tuple[str, int, str, Any, str]

#: Characters of one message the index holds (issue 36, ADR 0071): PostgreSQL refuses a
#: tsvector over 1 MB and keeps word positions up to 16,383 only; 30,000 characters hold
#: at most 15,000 words. A longer text keeps its head and tail around :data:`GAP`; its
#: hits say ``truncated``.
MAX_INDEXED_CHARS = 30_000
INDEXED_HEAD = MAX_INDEXED_CHARS * 3 // 5
INDEXED_TAIL = MAX_INDEXED_CHARS - INDEXED_HEAD
#: Between the indexed head and tail of an oversized text (fixed length, so that a
#: hit's body is known truncated by its length and the gap's place, not a search).
GAP = "\n[… the middle of this message is not indexed …]\n"


def bounded_text(text: str) -> str:
    """``text``, or its head and tail around :data:`GAP` when it is too long to index."""
    if len(text) <= MAX_INDEXED_CHARS:
        return text
    return text[:INDEXED_HEAD] + GAP + text[-INDEXED_TAIL:]


def is_truncated(body: str) -> bool:
    """Was ``body`` cut by :func:`bounded_text`?"""
    return len(body) == MAX_INDEXED_CHARS + len(GAP) and body.startswith(GAP, INDEXED_HEAD)


def search_row(session_id: str, seq: int, record: dict[str, Any]) -> SearchRow:
    """The rm_search row of one message, from its stored state (as plain values)."""
    text = search_text(record.get("content"), record.get("tool_calls"), record.get("name"))
    return session_id, seq, str(record["role"]), record.get("turn_id"), bounded_text(text)


INSERT_SQL = (
    # (a message's text is a function of its event: a row already there is the same)
    "INSERT INTO {t}rm_search (session_id, seq, role, turn_id, body) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (session_id, seq) DO NOTHING"
)
#: PostgreSQL: a whole batch in one statement, its columns as arrays (ADR 0054).
PG_INSERT_SQL = (
    "INSERT INTO {t}rm_search (session_id, seq, role, turn_id, body)"
    " SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[])"
    " ON CONFLICT (session_id, seq) DO NOTHING"
)
MARK_SQL = "SELECT seq FROM {t}rm_search_marks WHERE session_id = ?"
# The mark only moves up: two searchers that indexed concurrently (PostgreSQL, no
# common lock) leave the higher of their marks.
_MOVE_MARK_SQL = (
    "INSERT INTO {t}rm_search_marks (session_id, seq) VALUES (?, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq"
    " WHERE {t}rm_search_marks.seq < excluded.seq"
)
#: Is anything of the session above its mark? (one row: the last seq, the mark)
BEHIND_SQL = (
    "SELECT s.next_seq - 1, k.seq FROM {t}rm_sessions s"
    " LEFT JOIN {t}rm_search_marks k ON k.session_id = s.session_id WHERE s.session_id = ?"
)


#: PostgreSQL: a purge (exclusive) and the writers of a session's content caches
#: (shared: the indexer, the Timeline) take this lock on the session, so no cache
#: keeps what a purge erased (ADR 0072). SQLite's writer lock already orders them.
#: A hash collision only makes two sessions wait for each other.
PURGE_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('ctxc purge ' || ?, 0))"
PURGE_SHARED_LOCK_SQL = "SELECT pg_advisory_xact_lock_shared(hashtextextended('ctxc purge ' || ?, 0))"


def index_session(
    cur: Cur, messages_sql: str, decode: Callable[[bytes], dict[str, Any]], session_id: str,
    batch: int,
) -> int:
    """Index up to ``batch`` of the session's messages above its mark and move the mark;
    returns how many messages it read (``batch``: there may be more).

    Every message is indexed, visible or not. Seqs of a session commit in order, so a
    message above the mark this transaction does not see commits later with a higher
    seq. A row whose state does not decode is skipped (its queries report it).
    """
    if cur.dialect.is_postgres:
        cur.execute(PURGE_SHARED_LOCK_SQL, (session_id,))
    row = cur.execute(MARK_SQL, (session_id,)).fetchone()
    mark = int(row[0]) if row else 0
    rows = cur.execute(messages_sql + " ORDER BY m.seq LIMIT ?", (session_id, mark + 1, batch)).fetchall()
    if not rows:
        return 0
    found = []
    for seq, state, *_ in rows:
        try:
            found.append(search_row(session_id, int(seq), decode(bytes(state))))
        except Exception:  # noqa: BLE001 - a damaged row is reported by its queries, not here
            continue
    if cur.dialect.is_postgres:
        if found:
            cur.execute(PG_INSERT_SQL, [list(column) for column in zip(*found)])
    else:
        cur.executemany(INSERT_SQL, found)
    cur.execute(_MOVE_MARK_SQL, (session_id, int(rows[-1][0])))
    return len(rows)


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def term_words(term: str) -> tuple[str, ...]:
    """The words of a term as the engines compare them (case and diacritics folded)."""
    folded = unicodedata.normalize("NFKD", term.casefold())
    return tuple(_TOKEN.findall("".join(ch for ch in folded if not unicodedata.combining(ch))))


def _inside(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    n = len(part)
    return any(whole[i: i + n] == part for i in range(len(whole) - n + 1))


def query_terms(query: str) -> list[str]:
    """The whitespace-separated chunks of ``query`` that hold a word character, without
    those whose words another term already holds in order (``e`` beside ``E,`` or
    ``e-f``): every term is required, so they add only cost (issue 36, ADR 0071). A
    substring term (:func:`split_terms`) stands for itself, so only its duplicates go."""
    chunks = [chunk for chunk in query.split() if _WORD.search(chunk)]
    keyed = [(c, ("s", c) if _UNSPACED.search(c) else ("w", *term_words(c))) for c in chunks]
    kept: list[str] = []
    seen: set[tuple[str, ...]] = set()
    words = sorted({k[1:] for _, k in keyed if k[0] == "w"}, key=len, reverse=True)
    for chunk, key in keyed:
        if key in seen:
            continue
        seen.add(key)
        mine = key[1:]
        if key[0] == "w" and mine and any(len(w) > len(mine) and _inside(mine, w) for w in words):
            continue
        kept.append(chunk)
    return kept


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


#: Characters PostgreSQL's text-search parser joins words with (``src/app/main.py`` is
#: one "file" token): spaces in the indexed text and the query, so that part of a path is
#: found as on SQLite. No ``?`` or ``%``: the SQL is a template with ``?`` placeholders.
PG_JOINERS = "/.-_:@=+~#&"


def pg_words(column: str) -> str:
    """SQL: ``column`` with the joiners as spaces, one ``replace`` per joiner: the text
    ``translate`` gives, six times faster (ADR 0054)."""
    out = column
    for joiner in PG_JOINERS:
        out = f"replace({out}, '{joiner}', ' ')"
    return out


#: What PostgreSQL indexes of a body: rm_search's stored column ``words`` (schema.py
#: ``SEARCH_INDEX``, ADR 0054) is generated from it, and its GIN index is on that column.
PG_TSVECTOR = f"to_tsvector('simple', {pg_words('body')})"

# Scripts written without spaces between words (Chinese, Japanese) and Korean, whose
# words carry their particles: neither tokenizer can find a word inside such a run,
# so a term holding them is matched as a substring of the message text.
_UNSPACED = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff]"
)


def split_terms(terms: list[str]) -> tuple[list[str], list[str]]:
    """(terms for the full-text index, terms matched as substrings)."""
    words = [t for t in terms if not _UNSPACED.search(t)]
    return words, [t for t in terms if _UNSPACED.search(t)]


# Hits with their visibility and whether only the active checkpoint's summary stands
# for them (a pinned message stays verbatim after it). Higher
# score is better on both engines.
_SELECT = (
    "SELECT s.seq, s.role, s.turn_id, s.body, {score} AS score, m.visible,"
    " CASE WHEN c.first_retained_seq IS NOT NULL AND s.seq < c.first_retained_seq"
    " AND p.seq IS NULL THEN 1 ELSE 0 END"
    " FROM {source}"
    " JOIN {{t}}rm_messages m ON m.session_id = s.session_id AND m.seq = s.seq"
    " LEFT JOIN {{t}}rm_pins p ON p.session_id = s.session_id AND p.seq = s.seq"
    " JOIN {{t}}rm_sessions ss ON ss.session_id = s.session_id"
    " LEFT JOIN {{t}}rm_checkpoints c ON c.checkpoint_id = ss.active_checkpoint_id"
    " WHERE {match}s.session_id = ?{substrings}{visible}"
    " ORDER BY score DESC, s.seq LIMIT ?"
)


def search_query(
    dialect: str, terms: list[str], session_id: str, limit: int, include_invalidated: bool
) -> tuple[str, tuple[Any, ...]]:
    """The search for ``terms`` (every one required): its SQL and parameters."""
    words, substrings = split_terms(terms)
    postgres = dialect == "postgres"
    score, source, match, head = "0.0", "{t}rm_search s", "", ()
    if words and postgres:
        query = " && ".join([f"phraseto_tsquery('simple', {pg_words('?')})"] * len(words))
        # Ranked on any of the words, not the phrases: ts_rank of an AND or phrase query
        # compares every pair of its words' positions, 2.1 s on 300 rows for a 32-word
        # phrase of repeated words (70 × one word); of an OR query it is linear (ADR 0086).
        anyword = f"replace(plainto_tsquery('simple', {pg_words('?')})::text, ' & ', ' | ')::tsquery"
        score, match = f"ts_rank(s.words, {anyword})", f"s.words @@ ({query}) AND "
        head = (" ".join(words), *words)
    elif words:
        score, match = "-bm25(rm_search_fts)", "rm_search_fts MATCH ? AND "
        source = "rm_search_fts JOIN rm_search s ON s.rowid = rm_search_fts.rowid"
        head = (" ".join('"' + term.replace('"', '""') + '"' for term in words),)  # (quoted phrases)
    sql = _SELECT.format(
        score=score, source=source, match=match,
        substrings=(" AND strpos(s.body, ?) > 0" if postgres else " AND instr(s.body, ?) > 0") * len(substrings),
        visible="" if include_invalidated else " AND m.visible = 1",
    )
    return sql, (*head, session_id, *substrings, limit)
