"""The typed fact checklist: what people say in prose, as must-keep items (issue 44). Pure.

The ledger's patterns see exact tokens (paths, ports, hashes). People also state rules
with their values, decisions with reasons, who owns what, dates, amounts and durations
in prose or digits, versions of named packages, preferences (negations included), task
state and open questions. Each such sentence of a user or assistant message becomes one
item: its kind, the sentence itself as its value (a value is never cut from its rule:
a value-less rule sentence takes the sentence before it that carries the value), its
seq, and its subject anchors — the content bigrams, acronyms, setting names and package
names it is about. A later item of the same kind sharing an anchor with an earlier one
supersedes it (``Ledger.merge``). Deterministic and offline; English cues. Text in other
languages matches no cue and is not cut: it is kept whole where it is kept at all. A
user's sentence with content that no kind reads is a ``remark`` (ADR 0099): the lowest
priority, but an item, so that its loss is reported like any other.

This module reads one sentence (its kind, its anchors); the cue tables and the value and
subject tests are in ``cues.py``, the joining of sentences into one statement in
``joining.py``, and which later item replaces which in ``supersession.py``.
"""

from __future__ import annotations

import re

from .cues import (_AMOUNT, _CUES, _DATE, _DONE, _FILLER, _HEDGE, _NAME, _NOT_DONE, _PLEASE_NO, _REASON, _REQUEST,
                   _SETTING, _SOFT_PREFERENCE, _STOP, _UNIT, _UPDATE, _VERSION, _VERSION_FIRST, AMOUNT, DATE, DECISION,
                   FOLLOW_UP, OPEN_QUESTION, PERSON, PREFERENCE, QUESTION, REMARK, RULE, SETTING_TEXT, STATEMENT, TASK,
                   UPDATE, VERSIONED, WORD, _CASELESS, _IDENT, _IDENT_MARK, _has_value, _without_exact, subject_words)
from .coverage import code_like
from .followups import is_follow_up
from .remarks import remark, whole
from .joining import _PROGRESS, _answer, _asks, sentences
from .splitting import clip

#: Checklist kinds, in the order a summary lists them (and their write-back priority).
CHECKLIST_KINDS = (RULE, PREFERENCE, DECISION, TASK, QUESTION, PERSON, DATE, AMOUNT, VERSIONED, SETTING_TEXT,
                   UPDATE, STATEMENT, OPEN_QUESTION, REMARK)
HEADING = "Fact Checklist"

_ROLE = re.compile(r"\b(owner|owns|reviewer|manager|contact|lead|admin|maintainer|on-call|ask|ping|loop in|"
                   r"handles|in charge|took over|responsible|approver|approves|signs off|assignee|assigned)\b", re.I)
_FIRST = re.compile(r"^([A-Z][a-z]{2,})\b(?!')")
#: Capitalised only because they start a sentence: not a person's name.
_NOT_NAMES = frozenset("everyone everybody someone somebody anyone anybody nobody nothing something anything "
                       "everything each every another other others none".split())


def _first_name(sentence: str) -> bool:
    """A one-word name starting a sentence ("Priyanka owns billing."): a capitalised
    first word that is no stop word, filler or pronoun (the role word decides)."""
    m = _FIRST.match(sentence)
    return bool(m) and (w := m.group(1).lower()) not in _STOP and w not in _FILLER and w not in _NOT_NAMES


def _from_now_on_value(sentence: str) -> bool:
    """"Going forward" said of a person's role, a date, an amount or a named choice ("Going
    forward, direct billing questions to Ana Lopes", "Buildkite is the CI runner going
    forward"): when a value changes, not a wish (ADR 0103); the sentence is read for that
    value's kind, which replaces or flags the earlier value."""
    # (an instruction to use or keep something is a standing wish whatever it names: "Going
    # forward, use Ruff for linting", "... keep each PR under 400 lines"; a role still changes)
    return (not _SOFT_PREFERENCE.search(_GOING_FORWARD.sub(" ", sentence))
            and (bool(not _STANDING.match(sentence) and (_DATE.search(sentence) or _AMOUNT.search(sentence)
                                                          or _ENTITY.search(sentence[1:])))
                 or bool((_NAME.search(sentence) or _first_name(sentence)) and _ROLE.search(sentence))))


