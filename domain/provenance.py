"""Citations in summaries: ``(seq 120–188)`` points at the raw messages a bullet came from. Pure.

A summary may cite only seqs it could have read: from the session's first message to
the last seq the compaction covers. A citation outside that range is removed, never
trusted — a model that invents a source must not send an auditor to the wrong place.
"""

from __future__ import annotations

import re

# Any parenthesis that opens with "seq"/"seqs" (any case) is a citation: a model writes
# lists (``(seqs 3, 5)``), several ranges, ``#`` or capitals as often as the form the
# prompt asks for, and a form left unchecked would be trusted.
_CITATION = re.compile(r"\s?\(\s*seqs?\b([^()\n]*)\)", re.I)
_RANGE = re.compile(r"(\d+)(?:\s*(?:–|—|-|\.\.|to)\s*(\d+))?")


def _valid(body: str, first_seq: int, last_seq: int) -> bool:
    ranges = _RANGE.findall(body)
    return bool(ranges) and all(
        first_seq <= int(lo) <= int(hi or lo) <= last_seq for lo, hi in ranges
    )


def clean_citations(text: str, first_seq: int, last_seq: int) -> tuple[str, int, int]:
    """The text without citations outside ``first_seq..last_seq``; (text, kept, removed).

    A citation is removed whole when any seq it names lies outside the range."""
    kept = removed = 0

    def check(m: re.Match[str]) -> str:
        nonlocal kept, removed
        if _valid(m.group(1), first_seq, last_seq):
            kept += 1
            return m.group(0)
        removed += 1
        return ""

    return _CITATION.sub(check, text), kept, removed


def cites(text: str) -> int:
    """How many citations the text carries."""
    return len(_CITATION.findall(text))
