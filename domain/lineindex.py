"""The lines of a text that may hold a value as a whole token, found by lookup. Pure.

The coverage check (ADR 0109) asks, for every sentence that leaves, whether one line of
the new context holds all its values. Searching the whole text for each value and
testing every line that holds the longest one made a huge compaction's check grow with
the square of its size (ADR 0115). :class:`LineIndex` reads each line's word runs once;
a value's lines are then the lines holding its runs, an intersection of small sets.

It only narrows: every line where ``coverage._pattern(key)`` matches is among the lines
:meth:`LineIndex.lines` returns (the caller still tests each with the pattern), because
that pattern puts a token boundary on each side of the key, or the key's own non-word
character does, except after a number, where a unit may be glued on ("3" in "3pm"): that
run is looked up by its leading digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_RUN = re.compile(r"\w+")
_LEAD = re.compile(r"\d*")


class LineIndex:
    """Each word run of ``lines`` (and each run's leading digits) to the lines holding it."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._runs: dict[str, set[int]] = {}
        self._digits: dict[str, set[int]] = {}
        for n, line in enumerate(lines):
            for run in set(_RUN.findall(line)):
                self._runs.setdefault(run, set()).add(n)
                lead = _LEAD.match(run).group()  # type: ignore[union-attr]
                if lead:
                    self._digits.setdefault(lead, set()).add(n)

    def lines(self, keys: Sequence[str]) -> set[int] | None:
        """Every line that may hold each of ``keys`` as a token; None when no key has a run
        to look up, or one spans lines (the caller searches the text instead)."""
        if any("\n" in k for k in keys):
            return None
        found: set[int] | None = None
        for key in keys:
            for m in _RUN.finditer(key):
                run = m.group()
                if m.end() == len(key) and key[:1].isdigit():
                    run = _LEAD.match(run).group()  # type: ignore[union-attr]
                    if not run:
                        continue  # (a unit after a number: "2fa setup" is in "2fa setups")
                    lines = self._digits.get(run, set())
                else:
                    lines = self._runs.get(run, set())
                found = lines if found is None else found & lines
                if not found:
                    return set()
        return found