_GOING_FORWARD = re.compile(r"\bgoing forward\b", re.I)
_STANDING = re.compile(r"^\W*(?:going forward,?\s+)?(?:please\s+)?(?:always\s+)?(?:use|keep|stick (?:to|with)|run|"
                       r"write|prefer|avoid|stay)\b", re.I)


def _reports_done(sentence: str) -> bool:
    """A statement that a piece of work is done: not a question, a request or a condition,
    and about something ("Done!" alone is about nothing)."""
    return (not sentence.rstrip().endswith("?") and not _REQUEST.match(sentence) and not _NOT_DONE.search(sentence)
            and bool(subject_words(_without_exact(_DONE.sub(" ", sentence)))))


#: Kinds whose later statement about the same subject replaces the earlier one.
SUPERSEDING = frozenset((RULE, DECISION, PERSON, DATE, AMOUNT, VERSIONED, SETTING_TEXT, TASK, STATEMENT))


def classify(sentence: str) -> str | None:
    """The checklist kind of one sentence, or None (routine prose)."""
    if _SETTING.search(sentence):
        return SETTING_TEXT
    if (_VERSION.search(sentence) or _VERSION_FIRST.search(sentence)) and not _DATE.search(sentence):
        return VERSIONED
    for kind, cue in _CUES:
        if cue.search(sentence):
            if kind == RULE and not (_has_value(sentence) or re.search(r"\b(never|always|do not|don't)\b", sentence, re.I)):
                continue  # ("make sure the linter passes": a routine request, not a rule)
            if kind == TASK and _NOT_DONE.search(sentence):
                continue  # ("once the tests are done, push": a condition, not a state, ADR 0096)
            return kind
    if _SOFT_PREFERENCE.search(sentence) and (not _REQUEST.match(sentence) or _PLEASE_NO.match(sentence)) \
            and subject_words(_SOFT_PREFERENCE.sub(" ", sentence)) and not _from_now_on_value(sentence):
        return PREFERENCE
    if _DONE.search(sentence) and _reports_done(sentence):
        return TASK
    if (_NAME.search(sentence) or _first_name(sentence)) and _ROLE.search(sentence):
        return PERSON
    if _DATE.search(sentence):
        return DATE
    if _UPDATE.search(sentence):
        return UPDATE
    if _AMOUNT.search(sentence):
        return AMOUNT
    if salient(sentence):
        return STATEMENT
    return None


def salient(sentence: str) -> bool:
    """A sentence worth keeping though no cue names its kind (ADR 0083): it has a
    subject of its own and carries a value (a number, a date, an amount, a version), a
    named entity (a proper noun within the sentence, an acronym, a mixed-case name), a
    commitment ("let's", "we'll", "going to"), a reason, or a question left open."""
    if _REQUEST.match(sentence) or not subject_words(sentence):
        return False
    if "? " in sentence:  # (a question and its answer: the answer may be a bare word, "Five.")
        q, _, a = sentence.partition("? ")
        if _asks(f"{q}?") and _answer(a):
            return True
    sentence = _without_exact(sentence)
    if _has_value(sentence) or _ENTITY.search(sentence[1:]):
        return True
    return bool(_COMMIT.search(sentence) or _BECAUSE.search(sentence) or _OPEN_Q.search(sentence)
                or _TOPIC.search(sentence))




# (a subject stated first, then what holds for it: "Deploy window: Tuesdays only.", "When
# it comes to naming, snake_case.", "For the CLI, long options." — a key and its value)
_TOPIC = re.compile(r"^[^:?!]{3,60}:\s+\S|^(?:as for|regarding|when it comes to|for|on|about)\b[^,.;]{3,60},\s*\S",
                    re.I)
