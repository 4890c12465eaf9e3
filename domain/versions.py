"""Which package a version belongs to, and whether two sentences name one package or two
(issue 44, ADRs 0103, 0106 and 0110). Pure: ``supersession.py`` asks it before a later
version replaces or flags an earlier one.
"""

from __future__ import annotations

import functools
import re

from .checklist import _VERSION_WORDS, _caseless_clause, _caseless_fact
from .cues import (_UPDATE, VERSIONED, _STOP)
from .subjects import Item, _CHANGE, _VERSION_NUMBER, _says


def _one_package_named(new: Item, old: Item) -> str | None:
    """The package whose version both items state (a one-word anchor of either, said in
    both as a word of its own and qualifying nothing else), when the later version may
    replace the earlier: a lower one only in a sentence about a change or the pin itself
    (ADR 0106's guard: "locally I have node 18.19.0" is another place)."""
    if _two_packages(new, old):
        return None
    said = {a for i in (new, old) for a in i.anchors if " " not in a and any(c.isalpha() for c in a)
            and _said(a, new.value) and _said(a, old.value)}
    named = sorted(w for w in said if _one_package(new.value, old.value, {w}))
    olds, news = _VERSION_NUMBER.findall(old.value), _VERSION_NUMBER.findall(new.value)
    if not named or not olds or not news or set(olds) <= set(news):
        return None
    if _numbers(news[0]) < _numbers(olds[0]) and not (
            _says(_CHANGE, new.value) or _says(_UPDATE, new.value) or _says(_OF_THE_PIN, new.value)):
        return None
    return named[0]


def _two_packages(new: Item, old: Item) -> bool:
    """Each version item names a one-word subject the other does not say: "numpy" /
    "scipy", two packages."""
    ones = [{a for a in i.anchors if " " not in a and any(c.isalpha() for c in a)} for i in (new, old)]
    return any(not _said(w, old.value) for w in ones[0]) and any(not _said(w, new.value) for w in ones[1])


def _said(word: str, sentence: str) -> bool:
    return bool(re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", sentence, re.I))


def _one_package(new: str, old: str, shared: set[str]) -> bool:
    """Two version sentences name one package: a word they share is no qualifier of
    another package in either ("the Python client library is at 0.27.2" is the library's
    version, not Python's)."""
    return any(not _qualifies(new, w) and not _qualifies(old, w) for w in shared)


def _qualifies(sentence: str, word: str) -> bool:
    """``word`` stands only inside a noun phrase that names something else: after an
    article or a possessive and before a content word ("the Python client library")."""
    found = False
    for m in re.finditer(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", sentence, re.I):
        before = re.findall(r"[A-Za-z']+", sentence[: m.start()])[-1:]
        after = re.match(r"\s+([A-Za-z][\w-]*)", sentence[m.end():])
        if not (before and before[0].lower() in _ARTICLES and after and after.group(1).lower() not in _STOP
                and after.group(1).lower() not in _VERSION_WORDS):
            return False
        found = True
    return found


_ARTICLES = frozenset("the a an our their your my this that its".split())


def _packages(item: Item) -> frozenset[str]:
    """The packages whose version an item states: a version item's anchors, or the Latin
    word before a version number in a sentence kept whole ("sqlalchemy を 2.0.36 に…")."""
    if item.kind == VERSIONED:
        return frozenset(item.anchors)
    return _caseless_packages(item.value)


@functools.lru_cache(maxsize=16384)
def _caseless_packages(sentence: str) -> frozenset[str]:
    if not _VERSION_NUMBER.search(sentence) or not (_caseless_fact(sentence) or _caseless_clause(sentence)):
        return frozenset()
    return frozenset(m.group(1).lower() for m in _CASELESS_VERSION.finditer(sentence))


_CASELESS_VERSION = re.compile(r"([A-Za-z][\w.-]*[A-Za-z0-9])\s*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]{0,3}"
                               r"\s*v?\d+\.\d+")


def _caseless_version(new: Item, old: Item, packages: frozenset[str]) -> bool:
    """A version of one package in two sentences, one of them kept whole in a caseless
    script (no anchors, so never replaced on a guess): the older one is flagged when they
    name the same package and another version number."""
    if not (new.anchors and old.anchors) and (theirs := _packages(old)) and packages & theirs:
        return not set(_VERSION_NUMBER.findall(old.value)) <= set(_VERSION_NUMBER.findall(new.value))
    return False


def _another_version(new: Item, old: Item, shared: set[str]) -> bool:
    """Of two version items: a later version of a package both name, in any wording or
    language ("Wir bleiben bei pydantic 2.7.4" / "pydantic läuft jetzt auf 2.8.2"). A
    version sentence states the one in use, so the older one is flagged, never hidden
    (the words around a version are too loose to be sure the subject is one)."""
    named = {m.group(1).lower() for v in (new.value, old.value) for m in _NAMED_VERSION.finditer(v)}
    # (the shared word names the version in one of them, "pydantic 2.7.4"; not a word of
    # the talk around it, "We're on celery 5.3.6" / "We're on boto3 1.34.90")
    olds, news = _VERSION_NUMBER.findall(old.value), _VERSION_NUMBER.findall(new.value)
    # (an older version said later is talk about another place unless a change is said:
    # "CI uses node 20.11.1" / "Locally I have node 18.19.0"; "we rolled node back to 18.19.0")
    older = bool(olds and news) and _numbers(news[0]) < _numbers(olds[0])
    return (bool(shared & named) and _one_package(new.value, old.value, shared & named) and not set(olds) <= set(news)
            and (not older or _says(_CHANGE, new.value) or _says(_UPDATE, new.value) or _says(_OF_THE_PIN, new.value)))


# (a later sentence about the pin itself states the version in use, lower or not: "the pin
# I mentioned for X", "X's lockfile version is", ADR 0110; "locally I have X 18" is not one)
_OF_THE_PIN = re.compile(r"\b(?:pin|pinned|pins|lockfile|lock file|versions?|resolves? to|resolved to)\b", re.I)


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
# (the package a version is of, with or without a word between: "boto3 1.35.2", "boto3 on
# 1.35.2", "moving boto3 to 1.34.90", ADR 0106)
_NAMED_VERSION = re.compile(r"([A-Za-z][\w.-]*[A-Za-z0-9])\s*(?:==|~=|>=|@|\s(?:(?:on|at|to|is|from)\s+)?)\s*v?\d+\.\d+")
