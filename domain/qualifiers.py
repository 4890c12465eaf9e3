"""Whether two sentences about one thing are about two (issue 44, ADR 0110 amended): a
qualifier each gives the same noun, a file or path each names, a scope each opens or
closes with, reasons that share no word. Pure: ``supersession.py`` asks it before any
replacement; such a pair is flagged at most, never replaced.
"""

from __future__ import annotations

import functools
import re

from .cues import (_FILLER, _STOP)
from .subjects import _REASON_SPAN, _key_words, _said_values


@functools.lru_cache(maxsize=16384)
def _apart(new: str, old: str) -> bool:
    """Two sentences about two subjects, however many anchors they share (ADR 0110
    amended): a phrase each qualifies with another word ("staging database" / "production
    database", "web app" / "admin app"), each names its own file ("in config/prod.toml" /
    "in config/staging.toml"), or the values are the reasons of two decisions ("We cache
    the catalog because the upstream p99 is 800 ms" / "We batch the writes because ...")."""
    heads_new, heads_old = _noun_heads(new), _noun_heads(old)
    if any(heads_new[h] - heads_old[h] and heads_old[h] - heads_new[h] for h in heads_new.keys() & heads_old.keys()):
        return True
    scope_new, scope_old = _scopes(new), _scopes(old)
    if scope_new and scope_old and not scope_new & scope_old:
        return True  # ("For staging, …" / "For production, …"; "… 20 for prod." / "… 5 for staging.")
    paths_new, paths_old = _paths(new), _paths(old)
    if paths_new and paths_old and not paths_new & paths_old:
        return True
    return _reasons_apart(new, old)


_PATH = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w-]+(?:\.\w+)?|\b[\w-]+\.(?:toml|ya?ml|json|ini|cfg|conf|env|py|ts|js|"
                   r"go|rs|sql|sh|properties|lock|tf)\b")


@functools.lru_cache(maxsize=16384)
def _scopes(sentence: str) -> frozenset[str]:
    """Where a whole sentence holds, said as one word opening it before a comma or closing
    it: "For staging, the API key …", "Set POOL_SIZE to 20 for prod."."""
    return frozenset(m.group(1).lower() for p in _SCOPE for m in p.finditer(sentence)
                     if m.group(1).lower() not in _STOP and m.group(1).lower() not in _NO_SCOPE)


#: An environment's name (ADR 0114): a place mid-sentence, and part of a setting's key.
ENVIRONMENTS = "prod|production|staging|stage|dev|development|test|testing|qa|uat|local|ci|preview|sandbox|beta"
_SCOPE = (re.compile(r"^\W*(?:for|in|on)\s+([A-Za-z][\w-]*)\s*,", re.I),
          re.compile(r"\b(?:for|in|on)\s+(?:the\s+)?([A-Za-z][\w-]*)\s*[.!]?\s*$", re.I),
          # (or closing a clause mid-sentence: "... is 8 in prod; ..." / "... is 2 in staging; ...",
          # ADR 0114; only an environment's name: "on paper;", "for users;", "in reality;" are talk)
          re.compile(rf"\b(?:for|in|on)\s+({ENVIRONMENTS})\s*[;\u2014\u2013]"))
# (talk, not a place: "For now, …", "In short, …", "… for the record.")
_NO_SCOPE = frozenset("""now example instance reference context clarity completeness once sure today tomorrow
general short practice fact particular theory total summary record time reflection balance top addition
place parallel purpose turn full advance case progress principle""".split())


@functools.lru_cache(maxsize=16384)
def _paths(sentence: str) -> frozenset[str]:
    return frozenset(_PATH.findall(sentence))


@functools.lru_cache(maxsize=16384)
def _noun_heads(sentence: str) -> dict[str, set[str]]:
    """The word that qualifies each noun after an article ("the staging database", "for
    the web app": "database" by "staging", "app" by "web"), by that noun. Only after an
    article: a verb before a noun qualifies nothing ("CI uses node" / "we rolled node
    back"), and neither does a word of change ("the new timeout")."""
    out: dict[str, set[str]] = {}
    for m in _NOUN_PHRASE.finditer(sentence):
        x, h = m.group(1) or m.group(2), m.group(3)
        if all((len(w) > 2 or w.isupper()) and w.lower() not in _STOP and w.lower() not in _FILLER for w in (x, h)) \
                and x.lower() not in _NOT_QUALIFIERS:
            out.setdefault(h.lower().removesuffix("'s"), set()).add(x.lower().removesuffix("'s"))
    return out


# (after an article, or a possessive opening the sentence: "Staging's database password …";
# any other first word may be a verb, "Bump boto3 to …" / "Bumped boto3 to …")
_NOUN_PHRASE = re.compile(r"(?:\b(?:[Tt]he|[Aa]n?|[Oo]ur|[Tt]heir|[Yy]our|[Mm]y|[Tt]his|[Tt]hat|[Ii]ts)\s+"
                          r"([A-Za-z][\w-]*(?:'s)?)|^\W*([A-Za-z][\w-]*'s))\s+([A-Za-z][\w-]*(?:'s)?)")


_NOT_QUALIFIERS = frozenset("""new old current latest previous earlier updated revised final actual real correct right
same proper agreed official usual default whole other""".split())


def _reasons_apart(new: str, old: str) -> bool:
    """Each states its values only in a reason clause, after a main clause of other words:
    the reasons of two decisions, not two values of one measure."""
    a, b = _REASON_SPAN.search(new), _REASON_SPAN.search(old)
    if not (a and b) or _said_values(new[:a.start()]) or _said_values(old[:b.start()]):
        return False
    if not (_said_values(a.group(0)) and _said_values(b.group(0))):
        return False
    words_a, words_b = _key_words(new[:a.start()]), _key_words(old[:b.start()])
    return bool(words_a and words_b) and not words_a & words_b