_BECAUSE = re.compile(r"\b(?:because|since|given that|due to|so that|the reason)\b", re.I)
# (after an arrow too: "cache layer -> Valkey" names the new value, ADR 0106)
# (an entity: a capitalised word inside a sentence, an acronym, a mixed-case or
# digit-bearing name: "Tortoise", "the ORM", "RabbitMQ", "urllib3")
_ENTITY = re.compile(r"(?<=[a-z,;:>\u2192] )(?!I\b|I'|None\b|OK\b)[A-Z][a-z]{2,}\b|\b[A-Z]{2,6}s?\b|"
                     r"\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+[A-Z][a-z]\w*\b|\b[a-z]{3,}\d+\b|"
                    r"\b[A-Z][a-z]+[A-Z]{2,}\w*\b")  # ("RabbitMQ", "GraphQL": a product, ADR 0106)
_COMMIT = re.compile(r"\b(let's|let us|we'll|we will|we're going to|we are going to|i'll|going forward|"
                     r"from (?:now|here) on|agreed|promise|commit(?:ted)? to|plan is|the call is)\b", re.I)
_OPEN_Q = re.compile(r"\b(don't know|do not know|no idea|not clear|unclear|unknown|nobody|no one|"
                     r"figure (?:it|that|this) out|find out|check with|open)\b", re.I)


def anchors(sentence: str, kind: str | None = None) -> frozenset[str]:
    """What a sentence is about. A setting: its names. A version: the package words
    before it. Else: acronyms and the content bigrams left once its values (numbers,
    dates, names) and its reason are taken out."""
    keys = {m.group(1) for m in _SETTING.finditer(sentence)}
    # (paths and identifiers name what a statement is about: "never modify gen_3.pb.go")
    idents = {m.group(0) for m in _IDENT.finditer(sentence) if _IDENT_MARK.search(m.group(0))}
    if kind == SETTING_TEXT and keys:
        return frozenset(keys)
    if kind == VERSIONED:
        found = set()
        for m in _VERSION.finditer(sentence):
            before = re.findall(r"[A-Za-z][\w.-]*[A-Za-z0-9]", sentence[: m.end(1)])[-4:]
            found |= {w.lower() for w in before if w.lower() not in _STOP and w.lower() not in _VERSION_WORDS}
        found |= {m.group(1).lower() for m in _VERSION_FIRST.finditer(sentence) if m.group(1)}
        # (an answer is about what its question names, not about where it was looked up:
        # "Which pydantic are we on? Checked the lockfile: 2.7.4.", ADR 0103)
        if "? " in sentence and (asked := {w for w in subject_words(sentence.partition("? ")[0])
                                           if w not in _VERSION_WORDS}):
            found = asked
        if found:
            return frozenset(found)
    out: set[str] = keys | idents | {m.group(0).lower() for m in _STEP.finditer(sentence)}
    if kind == TASK:
        # (how a task is reported done is not what it is: "ticked another one off: the X" and
        # "... the Y" are two tasks, ADR 0096)
        sentence = _DONE.sub(" | ", dict(_CUES)[TASK].sub(" | ", sentence))
    # (a compound sentence is about the clause that holds its value: "Ines is the approver
    # now, the previous one moved teams" is about the approver, not about moving teams)
    # (a dash sets off a clause too: "Cap X at 5 — anything over that gets bounced" is about
    # X, not about what gets bounced, which every such rule says)
    clauses = [c for c in re.split(r",\s+|\s+-\s+|\s*[\u2013\u2014]\s*|;\s*", sentence) if c.strip()]
    if len(clauses) > 1 and _has_value(sentence):
        own = [c for c in clauses if _has_value(c)]
        # (a fact said as the ground of something else is the clause's subject, not the
        # reason cut from it: "I split the query, which, given that the log retention is
        # 30 days, ..." is about the log retention)
        if len(own) == 1 and (mine := _plain_anchors(_OPENING_REASON.sub("", own[0], count=1))):
            return _with_asked(sentence, out | mine)
    return _with_asked(sentence, out | _plain_anchors(sentence))


