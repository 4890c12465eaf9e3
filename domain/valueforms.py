"""How a value may be written (issue 44, ADR 0114). Pure.

The coverage check (``coverage.py``) and the ledger's ``present`` compare what left with
what the new context states: formatting is no part of a value ("**$12,000**" states
"$12000"), and a person may be named in lower case right after the role they hold ("the
reviewer is marguerite"), which no capital marks as a name.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

from .cues import _FILLER, _STOP


def plain(text: str) -> str:
    """``text`` as stated, its formatting aside: markdown emphasis and code ticks out, digit
    groups joined."""
    return _GROUPED.sub(_joined, _EMPHASIS.sub(r"\1", text.replace("`", "")))


# (emphasis as a pair around words, never inside a name or a path: "app/__main__.py" is
# no "app/main.py", ADR 0114 amended)
_EMPHASIS = re.compile(r"(?<![\w./\\-])(?:\*\*|__)(?=[^\s*_])([^\n]{0,200}?[^\s*_])(?:\*\*|__)(?![\w./\\-])")
_GROUPED = re.compile(r"(?<![\d,.])([$\u20ac\u00a3\u00a5]?)(\d{1,3})((?:,\d{3})+)(?!\d|,\d)")


def _joined(m: re.Match[str]) -> str:
    """A grouped number written plain, only where grouping is sure: after a currency sign,
    two groups or more ("1,200,000"), or round ("12,000", "2,500"); "80,443" may be two
    ports, so it stays as said (unequal to "80443": a loss reported, never a silent one)."""
    sign, head, groups = m.groups()
    if sign or groups.count(",") > 1 or groups.endswith("00"):
        return sign + head + groups.replace(",", "")
    return m.group(0)


def lower_case_holders(sentence: str, openers: Collection[str] = ()) -> Iterator[tuple[int, int, str]]:
    """(start, end, word) of each lower-case word that names who holds a role: a role noun,
    its copula, one word closing the clause ("the on-call for billing is bob.", "our release
    manager is ines, until May"); not a state ("is busy", "is unclear", "is responsible")."""
    for m in _ROLE_IS.finditer(sentence):
        word = m.group("word")
        if word.casefold() not in _STOP and word.casefold() not in _FILLER and word.casefold() not in openers \
                and not _NOT_A_NAME.search(word) and word not in _COMMON \
                and not (m.group("bare") and not m.group("of") and _BARE_ROLE.search(sentence[:m.start()])):
            yield m.start("word"), m.end("word"), word


_ROLE_IS = re.compile(r"\b(?:owner|reviewer|(?P<bare>manager|lead|admin)|contact|maintainer|on-call|approver|assignee)s?"
                      r"(?P<of>\s+(?:for|of|on)\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?)?\s+(?:is|was|will be|stays|becomes|=|:)\s+"
                      r"(?P<word>[a-z][a-z'-]{2,})(?=\s*(?:[.,;!?)]|$)|\s+(?:this|for|from|until|now|again|today|next)\b)")
# (ADR 0114 amended: "the lead is clear", "the admin is broken", "the contact is slack" —
# a word of talk after the role; "lead", "manager", "admin" name a role only qualified,
# "the release manager is ines", "the lead for billing is omar", not "The lead is huge")
_COMMON = frozenset("""clear low high huge tiny big small strict gone broken fast slow slack team blank empty
none null full good bad fine great hard easy done safe fixed stale live down up right wrong fair firm solid weak
strong quiet loud calm happy sure short long cheap dear clean dirty hot cold warm cool nice okay ok me you us them
him her someone somebody nobody everyone anyone unassigned pending offline online idle stuck""".split())
_BARE_ROLE = re.compile(r"(?:^\W*|[.!?;:]\s*|\b(?:the|a|an|our|my|your|their|this|that|its)\s+)$", re.I)
_NOT_A_NAME = re.compile(r"(?:ed|ing|ly|ful|able|ible|ous|ive|al|less|ent|ant|ary)$|^(?:away|out|off|back|busy|free|"
                         r"new|unknown|unclear|tbd|open|vacant|ready|late|here|there|sick|available|unassigned)$")


_IN = " in "  # (a setting's key: its name, " in ", the file its line names)


def same_setting(old: str | None, new: str | None) -> bool:
    """One setting: the same name, in the same file or with no file said for one of them."""
    if old is None or new is None:
        return False
    (a, _, fa), (b, _, fb) = old.partition(_IN), new.partition(_IN)
    return a == b and (not fa or not fb or fa == fb)
