"""Citations in summaries: ``(seq 120–188)`` points at the raw messages a bullet came from. Pure.

A summary may cite only seqs it could have read: from the session's first message to
the last seq the compaction covers. A citation outside that range is removed, never
trusted — a model that invents a source must not send an auditor to the wrong place.
"""

from __future__ import annotations

import re

_CITATION = re.compile(r"\s?\(seqs? (\d+)(?:\s*(?:–|—|-|\.\.|to)\s*(\d+))?\)")


def clean_citations(text: str, first_seq: int, last_seq: int) -> tuple[str, int, int]:
    """The text without citations outside ``first_seq..last_seq``; (text, kept, removed)."""
    kept = removed = 0

    def check(m: re.Match[str]) -> str:
        nonlocal kept, removed
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if first_seq <= lo <= hi <= last_seq:
            kept += 1
            return m.group(0)
        removed += 1
        return ""

    return _CITATION.sub(check, text), kept, removed


def cites(text: str) -> int:
    """How many citations the text carries."""
    return len(_CITATION.findall(text))