def _with_asked(sentence: str, found: set[str]) -> frozenset[str]:
    """A joined answer is about the thing its question names too: "What pool size should
    the worker use? That'd be 10." is the worker's pool, not the API's (ADR 0103)."""
    if "? " in sentence:
        said = {w for a in found for w in a.split()}
        found |= {w.lower() for w in _THE_THING.findall(sentence.partition("? ")[0])
                  if w.lower() not in _STOP and w.lower() not in _FILLER and w.lower() not in said}
    return frozenset(found)


_THE_THING = re.compile(r"\b(?:the|our|each|every)\s+([A-Za-z][\w-]{2,})\b")


_OPENING_REASON = re.compile(r"^\s*(?:which|that|and|but|so)?,?\s*(?:because|since|given that)\s+", re.I)


def _plain_anchors(sentence: str) -> set[str]:
    out: set[str] = set()
    # (the subject is stated before the reason: "... for the queue backend because the team
    # knows it" — two decisions with the same reason are about different things)
    sentence = _HEDGE.sub(" | ", _REASON.split(sentence, maxsplit=1)[0])  # ("until further notice": talk)
    bare = _DATE.sub(" | ", _AMOUNT.sub(" | ", _NAME.sub(" | ", sentence)))
    bare = bare[:1] + _VALUE_ENTITY.sub(" | ", bare[1:])
    # (words of any script, whole: "läuft" is no "uft", ADR 0099)
    words = [w.lower() for w in re.findall(rf"{WORD}|\|", bare)]
    for a, b in zip(words, words[1:]):
        if a not in _STOP and b not in _STOP and a not in _FILLER and b not in _FILLER and "|" not in (a, b) \
                and len(a) > 2 and len(b) > 2:
            out.add(f"{a} {b}")
    # (a one-word qualifier behind "for"/"of" is part of the subject: "the retry limit for
    # webhooks" and "... for the email sender" are two limits, not one)
    for n, w in enumerate(words):
        if w in ("for", "of"):
            # (only "the" may stand between: "for this project" says where, not which one)
            q = next((x for x in words[n + 1:n + 3] if x != "the"), "|")
            q = "|" if q in _STOP else q
            if q != "|" and len(q) > 2 and q not in _FILLER and not any(q in a.split() for a in out):
                out.add(q)
    # (acronyms, "the ORM"; never a unit, "180 KB")
    out |= {w.lower() for w in re.findall(r"\b[A-Z]{2,6}s?\b", sentence)
            if w.upper() not in ("TBD", "OK", "I") and not _UNIT_ONLY.fullmatch(w)}
    return out


_UNIT_ONLY = re.compile(_UNIT, re.I)
# (a capitalised word within a sentence or a mixed-case name: a value, not a subject)
_VALUE_ENTITY = re.compile(r"(?<=[a-z,;:>\u2192] )(?!I\b|I')[A-Z][a-z]{2,}\b|\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+[A-Z][a-z]\w*\b|"
                           r"\b[A-Z][a-z]+[A-Z]{2,}\w*\b")  # ("RabbitMQ", "GraphQL": a product, a value)
_VERSION_WORDS = frozenset("version versions stay stays stayed staying pin pins pinned pinning bump bumps bumped "
                           "bumping lock locks locked upgrade upgrades upgraded upgrading downgrade downgraded roll "
                           "rolled rolling forward moved move keep kept hold held sits lockfile we're running runs "
                           "run production release everywhere don past beyond above below from off than under over before after".split())


