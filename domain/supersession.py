"""Which earlier checklist item a later one replaces (issue 44, ADRs 0083 and 0096). Pure.

``checklist.py`` reads what a sentence states (its kind and its subject anchors); this
module decides, for ``Ledger.merge``, whether a later statement is about the same subject
as an earlier one and so replaces it: a shared anchor set, the same subject said in other
words (a value of the same type and the same key words), or only part of a subject shared,
which marks the earlier item possibly superseded and keeps both. Kept apart because a
reader asking "why was this fact dropped?" looks here, not among the cue tables.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .coverage import code_like
from .checklist import _caseless_fact
from .cues import (_NAME, _UPDATE, SETTING_TEXT,
                   PREFERENCE, STATEMENT, TASK, UPDATE, VERSIONED)
from .subjects import (
    Item, _CHANGE, _NOW, _PROGRESS, _VALUE_KINDS,
    _carries_value, _did, _key_words, _names_old_value, _new_value, _qualified_apart,
    _rephrased, _restated, _same_subject, _same_values, _says, _sets_value,
    _shared_subject, _subject_pairs, _two_units, _typed_values, _types_apart, _value_types,
)
from .qualifiers import ENVIRONMENTS, _PATH, _apart, _paths
from .valueforms import _IN, same_setting
from .versions import (
    _another_version, _caseless_version, _one_package, _one_package_named, _packages, _said, _two_packages,
)


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
        name, _, where = (other.key or "").partition(_IN)
        if other.kind == "setting" and name in mine and other.seq <= item.seq and f"{name}=" not in item.value \
                and not (where and where != scoped(name, item.value, item.value.find(name)).partition(_IN)[2] != ""):
            # (``MAX_WORKERS=12`` is superseded by "Change MAX_WORKERS to 16."; not by one
            # said of another file, ADR 0114)
            del by_key[other_k]
            superseded[other_k] = replace(other, key=f"seq {item.seq}", anchors=(name,))
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
        elif item.kind == other.kind == VERSIONED and (not _one_package(item.value, other.value, mine & theirs)
                                                        or _two_pinned(item.value, other.value)):
            # (two packages that share a word: "Python 3.11.9" / "the Python client library is
            # at 0.27.2" — the word qualifies another package there, ADR 0110; or one template
            # for two, "ran pip install 'numpy==…'" / "… 'scipy==…'", ADR 0114)
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
        elif item.kind in _WORDED_KINDS and other.kind in _VALUE_KINDS and other.doubt is None and carries \
                and _another_value(item.value, other.value) and _one_subject(item.value, other):
            # (a new value said inside a report or a wish, "retested; the limit sits at 40",
            # was matched and changed nothing: the old value read as current, ADR 0114)
            by_key[other_k] = replace(other, doubt=item.seq)
    if carries:
        # (every earlier item of that subject and type, not only when no anchor matched:
        # a role said three times in three wordings has two older values, ADR 0110)
        item, slot = _same_slot(item, unmatched, by_key, superseded, replaces=not matched)
        matched = matched or slot
    if not matched and carries and _CHANGE.search(item.value):
        item = _named_otherwise(item, unmatched, by_key, superseded)
    return item


def retire_sentences(old: Item, new: Item, by_key: dict[tuple[str, str], Item],
                     superseded: dict[tuple[str, str], Item]) -> None:
    """The sentences that set ``old`` (a setting ``new`` replaced), replaced with it: their
    reason clauses differ ("… the ingest jobs pile up" / "… the billing jobs pile up"), so
    no subject rule matched and the old sentence stayed on the checklist unmarked (ADR 0114
    amended). Only a sentence of ``old``'s own message that names ``old``'s file or none."""
    if old.value == new.value:
        return
    where = (old.key or "").partition(_IN)[2]
    for k, o in list(by_key.items()):
        if o.kind == SETTING_TEXT and o.seq == old.seq and re.search(rf"(?<![\w.-]){re.escape(old.value)}(?![\w.])", o.value) \
                and scoped(old.key.partition(_IN)[0], o.value, o.value.find(old.value)).partition(_IN)[2] == where:
            del by_key[k]
            superseded[k] = replace(o, key=f"seq {new.seq}")


def scoped(name: str, text: str, at: int) -> str:
    """A setting's key: its name, and the file its sentence names nearest to it, if any
    ("MAX_WORKERS=8 in config/prod.toml"): two files' settings are two settings (ADR 0114).
    The sentence only: a file the next sentence of the line names is another topic."""
    start = max(text.rfind("\n", 0, at) + 1, max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0))
    stop = _SENTENCE_END.search(text, at)
    ends = [x for x in (text.find("\n", at), stop.start() + 1 if stop else -1) if x >= 0]
    line = text[start:min(ends, default=len(text))].replace("\\", "/")  # (a Windows path: "deploy\\api.toml")
    # (only a file the sentence says the setting is in or for, or a label before it: "see
    # docs/tuning.md for why" or "the traceback pointed at lib/retry.py" is another topic)
    files = [(abs(start + m.start() - at), m.group(0).removeprefix("./")) for m in _PATH.finditer(line)
             if (_OF_FILE.search(line, 0, m.start()) or line[m.end():m.end() + 1] == ":" and start + m.end() < at)
             and not _CLAUSE_BREAK.search(line, *sorted((at - start, m.start())))]
    # (an environment is a place like a file: "LOG_LEVEL=debug in staging" / "… in prod" are two settings)
    envs = [(abs(start + m.start() - at), _ENV_ALIAS.get(m.group(1).lower(), m.group(1).lower()))
            for m in _OF_ENV.finditer(line) if not _CLAUSE_BREAK.search(line, *sorted((at - start, m.start())))]
    return f"{name}{_IN}{min(files or envs)[1]}" if files or envs else name


# (a file of another clause: "=9 now; the why is in x.md", "=9, and the notes are in x.md")
_CLAUSE_BREAK = re.compile(r";|\s[\u2014\u2013-]\s|,\s+(?:and|but|so|then|while)\b")
_OF_FILE = re.compile(r"\b(?:in|for|of|inside|from|per)\s+(?:the\s+)?(?:file\s+)?[`'\"]?(?:\./)?$")
_OF_ENV = re.compile(rf"\b(?:in|for|on)\s+(?:the\s+)?({ENVIRONMENTS})\b(?![\w/-]|\.\w)", re.I)
_ENV_ALIAS = {"production": "prod", "stage": "staging", "development": "dev", "testing": "test"}


_SENTENCE_END = re.compile(r"[.!?]\s+")
_PINNED = re.compile(r"\b([A-Za-z][\w.-]*[A-Za-z0-9])\s*(?:==|~=|>=|<=|@|=\s*[\"'])\s*v?\d+\.\d+")


def _two_pinned(new: str, old: str) -> bool:
    """Each pins a package by an operator ("'numpy==1.26.4'", `numpy = "1.26.4"`) that the
    other does not say: one template, two packages, whatever words they share."""
    a, b = ({m.group(1).casefold() for m in _PINNED.finditer(x)} for x in (new, old))
    return bool(a and b) and not any(_said(w, old) for w in a) and not any(_said(w, new) for w in b)


def _shared_beyond_paths(new: str, old: str) -> set[str]:
    """The subject phrases two sentences share once their paths are out: "api/routes/users.py"
    in both is a file each mentions, not their subject (ADR 0114's flags ask this)."""
    return _shared_subject(_PATH.sub(" | ", new), _PATH.sub(" | ", old))


def _another_value(new: str, old: str) -> bool:
    """``new`` states a value of a type ``old`` states and not ``old``'s own: a report that
    repeats the value ("documented the TTL of 300 seconds") changes nothing (ADR 0114 amended)."""
    a, b = _typed_values(new), _typed_values(old)
    return any(not a[t] & b[t] for t in a.keys() & b.keys())


def _one_subject(new: str, old: Item) -> bool:
    """A subject phrase of ``old``'s, not one word in common ("the API docs" / "the API timeout")."""
    shared = _shared_beyond_paths(new, old.value)
    return any(" " in p or p in old.anchors and not any(p in q.split() for q in old.anchors if q != p)
               for p in shared)


#: Kinds that may state a new value on the way, a report of work or a wish ("Today: retested;
#: the lifetime sits at forty minutes", "... in favour of Pulsar"): they flag, never replace.
_WORDED_KINDS = (TASK, PREFERENCE)


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
    if item.kind not in (*_VALUE_KINDS, *_WORDED_KINDS) or not (pairs or "version" in values) or (
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
                len(shared) * 2 >= min(len(pairs), len(_subject_pairs(o.value))) and \
                (item.kind not in _WORDED_KINDS or _one_subject(item.value, o)):
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
    # (a value said in a report or a wish flags the old one, never hides it: its kind is a guess)
    replaces = replaces and item.kind in _VALUE_KINDS
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
