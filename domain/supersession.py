"""Which earlier checklist item a later one replaces (issue 44, ADRs 0083 and 0096). Pure.

``checklist.py`` reads what a sentence states (its kind and its subject anchors); this
module decides, for ``Ledger.merge``, whether a later statement is about the same subject
as an earlier one and so replaces it: a shared anchor set, the same subject said in other
words (a value of the same type and the same key words), or only part of a subject shared,
which marks the earlier item possibly superseded and keeps both. Kept apart because a
reader asking "why was this fact dropped?" looks here, not among the cue tables.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

from .coverage import code_like
from .checklist import _ENTITY, _VALUE_ENTITY, _VERSION_WORDS, _caseless_clause, _caseless_fact
from .cues import (_AMOUNT, _CUES, _DATE, _DONE, _NAME, _UPDATE, AMOUNT, DATE, DECISION, PERSON, RULE, SETTING_TEXT,
                   STATEMENT, TASK, UPDATE, VERSIONED, WORD, _FILLER, _HEDGE, _STOP, _VERSION_ANY, _has_value,
                   subject_words)

Item = Any  # a ledger.LedgerItem (that module imports this one)


def supersede(item: Item, by_key: dict[tuple[str, str], Item], superseded: dict[tuple[str, str], Item],
              replaceable: tuple[str, ...]) -> Item:
    """Move the earlier items about ``item``'s subject from ``by_key`` to ``superseded``,
    keyed by the seq that replaced them; an update takes the kind of the item it
    replaces. Only when the subject matches (ADR 0083): a change that shares part of a
    subject with an earlier value marks that one *possibly superseded* and keeps both;
    a statement with no value of its own ("never exceed it") replaces no value; a change
    that matches nothing may flag a value it names otherwise (``_named_otherwise``).
    (``Ledger.merge``'s step; items are ``LedgerItem``.)"""
    if item.kind == STATEMENT and code_like(item.value):
        return item  # (a line of code or a pasted tool line replaces nothing: "return x * 21 # tweak")
    mine = set(item.anchors)
    carries = _carries_value(item.value) or (item.kind == SETTING_TEXT and _sets_value(item.value))
    packages = _packages(item)  # (a version said in a caseless script, ADR 0106: most items have none)
    # (read once for the item, not for each earlier one: the loop is over every ledger item)
    says_change, may_change = _says(_UPDATE, item.value), carries and bool(_value_types(item.value))
    unmatched: list[tuple[tuple[str, str], Item]] = []  # (no subject in common: ADR 0099's doubt)
    matched = False
    for other_k, other in list(by_key.items()):
        if other.kind == "setting" and other.key in mine and other.seq <= item.seq and f"{other.key}=" not in item.value:
            # (``MAX_WORKERS=12`` is superseded by "Change MAX_WORKERS to 16.")
            del by_key[other_k]
            superseded[other_k] = replace(other, key=f"seq {item.seq}", anchors=(other.key,))
            continue
        if other.seq > item.seq or other.value == item.value or other.kind not in replaceable:
            continue
        if _restated(item.value, other.value):
            # (the same sentence said again behind a tag, "[note] Step 3 of 5 done: …": one
            # item, the newest, no mark; a value said again changes nothing, ADR 0110 amended)
            del by_key[other_k]
            item = replace(item, kind=other.kind if item.kind in (UPDATE, STATEMENT) else item.kind,
                           first_seq=min(item.first_seq, other.first_seq), count=item.count + other.count)
            matched = True
            continue
        if other.seq == item.seq and not (says_change or _CHANGE.search(item.value)):
            # (lines of one message are a list, not a history: forty "PASSED tests/…::test_k"
            # lines replaced one another and each was reported lost; "… Actually, 9090." still is)
            unmatched.append((other_k, other))
            continue
        theirs = set(other.anchors)
        if not mine & theirs:
            if packages and other.doubt is None and _caseless_version(item, other, packages):
                by_key[other_k] = replace(other, doubt=item.seq)  # (flagged: a kept-whole sentence is no guess)
                matched = True
                continue
            # (no shared anchor: the same subject said in other words (ADR 0096), or none)
            if not (carries and other.kind in _VALUE_KINDS and not _two_units(item.anchors, other.anchors)
                    and _rephrased(item.value, other.value)):
                unmatched.append((other_k, other))
                continue
        elif not carries and _carries_value(other.value):
            continue
        elif item.kind == other.kind == VERSIONED and not _one_package(item.value, other.value, mine & theirs):
            # (two packages that share a word: "Python 3.11.9" / "the Python client library is
            # at 0.27.2" — the word qualifies another package there, ADR 0110)
            unmatched.append((other_k, other))
            continue
        elif not _same_subject(mine, theirs, item.anchors, other.anchors) and not (carries and not _two_units(item.anchors, other.anchors)
                                                      and _rephrased(item.value, other.value)):
            # (two versions: only when a package both name is changed, whatever the wording)
            if other.doubt is None and (shared := mine & theirs) and (
                    _another_version(item, other, shared) if item.kind == other.kind == VERSIONED
                    else (says_change or (may_change and len(shared) * 2 >= min(len(mine), len(theirs))
                                          and _new_value(item, other)))
                    # (a thing each qualifies with another word: another service's contact)
                    and not _qualified_apart(_subject_pairs(item.value), _subject_pairs(other.value))):
                by_key[other_k] = replace(other, doubt=item.seq)  # (keep both; say which may be old)
                matched = True
            else:
                unmatched.append((other_k, other))
            continue
        if carries and _types_apart(item.value, other.value):
            # (a value of another type is another fact of the subject, ADR 0110: "the export
            # window is 40 minutes" / "the export window review is on Friday")
            unmatched.append((other_k, other))
            continue
        if _same_values(item.value, other.value):
            # (the same value said again in other words, "Sven Lund is still the release
            # manager": nothing changed, so nothing is marked; both kept)
            unmatched.append((other_k, other))
            continue
        if _apart(item.value, other.value):
            # (two subjects that share words, whichever rule matched them (ADR 0110 amended):
            # "the staging database password" / "the production database password", a
            # setting in two files, one measurement given as the reason of two decisions)
            unmatched.append((other_k, other))
            continue
        if other.kind == TASK and item.kind in (UPDATE, STATEMENT) and not (
                _says(_PROGRESS, item.value) or _did(other.value, item.value)):
            # (work's state changes by a report on it: "GitHub Actions is the CI runner" is
            # no news about "the backfill is sorted, I'll rerun CI", whatever they share)
            unmatched.append((other_k, other))
            continue
        matched = True
        if item.kind in (UPDATE, STATEMENT) and other.kind not in (UPDATE, STATEMENT):
            item = replace(item, kind=other.kind)
        # (a correction replaces what it corrects, and is replaced by the next change,
        # whatever the kinds; a value kind's later value replaces the earlier one's)
        if other.kind == item.kind or "correction" in (item.kind, other.kind) or (
                other.kind in _VALUE_KINDS and item.kind in _VALUE_KINDS):
            del by_key[other_k]
            superseded[other_k] = replace(other, key=f"seq {item.seq}")
    if carries:
        # (every earlier item of that subject and type, not only when no anchor matched:
        # a role said three times in three wordings has two older values, ADR 0110)
        item, slot = _same_slot(item, unmatched, by_key, superseded, replaces=not matched)
        matched = matched or slot
    if not matched and carries and _CHANGE.search(item.value):
        item = _named_otherwise(item, unmatched, by_key, superseded)
    return item


def _same_slot(item: Item, unmatched: list[tuple[tuple[str, str], Item]], by_key: dict[tuple[str, str], Item],
               superseded: dict[tuple[str, str], Item], replaces: bool = True) -> tuple[Item, bool]:
    """A later value of the same type about the same subject, whatever the words around
    it (ADR 0110): no change word, no shared value clause needed. The later item states a
    value of one type (a date, money, a time, a size, a count, a version, a name) that the
    earlier one states another value of, and the two share a *subject phrase*: a content
    word pair of the whole sentence, its values, hedges and reason clause taken out ("the
    max payload I quoted this morning; the rerun gives 12 GB" / "il max payload è di eight
    megabytes"). Of the earlier items that qualify, those sharing the most phrases are the
    ones changed. It replaces the one item when that is the only one, the shared phrase is
    the new item's own subject (its anchors) and each states one value of the type; else
    (the phrase is only somewhere in the sentence, or several items qualify) the earlier
    items are *flagged* possibly superseded, never hidden on that evidence; so are they
    when the item's own subject already matched another item (``replaces`` false: "Owner
    reassigned: billing owner -> X" replaced the billing owner, and shares only its label
    with "Owner reassigned: release manager -> Y"). Returns the item (an update takes the
    kind of what it replaces) and whether anything matched."""
    pairs, values = _subject_pairs(item.value), _typed_values(item.value)
    if item.kind not in _VALUE_KINDS or not (pairs or "version" in values) or (
            item.kind == STATEMENT and code_like(item.value)):
        return item, False  # (code and pasted tool lines are no one's statement: "return x * 21")
    found = []
    for k, o in unmatched:
        if k not in by_key or o.seq >= item.seq or o.kind not in _VALUE_KINDS or _two_units(item.anchors, o.anchors) \
                or (o.kind == STATEMENT and code_like(o.value)):
            continue
        theirs = _typed_values(o.value)
        # (a new value of a type both state: the old value merely repeated changes nothing)
        types = [t for t, vs in values.items() if t in theirs and not vs <= theirs[t]]
        if types == ["version"] and _two_packages(item, o):
            continue  # (one template, two packages: "we're locked to boto3 …" / "… to celery …")
        # (half of the smaller set of phrases at least: one pair of template talk, "takes
        # place", in three is two subjects)
        if types and (shared := _shared_subject(item.value, o.value)) and \
                len(shared) * 2 >= min(len(pairs), len(_subject_pairs(o.value))):
            found.append((len(shared), k, o, types, shared))
        elif "version" in types and (package := _one_package_named(item, o)):
            # (a version's subject is its package, one word: "redis-py comes out as 5.0.8" /
            # "move redis-py off the old pin onto 4.6.0"; flagged only)
            found.append((1, k, o, types, {f"|{package}"}))
    # (two subjects by the rule every route asks, ADR 0110 amended; asked of the few
    # candidates only: the loop above is over every earlier item)
    found = [f for f in found if not _apart(item.value, f[2].value)]
    if not found:
        return item, False
    best = max(f[0] for f in found)
    top = [f for f in found if f[0] == best]
    for _, k, o, types, shared in top:
        theirs = _typed_values(o.value)
        if replaces and len(top) == 1 and shared & set(item.anchors) & set(o.anchors) and all(len(values[t]) == 1 == len(theirs[t]) for t in types):
            del by_key[k]
            superseded[k] = replace(o, key=f"seq {item.seq}")
            if item.kind in (UPDATE, STATEMENT) and o.kind not in (UPDATE, STATEMENT):
                item = replace(item, kind=o.kind)
        elif o.doubt is None:
            by_key[k] = replace(o, doubt=item.seq)
    return item, True


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
    for p in (_NAME, _VALUE_ENTITY, _PRODUCT):
        for m in p.finditer(sentence):
            v = m.group(0).strip().casefold()
            if not any(v in d or d in v for d in dates):  # ("Friday" is a date, not a name)
                out.setdefault("name", set()).add(v)
    # (one value said once: "Fatima Okafor", not also "fatima")
    return {k: frozenset(v for v in vs if not any(v != w and v in w for w in vs)) for k, vs in out.items()}


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


_SCOPE = (re.compile(r"^\W*(?:for|in|on)\s+([A-Za-z][\w-]*)\s*,", re.I),
          re.compile(r"\b(?:for|in|on)\s+(?:the\s+)?([A-Za-z][\w-]*)\s*[.!]?\s*$", re.I))
# (talk, not a place: "For now, …", "In short, …", "… for the record.")
_NO_SCOPE = frozenset("""now example instance reference context clarity completeness once sure today tomorrow
general short practice fact particular theory total summary record time reflection balance top addition""".split())


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


def _named_otherwise(item: Item, unmatched: list[tuple[tuple[str, str], Item]],
                     by_key: dict[tuple[str, str], Item], superseded: dict[tuple[str, str], Item]) -> Item:
    """A change that names its subject with other words than the value it changes (ADR
    0099): "the licence budget is $3,400 a month" / "actually, what procurement signed
    off is now $5,800 a month". It says it changes something and carries a value of the
    same type as an earlier item of the same kind (an update: of any value kind), but no
    anchor and no rephrasing matched. A current value wrongly hidden is a loss, so the
    earlier value is *flagged* possibly superseded, never hidden on this evidence: the
    ones that share most of their subject words with the change, or the one such value
    there is when the change is said outright and shares a subject word with it. Only
    when the change also shares most of the old item's subject words and names the old
    value as what it changes from ("moved the licence budget from $3,400 to $5,800") is
    it replaced: a value merely repeated ("my flight moved from March 3 to March 5")
    is about another subject, and a hidden current value would be a silent loss."""
    types = _value_types(item.value) - {"name"} or _value_types(item.value)
    mine = _key_words(_NAME.sub(" ", item.value))  # (a person's name is the value, never the subject)
    candidates = [(k, o, _key_words(_NAME.sub(" ", o.value))) for k, o in unmatched
                  if o.kind in _VALUE_KINDS and o.seq < item.seq and o.doubt is None
                  and (o.kind == item.kind or bool({UPDATE, STATEMENT, "correction"} & {o.kind, item.kind}))
                  and not _two_units(item.anchors, o.anchors) and types & _value_types(o.value)
                  and not _caseless_fact(o.value) and (k in by_key)]
    named = [(k, o) for k, o, theirs in candidates
             if len(mine & theirs) * 2 > len(theirs) and _names_old_value(item.value, o.value)
             and not _apart(item.value, o.value)]  # (two subjects: flagged at most, ADR 0110 amended)
    if len(named) == 1:
        (k, o), = named
        del by_key[k]
        superseded[k] = replace(o, key=f"seq {item.seq}")
        return replace(item, kind=o.kind) if item.kind in (UPDATE, STATEMENT) else item
    # (more than half of the smaller set of subject words: one verb or one generic noun
    # in common, "owns" or "budget", is two subjects)
    shared = [(k, o) for k, o, theirs in candidates if len(mine & theirs) * 2 > min(len(mine), len(theirs))]
    # (the one value of that kind and type there is: only on a change said outright, not
    # on "now" alone — "the parser is faster now, 40 ms a file" changes no batch runtime —
    # and about something the old value is about: "the team barbecue is now on June 12"
    # changes no contract renewal)
    alone = [(k, o) for k, o, theirs in candidates if mine & theirs] \
        if len(candidates) == 1 and _CHANGE.search(_NOW.sub(" ", item.value)) else []
    for k, o in shared or alone:
        by_key[k] = replace(o, doubt=item.seq)
    return item


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
# (the package a version is of, with or without a word between: "boto3 1.35.2", "boto3 on
# 1.35.2", "moving boto3 to 1.34.90", ADR 0106)
_NAMED_VERSION = re.compile(r"([A-Za-z][\w.-]*[A-Za-z0-9])\s*(?:==|~=|>=|@|\s(?:(?:on|at|to|is|from)\s+)?)\s*v?\d+\.\d+")


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


def stated_text(summary: str) -> str:
    """The summary without its superseded-notes: a note names the new value, it does not state it."""
    return _SUPERSEDED_NOTE.sub("", summary)


_SUPERSEDED_NOTE = re.compile(r" \(superseded (?:by [^()\n]* )?at seq \d+\)")


MARK_PREFIX = 48  # a superseded sentence is found by its opening: a summary line may clip it
_MARKED = re.compile(r"\(superseded at seq \d+\) $")


def mark_superseded(text: str, ledger: Any) -> tuple[str, int]:
    """``text`` with each value the ``ledger`` (a ``ledger.Ledger``) holds as superseded
    marked where the summary still states it, and how many marks were set."""
    current = {i.key: i for i in ledger.items if i.key is not None}
    marked = 0
    for old in ledger.superseded:
        if old.anchors or str(old.key).startswith("seq "):  # (a sentence; its key names the seq that replaced it)
            # (an anchorless one too: a same-slot replacement, ADR 0110, left "The release
            # is on March 3." unmarked in the Objective)
            # (marked before it: its value may be in its first half; not a current one alike)
            note, head = f"(superseded at {old.key}) ", old.value[:MARK_PREFIX]
            # (nor inside a current one that quotes it: "[note] Step 3 of 5 done: …")
            alike = [(i.value, i.value.find(head)) for i in ledger.items if head in i.value]
            parts, last, n = [], 0, 0
            for m in re.finditer(re.escape(head), text):
                if not _MARKED.search(text, max(0, m.start() - 40), m.start()) and not any(
                        at <= m.start() and text.startswith(v, m.start() - at) for v, at in alike):
                    parts += [text[last:m.start()], note]
                    last, n = m.start(), n + 1
            text = "".join(parts) + text[last:]
            marked += n
            continue
        new = current.get(old.key)
        if new is None or new.value == old.value or old.value not in text:
            continue
        note = f"{old.value} (superseded by {new.value} at seq {new.seq})"
        if note in text:
            continue
        pattern = re.compile(re.escape(old.value) + r"(?![^\s,;'\"`)])(?! \(superseded)")
        text, n = pattern.subn(lambda _m: note, text)
        marked += n
    text, n = _mark_doubted(text, ledger.items)
    return text, marked + n


def still_stated(superseded: tuple[Item, ...], text: str) -> tuple[Item, ...]:
    """The replaced values a checkpoint must carry (ADR 0110): those its summary ``text``
    still quotes, which the next summary, built on this one, may quote again and must mark
    again. A replaced value the summary no longer states cannot come back into a later
    summary (the messages that said it are covered; one that says it again makes it
    current again), and its loss was reported when it left (ADR 0107); carrying it in
    every later record only grows the store (35 of 45.6 MB in a 220-turn run at 2K)."""
    return tuple(i for i in superseded if (i.value[:MARK_PREFIX] if i.anchors else i.value) in text)


def _mark_doubted(text: str, items: Any) -> tuple[str, int]:
    """``text`` with each sentence a later one may have replaced (an item's ``doubt``)
    flagged wherever the summary quotes it (ADR 0110): its checklist line says so, and so
    must a section that quotes the same sentence ("Latest request: ..."), or the old value
    reads as current there. Only a value kind's sentence with a value: a routine request
    flagged as an update ("use a dataclass instead of the dict") marks no quote."""
    marked = 0
    for item in items:
        if item.doubt is None or len(item.value) < 12 or item.kind not in _VALUE_KINDS or not _carries_value(item.value):
            continue
        note = f" (possibly superseded at seq {item.doubt})"
        parts, last = [], 0
        for m in re.finditer(re.escape(item.value[:MARK_PREFIX]), text):
            end = text.find("\n", m.end())
            end = end if end >= 0 else len(text)
            if m.start() < last or DOUBT_NOTE in text[m.end():end]:
                continue  # (its checklist line, or marked already)
            # (at the end of the quoting line, after its citation: a note between two quoted
            # sentences would read as the next one's, as a superseded mark does)
            at = end
            parts += [text[last:at], note]
            last = at
            marked += 1
        text = "".join(parts) + text[last:]
    return text, marked


DOUBT_NOTE = "possibly superseded"