def checklist_items(text: str, asked: str | None = None, *,
                    user: bool = False) -> list[tuple[str, str, frozenset[str]]]:
    """(kind, sentence, anchors) of the checklist sentences of one message; ``asked``: the
    question the message before ended with (``asked_last``), which an answer joins;
    ``user``: the user said it, so a content-bearing sentence no kind reads is a remark."""
    out = []
    for s in sentences(text, asked):
        if len(s) < 8 and not (user and _CASELESS.search(s)):  # (five characters of Chinese say a lot)
            continue
        if is_follow_up(s, _has_value, subject_words) and not _PROGRESS.search(s):
            out.append((FOLLOW_UP, clip(s), frozenset()))  # (its subject is the item before it: ledger.extract)
            continue
        kind = classify(s)
        if kind in (None, STATEMENT) and (_caseless_fact(s) or _caseless_clause(s)):
            kind = STATEMENT  # (no English cue can read it: kept whole, never superseded by a guess)
            out.append((kind, whole(s), frozenset()))  # (whole as promised, up to ``whole``'s bound)
            continue
        if kind is None and not user and _open_question(s):
            out.append((OPEN_QUESTION, clip(s), frozenset()))  # (ADR 0103: open until an answer joins it)
            continue
        if kind is None and user and remark(s):
            out.append((REMARK, whole(s), frozenset()))  # (no anchors: it replaces nothing, nothing replaces it)
            continue
        if kind == STATEMENT and code_like(s):
            continue  # (a line of code or pasted tool output no cue reads is no one's statement, ADR 0109)
        if kind is not None:
            # (a sentence mostly in a caseless script is kept whole when a cue reads it too)
            out.append((kind, whole(s) if kind == STATEMENT and _caseless_fact(s) else clip(s), anchors(s, kind)))
    return out


# (what makes such a sentence a fact rather than talk: a digit, a Latin name, a numeral,
# a date or a unit character)
_CASELESS_VALUE = re.compile(r"\d|[A-Za-z]{2,}|[一二三四五六七八九十百千万亿两年月日号点分秒元％]")


def _caseless_fact(sentence: str) -> bool:
    """A sentence mostly in a caseless script that carries a value (ADR 0091): kept as a
    statement, whole, so that its loss is reported like any other; the English cues
    would read nothing in it."""
    if not _CASELESS.search(sentence):
        return False  # (cheap first: most sentences are in a cased script)
    letters = [ch for ch in sentence if ch.isalpha()]
    caseless = sum(1 for ch in letters if _CASELESS.match(ch))
    return caseless >= 4 and caseless * 2 > len(letters) and bool(_CASELESS_VALUE.search(sentence))


def _open_question(sentence: str) -> bool:
    """A question of the assistant's about the work ("Should the export keep archived
    projects?", "Does the invoice total include tax?"), not an offer or a check-in ("Shall
    I run it?", "Does that help?"), with two subject words: open until the user answers
    it (an answer in the next message joins it, ``ledger.extract``)."""
    s = sentence.strip()
    return (s.endswith("?") and len(s) <= 200 and "? " not in s and not _REQUEST.match(s) and not _OFFER.match(s)
            and len(subject_words(s)) >= 2)


# (an offer to act, a request for a go-ahead or a check-in: no open question about the work)
_OFFER = re.compile(r"^\s*(?:(?:ok|okay|so|and|also|then),?\s+)?(?:(?:shall|should|can|could|may|do|would|will) i\b|"
                    r"(?:do|would) you (?:want|like|prefer|mind)\b|want me\b|anything else\b|"
                    r"any (?:other )?(?:questions|thoughts|objections|concerns)\b|"
                    r"(?:does|did|is|was) (?:that|this|it) (?:work|help|look|sound|make sense|fix|answer)\b|"
                    r"(?:sounds?|looks?) (?:good|ok|okay|right)\b|(?:ready|ok|okay|right|good)\b)", re.I)


def _caseless_clause(sentence: str) -> bool:
    """A sentence that says part of itself in a caseless script, around English terms
    ("还没定下来的问题：guests may see draft invoices？", "cache layer 最后定了 Memcached", ADR
    0103): four caseless characters say as much as a clause, which no English cue reads;
    when the cues found nothing, the sentence is kept whole as a statement, like
    ``_caseless_fact`` (no anchors: never superseded by a guess)."""
    return sum(1 for ch in sentence if _CASELESS.match(ch)) >= 4 and bool(_CASELESS_VALUE.search(sentence))


# ("Step 3 is done" updates "Step 3: start the migration"; "module 2" and "module 3" are two
# units, not two values of one: the number names the unit)
_STEP = re.compile(r"\b(?:step|phase|stage|module|part|ticket|milestone|batch) \d+(?: of \d+)?\b", re.I)
