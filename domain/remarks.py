"""Remarks (ADR 0099): a user's content-bearing sentence that no checklist kind reads. Pure.

A remark is an item so that its loss, too, is reported; it has no anchors (it replaces
nothing and nothing replaces it), sorts after every typed kind, and is bounded apart:
every user sentence with content is one. This module says which sentence is a remark
(not a question, a one-off request, an acknowledgement, code or a pasted tool line) and
which remarks a ledger carries (``bound``, the newest ``MAX_REMARKS``), and the bound of the
assistant's catch-all, its open questions (ADR 0103), which are held the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from .cues import _CASELESS, _FILLER, _REQUEST, _STOP, _without_exact
from .cues import OPEN_QUESTION, REMARK
from .splitting import SENTENCE_CHARS, clip

#: Remarks a ledger carries, the newest: every user sentence with content is one, so they
#: are bounded apart, and the oldest leave first (reported by the compaction that evicts
#: them); the ledger record and each report's ``dropped_items`` stay bounded.
MAX_REMARKS = 150
#: Open questions of the assistant's a ledger carries, the newest (ADR 0103): an assistant
#: writes far more than a user, so its catch-all is bounded harder.
MAX_OPEN_QUESTIONS = 20
_BOUNDS = {REMARK: MAX_REMARKS, OPEN_QUESTION: MAX_OPEN_QUESTIONS}


class _Kinded(Protocol):
    @property
    def kind(self) -> str: ...


Item = TypeVar("Item", bound=_Kinded)  # (a ``ledger.LedgerItem``: that module imports this one)


def bound(items: Sequence[Item]) -> tuple[list[Item], list[Item]]:
    """``items`` (ledger items in ``priority`` order: the catch-all kinds last, newest
    first) split into what a ledger carries — every typed item, then the newest
    ``MAX_REMARKS`` remarks and ``MAX_OPEN_QUESTIONS`` open questions — and the older ones
    it evicts; a stable partition, each list in its given order."""
    seen = dict.fromkeys(_BOUNDS, 0)
    kept: list[Item] = []
    evicted: list[Item] = []
    for item in items:
        if item.kind in seen:
            seen[item.kind] += 1
            if seen[item.kind] > _BOUNDS[item.kind]:
                evicted.append(item)
                continue
        kept.append(item)
    return kept, evicted


def remark(sentence: str) -> bool:
    """A content-bearing sentence of the user's that no kind reads (ADR 0099): a statement
    or a standing instruction, not a question, not a one-off request ("Run it again",
    "Could you ...", "Please ..."), not an acknowledgement or a greeting, not code or a
    pasted tool output; with at least two content words of its own (in any script: no
    stop word, filler, path or identifier), or six characters of a caseless script."""
    s = sentence.strip()
    if s.endswith(("?", "\uff1f")) or _REQUEST.match(s) or _ONE_OFF.match(s) or _code_like(s):
        return False
    if _CASELESS.search(s):
        return sum(1 for ch in s if _CASELESS.match(ch)) >= 5
    if len(s) < 12:
        return False
    bare = _PATHISH.sub(" ", _without_exact(s))  # (the ledger's exact facts hold paths on their own)
    words = [w for w in _WORD.findall(bare) if (x := w.casefold()) not in _STOP and x not in _FILLER]
    if len(words) < 2:
        return False
    # (an acknowledgement followed by content is content: "Sure, grandma is deaf."; by
    # thanks or praise it is still an acknowledgement: "Great, thanks for the quick fix.")
    rest = s
    while (m := _ACK.match(rest)) and m.end() < len(rest):
        rest = rest[m.end():]
    if rest is s:
        return True
    own = [w for w in _WORD.findall(rest) if (x := w.casefold()) not in _STOP and x not in _FILLER]
    return len(own) >= 2 and not _PRAISE.search(rest) and not _THANKS.search(s)


def whole(sentence: str) -> str:
    """A remark as said: whole up to twice a sentence's usual bound (text in another
    script is never cut), beyond that clipped around its values like any sentence."""
    text = " ".join(sentence.split())
    return text if len(text) <= 2 * SENTENCE_CHARS else clip(text)


def _code_like(s: str) -> bool:
    """Code, a command or a pasted tool line rather than prose: code punctuation, a
    keyword or prompt at its start, or fewer than 60 % of its tokens plain words."""
    if _CODE.search(s):
        return True
    tokens = s.split()
    plain = sum(1 for t in tokens if _PLAIN.fullmatch(t))
    return plain * 10 < len(tokens) * 6


_PATHISH = re.compile(r"\S*[/\\]\S*|(?<![\w.])[\w-]*\.[A-Za-z]\w{0,7}\b")
# (a word in any script: letters only, three or more; two in a non-Latin cased script,
# where "не ем" is as much a sentence as "I don't eat")
_WORD = re.compile(r"[^\W\d_][^\W\d_'\u2019-]{2,}|(?<![^\W\d_])[^\W\d_A-Za-z\u00c0-\u024f]{2}(?![^\W\d_])")
_PLAIN = re.compile(r"[(\"'\u201c\u2018\u300c]?[^\W\d_][^\W\d_'\u2019-]*[.,;:!?)\"'\u201d\u2019\u3001\u3002\u300d\uff01\uff0c\uff1a\uff1b\uff1f]*|[\d$€£%.,:/-]+\w{0,3}[.,;:!?)]*|[-\u2013\u2014&]")
_CODE = re.compile(r"```|==|!=|=>|->|::|[{}]|;\s*$|^\s*(?:def|class|import|from \S+ import|return|raise|assert|"
                   r"elif|except|Traceback|PASSED|FAILED|ERROR|\$|>>>|#include|SELECT|INSERT|UPDATE \w+ SET)\b|"
                   r"^\s*[$>#]\s|\b\w+\s*=\s*\S|^\s*File \"|"
                   # (a block opener, or a line that only introduces what follows: "Here's the plan:")
                   r"^\s*(?:if|for|while|with|else|try|async|await|lambda)\b.*:\s*$|:\s*$", re.M)
# (a one-off request to act now, said as an imperative: "Run the suite again", "Fix the
# flaky test, it blocks the release"; its outcome is what the assistant reports. Not
# "use", "keep", "make sure": those open standing instructions too)
# The verb must be followed by what a request's object opens with (a determiner, a
# pronoun, a particle) or end the sentence: "Read access is all the auditors get",
# "Show business people ...", "Try-hard ..." are statements.
_ONE_OFF = re.compile(r"^\s*(?:(?:ok|okay|also|and|now|then|so|next|first|alright|oh|hey|right|please)[,]?\s+)?"
                      r"(?:(?:go ahead|continue|proceed|let me|tell me|give me|look (?:at|into|for)|"
                      r"summari[sz]e|undo|retry|restart|rebuild)\b|"
                      r"(?:re-?run|run|fix|check|look|try|add|remove|delete|rename|refactor|trim|show|open|read|"
                      r"write|create|revert|install|debug|investigate|grep|paste|send|generate|implement|explain)"
                      r"(?:\s*[.!,]?\s*$|\s+(?:the|a|an|this|that|these|those|it|its|them|me|us|my|our|your|all|"
                      r"every|each|some|any|both|up|out|again|in|on|for|with|whether|if|how|why|what|which|where|"
                      r"once|now|quickly)\b))", re.I)
_PRAISE = re.compile(r"\b(?:great|perfect|nice|awesome|worked|fixed|solved|done)\b", re.I)
_THANKS = re.compile(r"\b(?:thanks|thank|thx|appreciated?|helpful|cheers)\b", re.I)
# (an acknowledgement or a greeting: "Thanks, that fixed it", "Sounds good, go ahead")
_ACK = re.compile(r"^\W*(?:thanks|thank you|thx|ty|ok|okay|great|perfect|nice|cool|awesome|lgtm|sounds good|"
                  r"looks good|got it|sure|yes|yep|yeah|no worries|hi|hello|hey|morning|cheers|brilliant|excellent|"
                  r"sweet|good|fine|alright|right|understood|noted|makes sense|agreed|wow|oops|sorry|ah|oh)\b", re.I)
