"""The values of a sentence (ADR 0109): what a line of the new context must hold to state
it. A number (with its unit, an amount, a count, a version, a time, an ordinal), a number
word with a unit ("forty-five minutes"), a date, a path, a file name, a URL, an e-mail
address, an identifier (``snake_case``, ``camelCase``, a word with a digit, ``ALL_CAPS``),
a quoted or back-ticked string, a person named in lower case after a role ("the reviewer
is marguerite", ADR 0114), and a capitalised name (a capitalised word that does not open
the sentence and is no stop word, or a run of two or more). A word alone at the start of
a sentence is no name: English capitalises every opener. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .cues import _DATE, _FILLER, _NUM_WORD, _STOP, _UNIT
from .valueforms import lower_case_holders, plain

# (a unit glued on is the number's: "3pm", "75s", "250ms", "10MB", "21st")
_NUMBER = re.compile(r"(?<![\w.,/-])[$€£¥]?(\d+(?:[.,:]\d+)*)(?:[A-Za-z%]{1,5})?(?![\w/])(?!-\w)")
_NUM_UNIT = re.compile(rf"\b{_NUM_WORD}\s+{_UNIT}\b", re.I)
_URL = re.compile(r"https?://[^\s)\"'<>\]]+[^\s)\"'<>\].,;:]|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PATH = re.compile(r"(?<![\w@])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w|(?<![\w.@-])[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}\b")
_IDENT = re.compile(r"(?<![\w.-])(?:[A-Za-z]\w*_\w*[A-Za-z0-9]|[a-z]+[A-Z]\w*|[A-Za-z][\w-]*\d[\w-]*|[A-Z]{2,}s?)(?![\w-])")
_QUOTED = re.compile(r"(?:(?<=\s)|^)[\"\u201c`']([^\"\u201d`'\n]{2,80})[\"\u201d`'](?=[\s.,;:!?)]|$)")
_CAP = re.compile(r"(?<![\w'\u2019-])[A-Z][\w'\u2019-]*\w|(?<![\w'\u2019-])[A-Z](?![\w'\u2019-])")


def values(sentence: str) -> list[str]:
    """The value-like tokens of ``sentence``, casefolded, in order, once each: what a
    line must hold to state it (a number without its currency sign or unit: "$1,200"
    and "1,200 dollars" are one value)."""
    found: list[tuple[int, str]] = []
    # (the characters a value already holds: a later value starting or ending inside one is
    # part of it; one mark per character keeps this linear in the sentence, where a list of
    # the values taken made a line of 4,000 pins quadratic, review of ADR 0116)
    taken = bytearray(len(sentence) + 1)

    def add(start: int, end: int, key: str) -> None:
        if taken[start] or taken[max(end - 1, 0)]:
            return
        taken[start:end] = b"\x01" * (end - start)
        found.append((start, key.casefold()))

    for pattern in (_URL, _PATH, _QUOTED, _DATE, _NUM_UNIT):
        for m in pattern.finditer(sentence):
            add(m.start(), m.end(), (m.group(1) if pattern is _QUOTED else m.group(0)).strip())
    for m in _IDENT.finditer(sentence):
        if m.group(0).casefold() not in _STOP and m.group(0).casefold() not in _FILLER:
            add(m.start(), m.end(), m.group(0))
    for m in _NUMBER.finditer(sentence):
        add(m.start(1), m.end(1), m.group(1))
    for start, end, name in lower_case_holders(sentence, _OPENERS):  # ("the reviewer is marguerite")
        add(start, end, name)
    opening = None
    for start, end, name in _names(sentence):
        if " " not in name and not sentence[:start].strip(" \t\"'(\u201c*-"):
            opening = (start, end, name)  # (a word alone at the start: a name only when nothing else is a value)
        else:
            add(start, end, name)
    if opening is not None and not found:
        add(*opening)
    elif not found and len(sentence.split()) <= 3 and (first := _CAP.search(sentence)) \
            and not sentence[:first.start()].strip(" \t\"'(\u201c*-") and _capital(first.group(0)) \
            and first.group(0).casefold() not in _OPENERS and not re.fullmatch(_NUM_WORD, first.group(0).casefold()):
        add(first.start(), first.end(), first.group(0))  # (a word said alone is the answer: "Warning, for now.")
    out: dict[str, None] = {}  # (in order, once each)
    for _, key in sorted(found):
        if key := plain(key):
            out.setdefault(key)
    return list(out)


def _names(sentence: str) -> Iterable[tuple[int, int, str]]:
    """Runs of capitalised words that are no stop word; one word alone opening the
    sentence only when it does not read as an English opener (``_opener``)."""
    opener = len(sentence) - len(sentence.lstrip(" \t\"'(\u201c*-"))
    run: list[re.Match[str]] = []
    for m in [*_CAP.finditer(sentence), None]:
        if m is not None and _capital(m.group(0)) and (not run or sentence[run[-1].end():m.start()] == " "):
            run.append(m)
            continue
        if run and (len(run) > 1 or run[0].start() != opener or not _opener(run[0].group(0))):
            yield run[0].start(), run[-1].end(), sentence[run[0].start():run[-1].end()]
        run = [m] if m is not None and _capital(m.group(0)) else []


def _capital(word: str) -> bool:
    folded = word.casefold()
    return word != "I" and not word.isupper() and folded not in _STOP and folded not in _FILLER


def _opener(word: str) -> bool:
    """A capitalised word that opens English sentences (so no name there): a listed opener
    or a number word, or one that reads as a verb or an adverb ("Traced", "Adding",
    "Honestly"). A product opening a sentence ("Valkey for the cache layer") is a name."""
    folded = word.casefold().rstrip("'\u2019s")
    return folded in _OPENERS or bool(re.fullmatch(_NUM_WORD, folded)) or folded.endswith(("ed", "ing", "ly"))


# (English sentence openers: pronouns, determiners, conjunctions, discourse words and the
# imperatives of chat about work; with ``cues._STOP`` they are no names at a sentence start)
_OPENERS = frozenset(w.casefold() for w in """
The This That These Those There Then We You They It Its Please Can Could Would Should Make Use Run Add Fix
Check Look Let So But Also Anyway Nice Thanks Ok Okay Oh Hmm Btw Fyi Just Maybe What Why How When Where Which
Who Whose If Now Next Great Sure Yes Yeah Otherwise Nothing Something Both Either Neither Another Each First
Second Third Finally Lastly Here Once While However Overall Meanwhile Besides Still Yet Sorry Hi Hello Hey Good
Done Note Remember Keep Drop Move Switch Bump Pin Pick Go Stop Start Try Turn Put Take Bring Send Write Read
Open Close Show Tell Give Ask Call Wait Leave Skip Ship Merge Push Pull Rebase Revert Test Tests Build Deploy
Release Rename Remove Delete Create Update Upgrade Downgrade Install Replace Split Reduce Trim Clean Split
Also Actually Again Agreed Alright Although Though Because Since Until Unless Whether After Before During
Today Tomorrow Yesterday Tonight Everyone Everybody Someone Somebody Nobody Most Many Much Some Few Several
Other Others Such Same Whatever Whenever Wherever Instead Perhaps Probably Possibly Clearly Anything
Everything Good Fine Cool Perfect Right Wrong True False Yep Nope Well Welcome Thank Hope Glad Happy
Followup Heads Quick Small Big Last Both Every All Any No Not None One Ones Our My Your Their His Her
Noted Understood Acknowledged Ack Roger Gotcha Got Indeed Certainly Absolutely Exactly Definitely
Sound Sounds Seem Seems Work Works Feel Feels Mean Means Depend Depends Happen Happens
""".split())
