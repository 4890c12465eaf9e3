"""How much of a ``search_history`` query is searched (issue 36, ADR 0086).

Every term is required and a term of several words is a phrase: the engines look each
word of a phrase up in their index, so a query's cost grows with its words (a 499-word
hyphenated phrase cost SQLite 32 × a one-word query). A query is searched up to its
``MAX_QUERY_WORDS``-th word and cut after it; the answer says so. The cut is a
superset: fewer required words can only find more messages, never miss one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

#: Words of a query that are searched: far more than a person or a model asks with
#: (a sentence of 32 words). The cost is linear in them: about 1-4 × a one-word query
#: on ordinary text (benchmarks/searchquery.py), but up to 12-17 × on SQLite when every
#: message holds every word many times (bm25 scores each of 32 terms per row; a phrase
#: of one repeated word is checked at each of its positions). ADR 0086.
MAX_QUERY_WORDS = 32

# What both engines' tokenizers take as a word: a run of letters and digits
# (``_`` splits, as FTS5's unicode61 and PostgreSQL's parser do), with the combining
# marks inside it (``nai`` U+0308 ``ve``, Devanagari vowel signs): FTS5 keeps a mark in
# its word, so a cut before one would search a word nobody wrote.
_RUN = re.compile(r"[^\W_]+")


def _word_ends(query: str) -> Iterator[int]:
    """Where each word of ``query`` ends, a mark and the letters after it kept in it."""
    at = 0
    while (run := _RUN.search(query, at)) is not None:
        end = run.end()
        while end < len(query) and unicodedata.category(query[end]).startswith("M"):
            end += 1
            more = _RUN.match(query, end)
            end = more.end() if more else end
        yield end
        at = end


def bounded_query(query: str) -> tuple[str, bool]:
    """``query`` up to and including its ``MAX_QUERY_WORDS``-th word, and whether it was
    cut there (True only when a word followed)."""
    for n, end in enumerate(_word_ends(query), 1):
        if n == MAX_QUERY_WORDS:
            return (query[:end], True) if _RUN.search(query, end) else (query, False)
    return query, False
