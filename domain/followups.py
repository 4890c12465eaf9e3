"""A follow-up that names its subject only by a pronoun (ADR 0091). Pure.

"The freeze is March 3. ... that moved to March 10." or "Build time is 9 minutes. it's
now 14 minutes": the second sentence has a new value and no subject of its own, so the
subject rule saw nothing to replace and both values read as current. Such a sentence is
about the statement just before it (the nearest earlier checklist item with a subject,
in the same message or an earlier one of the same compaction): it takes that item's
subject anchors, becomes an ``update`` (the kind of what it replaces) and names the
subject in its value, so that a summary line of it still says what changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

Item = Any  # a ledger.LedgerItem

# (a pronoun as the subject, then a verb of change or a copula: "it's now", "that moved",
# "they pushed it to", "this went up to"; fillers before it: "ok so that ...")
_FOLLOW = re.compile(
    r"^(?:(?:ok|okay|oh|and|so|actually|update|wait|hmm|well|btw|fyi|also|now)[,:]?\s+)*"
    r"(?:it|that|this|they|those|these|which)(?:'s|'re|\s+(?:is|are|was|were|has|have|had|now|just|got|went|"
    r"moved|slipped|changed|dropped|rose|grew|became|becomes|shifted|pushed|bumped|raised|lowered|"
    r"ended up|turned out|came back))\b", re.I)
#: Words of the change itself, not of a subject ("that moved to Friday").
_CHANGE_WORDS = frozenset("moved slipped changed dropped rose grew became becomes shifted pushed bumped raised "
                          "lowered ended turned came went got back now".split())


def is_follow_up(sentence: str, has_value: Callable[[str], bool], subject: Callable[[str], list[str]]) -> bool:
    """A sentence with a value whose only subject is a pronoun (the pronoun test first:
    it is asked of every sentence, the other two are dearer)."""
    return bool(_FOLLOW.match(sentence)) and has_value(sentence) and not [
        w for w in subject(sentence) if w not in _CHANGE_WORDS]


def resolve(item: Item, antecedent: Item | None) -> Item:
    """``item`` (a follow-up) about ``antecedent``'s subject, or ``item`` unchanged when
    there is none to refer to."""
    if antecedent is None or not antecedent.anchors:
        return item
    about = ", ".join(antecedent.anchors)
    return replace(item, kind="update", anchors=antecedent.anchors, value=f"{item.value} (about: {about})")
