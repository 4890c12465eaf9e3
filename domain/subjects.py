"""What supersession asks of two sentences (issue 44, ADRs 0083, 0096, 0106, 0110). Pure.

The predicates ``supersession.py`` decides with: the types of the values a sentence
states (a date, money, a time, a size, a count, a version, a name), its subject phrases
and the words that qualify them, the packages a version belongs to, whether a sentence
says the same value again or says a change. Kept apart from the decision so that its
steps read in order there.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .checklist import _ENTITY, _VALUE_ENTITY, _caseless_clause, _caseless_fact
from .cues import (_AMOUNT, _CUES, _DATE, _DONE, _NAME, _UPDATE, AMOUNT, DATE, DECISION, PERSON, RULE, SETTING_TEXT,
                   STATEMENT, TASK, UPDATE, VERSIONED, WORD, _FILLER, _HEDGE, _STOP, _VERSION_ANY, _has_value,
                   subject_words)
Item = Any  # a ledger.LedgerItem (that module imports this one)


def _types_apart(new: str, old: str) -> bool:
    """Both state typed values, and none of one type."""
    a, b = _typed_values(new), _typed_values(old)
    return bool(a) and bool(b) and not a.keys() & b.keys()


@functools.lru_cache(maxsize=16384)
def _typed_values(sentence: str) -> dict[str, frozenset[str]]:
    """The values a sentence states, by type: "date", "money", "time", "size", "count",
    "version", "name" (people, teams, products)."""
    out: dict[str, set[str]] = {}
    for m in _DATE.finditer(sentence):
        out.setdefault("date", set()).add(m.group(0).casefold())
    for m in _AMOUNT.finditer(sentence):
        t = m.group(0).lower()
        kind = ("money" if t[:1] in "$€£" else "time" if _TIME_UNIT.search(t) else
                "size" if _SIZE_UNIT.search(t) else "count")
        out.setdefault(kind, set()).add(" ".join(t.split()))
    for m in _VERSION_NUMBER.finditer(sentence):
        out.setdefault("version", set()).add(m.group(0))
    dates = out.get("date", set())
    if _caseless_clause(sentence):
        # (in a sentence said partly in a caseless script, a Latin name within it is a
        # value: "ORM は Peewee に決めました", "HTTP client 最后定了 urllib3", ADR 0110)
        for m in _CASELESS_NAME.finditer(sentence):
            out.setdefault("name", set()).add(m.group(0).casefold())
    # (a quoted message or status names no one: 'shows "Service Unavailable"'; a chosen one does)
    named = _QUOTED_TEXT.sub(lambda q: q.group(0) if _QUOTED_NAME.search(sentence, q.start() - 12, q.end()) else
                             " " * len(q.group(0)), sentence) if '"' in sentence or "\u201c" in sentence else sentence
    for p in (_NAME, _VALUE_ENTITY, _PRODUCT, _QUOTED_NAME):
        for m in p.finditer(named):
            v = m.group(1 if p is _QUOTED_NAME else 0).strip().casefold()
            if not any(v in d or d in v for d in dates):  # ("Friday" is a date, not a name)
                out.setdefault("name", set()).add(v)
    # (one value said once: "Fatima Okafor", not also "fatima")
    return {k: frozenset(v for v in vs if not any(v != w and v in w for w in vs)) for k, vs in out.items()}


_LABEL_OPENER = re.compile(r"(?<=: )[A-Z](?=[a-z]+ (?![a-z]{1,2}\b)[a-z]{3,}\b)")
# (a capitalised word quoted as a value is a name: `cache = "Valkey"`, ADR 0114)
# (only a quote that is chosen or assigned: a quoted log line or status, 'printed "Done"',
# 'shows "Service Unavailable"', is no choice; ADR 0114 amended)
_QUOTED_TEXT = re.compile(r"[\"\u201c][^\"\u201c\u201d\n]{1,80}[\"\u201d]")
_QUOTED_NAME = re.compile(r"(?:[=:]|\b(?:is|to|with|use|using|as|be|becomes|pick|picked|chose|choose|on|for)) ?"
                          r"[\"\u201c]([A-Z][\w.-]*\w(?: [A-Z][\w.-]*\w)*)(?=[\"\u201d])")
_CASELESS_NAME = re.compile(r"(?<![\w.-])(?:[A-Z][a-z]+(?:[ -]?[A-Z][A-Za-z]+)*|[a-z]{3,}\d+)(?![\w.-])")


@functools.lru_cache(maxsize=16384)
def _subject_pairs(sentence: str) -> dict[str, frozenset[str]]:
    """The subject phrases of a whole sentence once its values, hedges and reason clauses
    are taken out: each pair of content words in a row, with the words that qualify it
    (the content word before it, "" for none), and its acronyms ("the ORM"). A subject
    may be said anywhere in the sentence, before the value or after it ("goes to 45
    seconds; the test timeout, I mean"); a reason runs to the next clause mark only ("as
    it is cheap (this is the cache layer)")."""
    s = _REASON_SPAN.sub(" | ", _HEDGE.sub(" | ", sentence))
    acronyms = {w.lower() for w in re.findall(r"\b[A-Z]{2,6}s?\b", s) if not _UNIT_WORD.fullmatch(w)}
    s = _DATE.sub(" | ", _AMOUNT.sub(" | ", _NAME.sub(" | ", _VERSION_ANY.sub(" | ", s))))
    # (a capital opening the clause after a label is no name: "Invite re-sent: Contract
    # renewal, August 27" is about the contract renewal, ADR 0114; "Owner: Ana" still is one)
    s = _LABEL_OPENER.sub(lambda m: m.group(0).lower(), s)
    s = s[:1] + _VALUE_ENTITY.sub(" | ", s[1:])
    # (every token, "I" and a word of a caseless script too: none of them joins two words into a pair)
    words = [w.lower() for w in re.findall(rf"{WORD}|[^\W_]+|[|;:,.!?()\[\]\u2014\u2013]|\s-\s", s)]
    words = [w if len(w) > 2 and _CONTENT.fullmatch(w) and w not in _STOP and w not in _FILLER and w not in _GENERIC
             else "|" for w in words]
    out: dict[str, set[str]] = {a: {""} for a in acronyms - {"tbd", "ok"}}
    for n in range(len(words) - 1):
        a, b = words[n], words[n + 1]
        if "|" not in (a, b) and a != b:
            out.setdefault(f"{a} {b}", set()).add(words[n - 1] if n and words[n - 1] != "|" else "")
    return {k: frozenset(v) for k, v in out.items()}


def _shared_subject(new: str, old: str) -> set[str]:
    """The subject phrases two sentences share, but not one that each qualifies with
    another word ("bundle size limit" / "upload size limit" share "size limit": two
    limits)."""
    a, b = _subject_pairs(new), _subject_pairs(old)
    if _qualified_apart(a, b):
        return set()
    return {p for p in a.keys() & b.keys() if "" in a[p] or "" in b[p] or a[p] & b[p]}


def _qualified_apart(a: dict[str, frozenset[str]], b: dict[str, frozenset[str]]) -> bool:
    """Each sentence names a thing the other names with another word before it: "the
    on-call contact for the billing service" / "for the search service the on-call
    contact is ..." (a person of another service), "upload size" / "bundle size"."""
    heads_a, heads_b = _by_head(a), _by_head(b)
    return any(heads_a[h] - heads_b[h] and heads_b[h] - heads_a[h] for h in heads_a.keys() & heads_b.keys())


def _restated(new: str, old: str) -> bool:
    """The same sentence said again, behind a tag or not ("[note] Step 3 of 5 done: the
    cutover." / "Step 3 of 5 done: the cutover."), or quoted whole in the later one with
    no word of change, negation or staleness around it ("Status: step 3 of 5 done, the
    cutover."): no change of its value, and the later one states all of it."""
    if _bare(new) == _bare(old):
        return True
    a, b = _tokens(new), _tokens(old)
    at = a.find(b) if b.count(" ") >= 4 else -1  # (three words at least: " w1 w2 w3 ")
    if at < 0:
        return False
    extra = a[:at] + a[at + len(b) - 1:]
    return not (_NEGATED.search(extra) or _CHANGE.search(extra) or _UPDATE.search(extra) or _STALE.search(extra))


# (said of the quoted sentence: it no longer holds)
_STALE = re.compile(r"\b(?:wrong|incorrect|outdated|stale|obsolete|old|was|were|used to|previously|formerly|earlier|"
                    r"until|before|except|but|then|later)\b")


@functools.lru_cache(maxsize=16384)
def _tokens(sentence: str) -> str:
    """The sentence's words, case and punctuation aside, each between spaces."""
    return " " + " ".join(_WORD_OR_SIGN.findall(sentence.casefold())) + " "


_WORD_OR_SIGN = re.compile(r"[^\W_]+|[$\u20ac\u00a3%]")


@functools.lru_cache(maxsize=16384)
def _bare(sentence: str) -> str:
    return " ".join(_TAGS.sub("", sentence).casefold().split()).rstrip(".!;: ")


# (tags and a one- or two-word label before the sentence: "[pA:78] ", "Reminder: ")
_TAGS = re.compile(r"^(?:\s*\[[^\[\]\n]{1,40}\])*\s*(?:[A-Za-z]+(?: [A-Za-z]+)?:\s+)?")


def _same_values(new: str, old: str) -> bool:
    """The later sentence states the values the earlier one states, no other and no change
    of them ("The release manager is Sven Lund." / "Sven Lund is still the release
    manager."): a value said again, not replaced."""
    values = _whole_values(new)
    return bool(values) and values == _whole_values(old) and not _says(_CHANGE, new) and not _says(_UPDATE, new) \
        and not _says(_NEGATED, new)


def _whole_values(sentence: str) -> frozenset[str]:
    vs = _said_values(sentence)  # (one value said once: "mei lin", not also "mei")
    return frozenset(v for v in vs if not any(v != w and v in w.split() for w in vs))


_NEGATED = re.compile(r"\b(?:not|no|never|none|nobody|no one)\b|n't\b", re.I)


def _by_head(pairs: dict[str, frozenset[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in pairs:
        if " " in p:
            x, h = p.split(" ", 1)
            out.setdefault(h, set()).add(x)
    return out


_CONTENT = re.compile(WORD)
_UNIT_WORD = re.compile(r"(?:[KMGT]i?B|MS|S)", re.I)


# (a reason clause: from its word to the next clause mark, not to the sentence's end)
_REASON_SPAN = re.compile(r"\b(?:because|since|given that|due to|so that|as it|as its|as they)\b[^;()\u2014\u2013]*",
                          re.I)


def _new_value(new: Item, old: Item) -> bool:
    """A later value of the same sort said of part of the same subject, in any wording or
    language ("Sven Lund holds the release manager role" / "Le nouveau release manager,
    c'est Tomasz Kowal"; "bundle size limit stays under 250 KB" / "bundle size limit reset
    to 180 KB"): how people change a fact need not name the change. Only part of the
    subject is shared (half of the smaller anchor set, the caller asks: one word of talk,
    "every PR", in four is two subjects), so the older value is flagged, never hidden
    (ADR 0106)."""
    if old.kind not in _VALUE_KINDS or not (new.kind == old.kind or {new.kind, old.kind} & {UPDATE, STATEMENT}):
        return False
    types = _value_types(new.value) & _value_types(old.value)
    return bool(types) and bool(_carries_value(old.value)) and bool(_said_values(new.value) - _said_values(old.value))


@functools.lru_cache(maxsize=16384)
def _said_values(sentence: str) -> frozenset[str]:
    """The values a sentence states, names and products included ("Valkey", "SQLAlchemy
    Core"), cased as said: a later sentence with none of its own repeats the old value."""
    return frozenset(m.group(0).strip().casefold() for p in (_AMOUNT, _DATE, _NAME, _VALUE_ENTITY, _VERSION_NUMBER)
                     for m in p.finditer(sentence))


@functools.lru_cache(maxsize=4096)
def _sets_value(sentence: str) -> bool:
    """A named setting given a value in words ("Scratch the earlier CACHE_BACKEND, make it
    redis."): the value is whatever follows, lower case or not."""
    return bool(_SETS.search(sentence))


_SETS = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b[^.;?!]{0,40}?(?:[:=]|\b(?:to|is|be|it|read|reads|say|says|at)\b)"
                   r"\s*[\w./:-]+")


def _names_old_value(new: str, old: str) -> bool:
    """The change names the old value as what it changes from, and a new value besides:
    "moved from March 3 to March 10" (a value merely repeated names nothing it replaces)."""
    olds = {v.casefold() for v in _values(old)}
    news = [v.casefold() for v in _values(new)]
    if not olds or not olds <= set(news) or all(v in olds for v in news):
        return False
    return any(re.search(rf"\bfrom\s+{re.escape(v)}(?:\s+[\w-]+){{0,3}}?\s+(?:to|into)\b", new, re.I) for v in olds)


def _values(sentence: str) -> list[str]:
    return [m.group(0).strip() for p in (_AMOUNT, _DATE, _NAME) for m in p.finditer(sentence)]


_NOW = re.compile(r"(?<!\bis )(?<!\bare )(?<!'s )(?<!'re )\bnow\b(?! is\b)(?! are\b)", re.I)
# (a change said outright, ADR 0099: general English words of change and correction; alone
# they decide nothing, they allow a doubt flag on a value of the same kind and type)
_CHANGE = re.compile(r"\b(?:actually|correction|update[sd]?|chang(?:e|ed|es|ing)|mov(?:e|ed|es|ing)|now|instead|"
                     r"no longer|not anymore|any ?more|switch(?:ed|es|ing)?|swapp?(?:ed)?|replac(?:e|ed|es|ing)|"
                     r"revised|rescheduled|postponed|pushed (?:back|out)|brought forward|bumped|raised|lowered|"
                     r"reassigned|handed (?:over|off)|took over|taking over|from now on|going forward|scrap that|"
                     r"scratch that|turns out|rather than)\b", re.I)


def _rephrased(new: str, old: str) -> bool:
    """The same subject in other words (ADR 0096): "Thursday works for the demo" and
    "the demo moved to Friday" share no content bigram. Both carry a value of the same
    type (a date and a date, an amount of money and another), and their subject words
    (stemmed, verbs of change and hedges out, "cap" read as "limit") are the same set; or
    one set holds the other and the new sentence says it changes something. Two limits
    of different things ("upload size limit", "bundle size limit") stay two."""
    a, b = _key_words(new), _key_words(old)
    if not a or not b or not a & b or not _value_types(new) & _value_types(old):
        return False
    return a == b or ((a < b or b < a) and bool(_UPDATE.search(new)))


@functools.lru_cache(maxsize=4096)
def _key_words(sentence: str) -> frozenset[str]:
    if _caseless_fact(sentence):
        return frozenset()  # (no guess about a script no rule reads: kept whole, ADR 0091)
    words = (w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w
             for w in subject_words(_VALUE_ENTITY.sub(" ", sentence)))
    return frozenset(_SAME_AS.get(w, w) for w in words if w not in _GENERIC)


#: Verbs of change and of being: how a value is said, not what it is about.
_GENERIC = frozenset("""moved slipped changed dropped rose grew became shifted pushed bumped raised lowered ended
turned came went got back works work gets goes looks sounds seems stays stands land lands landed slid set
scheduled planned happening happen booked pencilled penciled fine plenty enough good okay agreed confirmed
going sits held holds updated bumped confirmed said says heard told""".split())
_SAME_AS = {"cap": "limit", "capped": "limit", "limited": "limit", "ceiling": "limit", "max": "limit", "maximum": "limit", "cutoff": "deadline",
            "licence": "license", "licenses": "license"}


@functools.lru_cache(maxsize=4096)
def _value_types(sentence: str) -> frozenset[str]:
    """What sort of value a sentence carries: a date, money, a time, a size, a count, a name."""
    out = set()
    if _DATE.search(sentence):
        out.add("date")
    for m in _AMOUNT.finditer(sentence):
        t = m.group(0).lower()
        out.add("money" if t[:1] in "$€£" else "time" if _TIME_UNIT.search(t) else
                "size" if _SIZE_UNIT.search(t) else "count")
    if _NAME.search(sentence) or _PRODUCT.search(sentence) or _ENTITY.search(sentence[1:]):
        out.add("name")
    if not out and re.search(r"(?<![A-Za-z0-9_])\d", sentence):
        out.add("count")
    return frozenset(out)


# ("30s" is a time; "eight megabytes" and "3 replicas" end in an s and are none, ADR 0106)
_TIME_UNIT = re.compile(r"(?:ms|milli|sec|\d\s?s$|min|hour|hr|day|week|month|year)", re.I)
_SIZE_UNIT = re.compile(r"(?:[kmgt]i?b$|byte)", re.I)


@functools.lru_cache(maxsize=4096)  # (asked of every earlier item for each new one: Ledger.merge)
def _carries_value(sentence: str) -> bool:
    # (a product name ending in capitals is a value as in ``anchors``: "it's RabbitMQ now"
    # replaces the old choice)
    return _has_value(sentence) or bool(_ENTITY.search(sentence[1:]) or _PRODUCT.search(sentence))


_PRODUCT = re.compile(r"\b[A-Z][a-z]+[A-Z]{2,}\w*\b")


def _did(task: str, report: str) -> bool:
    """The report says the task's own verb in the past: "Still to do: rotate the API keys"
    / "The API keys were rotated this morning" (a done word in the task's words)."""
    done = {w.lower() for w in re.findall(r"[A-Za-z]{3,}ed\b", report)}
    verbs = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", task)}
    return any(d[:-1] in verbs or d[:-2] in verbs or (len(d) > 5 and d[-3] == d[-4] and d[:-3] in verbs)
               for d in done)


#: A report on work: a done word or a task cue (a step count, "still to do", "blocked on").
_PROGRESS = re.compile(f"{_DONE.pattern}|{dict(_CUES)[TASK].pattern}", re.I)
_VERSION_NUMBER = re.compile(r"\d+\.\d+(?:\.\d+)?")


#: Kinds that state one value of a subject: a later value of the same subject replaces
#: the earlier one whichever kind the extractor gave each sentence.
_VALUE_KINDS = frozenset((RULE, "constraint", PERSON, DATE, AMOUNT, VERSIONED, SETTING_TEXT, STATEMENT, DECISION,
                          UPDATE))


def _same_subject(a: set[str], b: set[str], a_anchors: tuple[str, ...], b_anchors: tuple[str, ...]) -> bool:
    """More than half of the smaller anchor set shared ("queue backend" in both, whatever
    the new value adds); "upload size limit" and "bundle size limit" share only "size
    limit" of two anchors each and stay two subjects."""
    if _two_units(a_anchors, b_anchors):  # (gen_3.pb.go and gen_13.pb.go: two files)
        return False
    return bool(a and b) and len(a & b) * 2 > min(len(a), len(b))


def _two_units(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Each names its own file, step or module, and not the same one (of two items'
    anchors)."""
    ids_a, ids_b = _unit_words(a), _unit_words(b)
    return bool(ids_a and ids_b and not ids_a & ids_b)


@functools.lru_cache(maxsize=4096)  # (of the one new item, asked again for each earlier one)
def _says(pattern: re.Pattern[str], sentence: str) -> bool:
    return bool(pattern.search(sentence))


@functools.lru_cache(maxsize=16384)  # (asked for every earlier item at each merge: a session
# with 2,000 distinct requests made 2 million pairs, 18 s of regex searches at one compaction)
def _unit_words(anchors: tuple[str, ...]) -> frozenset[str]:
    return frozenset(x for x in anchors if _ID.search(x))


_ID = re.compile(r"[/_.\d]")
