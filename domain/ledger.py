"""The must-keep ledger: what a summary may not lose, checked before every commit. Pure.

Every message a compaction covers is read by deterministic extractors: exact facts (file
paths, ids, commit hashes, ports, versions, URLs, ``KEY=value`` settings, errors with
their messages), user constraints and corrections, and the typed fact checklist of
``checklist.py`` (rules with values, decisions, people, dates, amounts, versions, task
state, preferences, questions: issue 44), each with its source seq. The ledger is
cumulative (carried from checkpoint to checkpoint), and a candidate summary is verified
against it: a missing item is written back under its heading, with its seq, within a
token budget — corrections and constraints first, then the checklist, then facts by
recency. What does not fit is reported as dropped (kind, value, seq), never silently lost.

A later value for the same setting or subject supersedes the older one: the old one leaves
the ledger and, where the summary still states it, it is marked as superseded.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .checklist import CHECKLIST_KINDS, SUPERSEDING, anchors, checklist_items
from .cues import CATCH_ALL, FOLLOW_UP, OPEN_QUESTION, REMARK, UPDATE
from . import remarks
from .followups import resolve
from .joining import asked_last, sentences
from .splitting import clip
from .marks import mark_superseded, stated_text, unmarked_within
from .valueforms import _IN, plain, same_setting
from .supersession import retire_sentences, scoped, supersede
from .checklist import HEADING as CHECKLIST_HEADING
from .summary import SourceEntry, insert_lines
from .budget import Count

CORRECTION, CONSTRAINT = "correction", "constraint"
#: Facts, in the order they are listed; corrections and constraints come before them.
FACT_KINDS = ("path", "id", "commit", "port", "version", "url", "setting", "error")
KINDS = (CORRECTION, CONSTRAINT, *CHECKLIST_KINDS, *FACT_KINDS)
#: Kinds whose value is a whole sentence, checked up to case and spacing.
HEADING = {CORRECTION: "Recent User Corrections", CONSTRAINT: "Constraints",
           **{k: CHECKLIST_HEADING for k in CHECKLIST_KINDS}}
FACTS_HEADING = "Exact Facts"

#: Bound of a ledger carried in every checkpoint; beyond it the oldest, rarest facts
#: leave it (reported dropped by the compaction that evicts them).
MAX_ITEMS = 1000  # (600 before the checklist, issue 44: its statements come beside the facts)

_CONSTRAINT = re.compile(
    r"\b(must|must not|do not|don't|never|always|only use|make sure|required|"
    r"should not|shouldn't|avoid|without)\b|^\s*no (?!problem|worries|idea|rush)\w+",
    re.I,
)
# ("instead of"/"rather than" alone are routine requests, not corrections: issue 44.)
_CORRECTION = re.compile(
    r"^\s*(?:(actually|correction|wait|instead)\b|no[,.!])|\b(not \S+,? but|is \S+, not|I meant)\b",
    re.I,
)
_FACT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"https?://[^\s)\"'<>\]]+[^\s)\"'<>\].,;:]")),
    ("path", re.compile(r"(?<![\w/.:-])(?:~|\.{1,2})?(?:/?[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b")),
    ("setting", re.compile(r"\b([A-Z][A-Z0-9_]{2,})=([^\s,;'\"`)]*[^\s,;'\"`).:!?])")),
    ("id", re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b|(?<![\w&])#\d{2,7}\b")),
    ("commit", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")),
    ("port", re.compile(r"\bport\s+(\d{2,5})\b|(?<=localhost:)(\d{2,5})\b|(?<=127\.0\.0\.1:)(\d{2,5})\b", re.I)),
    ("version", re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?\b")),
    ("error", re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception|Exit)): ([^\n]{1,160})")),
)


@dataclass(frozen=True)
class LedgerItem:
    """One must-keep item: its kind, its exact value, where it was last and first seen."""

    kind: str
    value: str
    seq: int
    first_seq: int
    count: int = 1
    key: str | None = None  # a setting's name: a new value for it supersedes the old
    anchors: tuple[str, ...] = ()  # a checklist item's subject: a later item sharing one supersedes it
    #: The seq of a later change that shares part of this item's subject (ADR 0083): both
    #: are kept, this one marked as possibly superseded there.
    doubt: int | None = None

    def line(self) -> str:
        """The line written back into a summary that lacks the item."""
        if self.kind in CHECKLIST_KINDS:
            doubt = f"; possibly superseded at seq {self.doubt}" if self.doubt is not None else ""
            return f"- {self.kind}: {self.value} (seq {self.seq}{doubt})"
        if self.kind in HEADING:
            return f"- {self.value} (seq {self.seq})"
        return f"- {self.kind}: {self.value} (seq {self.seq})"

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"kind": self.kind, "value": self.value, "seq": self.seq}
        if self.first_seq != self.seq:
            record["first_seq"] = self.first_seq
        if self.count != 1:
            record["count"] = self.count
        if self.key is not None:
            record["key"] = self.key
        if self.anchors:
            record["anchors"] = list(self.anchors)
        if self.doubt is not None:
            record["doubt"] = self.doubt
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> LedgerItem:
        seq = int(record["seq"])
        return cls(
            kind=str(record["kind"]),
            value=str(record["value"]),
            seq=seq,
            first_seq=int(record.get("first_seq", seq)),
            count=int(record.get("count", 1)),
            key=record.get("key"),
            anchors=tuple(str(a) for a in record.get("anchors", ())),
            doubt=int(record["doubt"]) if record.get("doubt") is not None else None,
        )


@dataclass(frozen=True)
class Ledger:
    """The cumulative must-keep items of a checkpoint, and the superseded settings."""

    items: tuple[LedgerItem, ...] = ()
    superseded: tuple[LedgerItem, ...] = ()

    def to_record(self) -> dict[str, Any]:
        return {
            "items": [i.to_record() for i in self.items],
            "superseded": [i.to_record() for i in self.superseded],
        }

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> Ledger:
        if not record:
            return cls()
        return cls(
            items=tuple(LedgerItem.from_record(r) for r in record.get("items", ())),
            superseded=tuple(LedgerItem.from_record(r) for r in record.get("superseded", ())),
        )

    def merge(self, found: Iterable[LedgerItem]) -> tuple[Ledger, list[LedgerItem]]:
        """This ledger with newly found items; also returns the items evicted by the bound."""
        by_key: dict[tuple[str, str], LedgerItem] = {(i.kind, _norm(i)): i for i in self.items}
        superseded = {(i.kind, _norm(i)): i for i in self.superseded}
        for item in found:
            k = (item.kind, _norm(item))
            old = by_key.get(k)
            if old is not None:
                by_key[k] = replace(
                    old, seq=max(old.seq, item.seq), first_seq=min(old.first_seq, item.first_seq),
                    count=old.count + item.count,
                )
                continue
            if item.key is not None:
                for other_k, other in list(by_key.items()):
                    if same_setting(other.key, item.key) and other.seq <= item.seq:
                        del by_key[other_k]
                        superseded[other_k] = other
                        retire_sentences(other, item, by_key, superseded)
            if item.anchors or item.kind in _REPHRASABLE:
                # (an update is a value too: a change that found no typed item to replace
                # stays an update, and the next change of that subject replaces it)
                item = supersede(item, by_key, superseded, (*SUPERSEDING, UPDATE, CONSTRAINT, CORRECTION))
                k = (item.kind, _norm(item))
            superseded.pop(k, None)
            by_key[k] = item
        items = sorted(by_key.values(), key=priority)
        kept, evicted = items[:MAX_ITEMS], items[MAX_ITEMS:]
        kept, gone = remarks.bound(kept)  # (ADRs 0099, 0103: the newest of each catch-all kind)
        evicted = gone + evicted
        kept.sort(key=lambda i: (i.first_seq, KINDS.index(i.kind), i.value))
        newest_super = sorted(superseded.values(), key=lambda i: -i.seq)[:MAX_ITEMS]
        return Ledger(tuple(kept), tuple(sorted(newest_super, key=lambda i: i.seq))), evicted


#: Kinds whose subject may be said in other words (ADR 0096): asked to supersede even
#: with no content bigram ("When's the freeze? March 3." has none).
_REPHRASABLE = frozenset((*SUPERSEDING, UPDATE, CONSTRAINT, CORRECTION))  # (a correction: ADR 0099)


@dataclass
class LedgerReport:
    """What the verification of one candidate summary found and did."""

    items_total: int = 0
    in_summary: int = 0
    restored: int = 0
    #: What left the context in this compaction (ADR 0107): each loss is listed once, by
    #: the compaction where it leaves, not again while the ledger carries it unstated.
    dropped_items: list[LedgerItem] = field(default_factory=list)
    #: Items neither stated nor restored that an earlier checkpoint already listed
    #: (ADR 0107): counted in ``dropped`` so that every item is in exactly one count.
    dropped_before: int = 0
    marked_superseded: int = 0
    #: Items a later statement replaced in this compaction (ADR 0083): a supersession is
    #: never silent, so a wrong one can be seen (kind, value, seq, and the seq that
    #: replaced it).
    superseded_items: list[LedgerItem] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return len(self.dropped_items) + self.dropped_before

    def to_record(self) -> dict[str, Any]:
        return {
            "items_total": self.items_total,
            "in_summary": self.in_summary,
            "restored": self.restored,
            "dropped": self.dropped,
            "dropped_items": [{"kind": i.kind, "value": i.value, "seq": i.seq, **_by(i)} for i in self.dropped_items],
            "dropped_before": self.dropped_before,
            **({"superseded_items": [{"kind": i.kind, "value": i.value, "seq": i.seq,
                                      **({"by": i.key} if (i.key or "").startswith("seq ") else {})}
                                     for i in self.superseded_items]} if self.superseded_items else {}),
        }


def _by(item: LedgerItem) -> dict[str, int]:
    """A dropped item that a later statement replaced names it (ADR 0091): the loss is
    reported, and a reader can tell a replaced value from one that did not fit."""
    key = item.key or ""
    return {"superseded_by": int(key[4:])} if key.startswith("seq ") and key[4:].isdigit() else {}


def priority(item: LedgerItem) -> tuple[int, int, int, str]:
    """Corrections, then constraints and rules, then the other checklist items and the
    exact facts together, then remarks; newer first, then more frequent."""
    if item.kind in (CORRECTION, CONSTRAINT, "rule"):
        group = 0 if item.kind == CORRECTION else 1
    elif item.kind in CATCH_ALL:
        # (ADR 0099: whatever no kind reads comes after every kind; the assistant's open
        # questions after the user's remarks, which share their room)
        group = 4 if item.kind == OPEN_QUESTION else 3
    else:
        group = 2  # (the checklist and exact facts by recency: neither crowds the other out)
    return (group, -item.seq, -item.count, item.value)


def fair_order(items: Iterable[LedgerItem]) -> list[LedgerItem]:
    """Write-back order (ADR 0091): corrections, then constraints and rules, as
    ``priority``; then the other kinds taken in turns, each kind's newest first, so that
    a kind said every turn ("Step 12 is done.") does not push out the kinds said now and
    then (a port, a date, an owner) by recency alone."""
    ranked = sorted(items, key=priority)
    seen: dict[str, int] = {}
    keyed = []
    for n, item in enumerate(ranked):
        group = priority(item)[0]
        turn = 0
        if group == 2:
            turn = seen.get(item.kind, 0)
            seen[item.kind] = turn + 1
        keyed.append(((group, turn, n), item))
    return [item for _, item in sorted(keyed, key=lambda x: x[0])]


def extract(entries: Sequence[SourceEntry]) -> list[LedgerItem]:
    """The must-keep items of these messages, in seq order.

    User and assistant text gives facts; users give constraints and corrections
    (steering messages are constraints as a whole); tool calls give the paths they
    operate on; tool results give only their errors — a directory listing's hundred
    paths are not what a user expects the agent to remember.
    """
    found: list[LedgerItem] = []
    last: LedgerItem | None = None  # (the statement a pronoun follow-up is about, ADR 0091)
    asked: tuple[str, int] | None = None  # (a question the next message may answer, ADR 0096)
    for e in entries:
        said = _user_items(e) if e.role == "user" else []
        found += said
        if e.role in ("user", "assistant") and not e.steering:
            # (a user's rule is one of their constraints, under that heading)
            corrections = {_squash(i.value) for i in said if i.kind == CORRECTION}
            question = asked[0] if asked else None
            for kind, value, a in checklist_items(e.text, question, user=e.role == "user"):
                if _squash(value) in corrections:
                    continue
                # (an answer joined to the question before it was first said at the question)
                first = asked[1] if asked and question and value.startswith(question) else e.seq
                item = LedgerItem(_kind_of(kind, value, e.role), value, e.seq, first, anchors=tuple(sorted(a)))
                if first != e.seq:  # (answered: the open question alone is no longer an item, ADR 0103)
                    found = [i for i in found if not (i.seq == first and i.kind == OPEN_QUESTION and i.value == question)]
                if kind == FOLLOW_UP:
                    item = resolve(replace(item, kind=UPDATE), last)
                found.append(item)
                last = item  # (only the statement just before: one without a subject ends the chain)
            asked = (q, e.seq) if (q := asked_last(e.text)) else None
        elif e.role != "system":
            asked = None  # (a tool call between them: the next message answers something else)
        if e.role in ("user", "assistant", "system", "developer"):
            found += facts(e.text, e.seq)
        for _, _, arguments in e.tool_calls:
            found += [i for i in facts(arguments, e.seq) if i.kind == "path"]
        if e.role == "tool":
            found += [i for i in facts(e.text, e.seq) if i.kind == "error"]
    return found


def _kind_of(kind: str, value: str, role: str) -> str:
    """A user's rule is one of their constraints, under that heading; so is a statement
    of theirs that a constraint word marks ("You must not touch the public API.")."""
    if role == "user" and (kind == "rule" or (kind in ("statement", REMARK) and _CONSTRAINT.search(value))):
        return CONSTRAINT
    return kind


def facts(text: str, seq: int) -> list[LedgerItem]:
    out: list[LedgerItem] = []
    seen: set[tuple[str, str]] = set()
    for kind, pattern in _FACT_PATTERNS:
        for m in pattern.finditer(text):
            key = None
            if kind == "port":
                value = next(g for g in m.groups() if g)
            elif kind == "setting":
                value, key = m.group(0), scoped(m.group(1), text, m.start())
            else:
                value = m.group(0)
            value = value.strip()
            if kind == "version" and any(value in v for k, v in seen if k == "url"):
                continue
            if (kind, value) not in seen:
                seen.add((kind, value))
                out.append(LedgerItem(kind, value, seq, seq, 1, key))
    return out


def _user_items(e: SourceEntry) -> list[LedgerItem]:
    if e.steering and e.text.strip():
        return [LedgerItem(CONSTRAINT, clip(e.text), e.seq, e.seq)]
    out = []
    listed = {_squash(v) for _, v, _ in checklist_items(e.text)}
    for sentence in sentences(e.text):
        if len(sentence) < 4:
            continue
        if _CORRECTION.search(sentence):
            out.append(LedgerItem(CORRECTION, clip(sentence), e.seq, e.seq, anchors=tuple(sorted(anchors(sentence)))))
        elif _CONSTRAINT.search(sentence) and _squash(clip(sentence)) not in listed:
            out.append(LedgerItem(CONSTRAINT, clip(sentence), e.seq, e.seq))
    return out


def verify(summary: str, ledger: Ledger, budget_tokens: int, count: Count,
           remark_tokens: int | None = None) -> tuple[str, LedgerReport]:
    """The summary with every missing ledger item written back that fits the budget;
    remarks within ``remark_tokens`` of it besides (ADR 0099: a user's own words written
    back whole must not keep a compaction from shrinking what it covers).

    Deterministic: the same summary, ledger and budget give the same text and report.
    """
    report = LedgerReport(items_total=len(ledger.items))
    text, report.marked_superseded = mark_superseded(summary, ledger)
    if report.marked_superseded and count(text) - count(summary) > budget_tokens:
        text, report.marked_superseded = unmarked_within(text, summary, budget_tokens, count)
    stated = stated_text(text)
    missing = []
    remarks = 0  # (the remarks' share holds for what the summary states too, not only for what is written back)
    for item in ledger.items:
        if present(stated, item):
            report.in_summary += 1
            remarks += count(item.line()) + 1 if item.kind in CATCH_ALL else 0
        else:
            missing.append(item)
    additions: dict[str, list[str]] = {}
    # (the superseded marks are written into the summary too: they spend the same room)
    spent = max(0, count(text) - count(summary)) if report.marked_superseded else 0
    headings = {ln.strip() for ln in text.splitlines() if ln.startswith("## ")}
    written = ""  # the lines written back so far
    for item in fair_order(missing):
        line = item.line()
        heading = HEADING.get(item.kind, FACTS_HEADING)
        cost = count(line) + 1
        if heading not in additions and f"## {heading}" not in headings:
            cost += count(f"## {heading}") + 2  # (the heading this line creates, and its blank line)
        over = item.kind in CATCH_ALL and remark_tokens is not None and remarks + cost > remark_tokens
        if spent + cost > budget_tokens or over:
            if present(written, item):  # (stated by a restored line: a fact in a correction)
                report.restored += 1
            else:
                report.dropped_items.append(item)
            continue
        spent += cost
        remarks += cost if item.kind in CATCH_ALL else 0
        written += "\n" + line
        additions.setdefault(heading, []).append(line)
        report.restored += 1
    return insert_lines(text, additions), report


def present(text: str, item: LedgerItem) -> bool:
    """Whether the summary states the item: facts verbatim, sentences up to case and spacing.

    A fact must stand on its own: inside a longer token it is another value (port 80
    in ``PORT=8080``, ``#12`` in ``#123``, ``1.2.3`` in ``1.2.30``), and an item taken
    as present is neither written back nor reported dropped.
    """
    if item.kind in HEADING:  # (its formatting aside: "**$500**" states "$500", ADR 0114)
        return _squash(plain(item.value)) in _plain(text)
    value = item.value
    joins_after = "./-" if item.kind in ("path", "url") else ".-"
    at = text.find(value)
    while at >= 0:
        end = at + len(value)
        if not (_continues(text, at - 1, -1, "./-") and _is_word(value[0])) and not (
            _continues(text, end, 1, joins_after) and _is_word(value[-1])
        ):
            return True
        at = text.find(value, at + 1)
    return False


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _continues(text: str, i: int, step: int, joiners: str) -> bool:
    """Whether a token goes on at ``text[i]``: a word character, or a joiner followed
    (in ``step`` direction) by one."""
    if not 0 <= i < len(text):
        return False
    if _is_word(text[i]):
        return True
    j = i + step
    return text[i] in joiners and 0 <= j < len(text) and _is_word(text[j])


@functools.lru_cache(maxsize=64)  # (one summary, asked of every item)
def _plain(text: str) -> str:
    return _squash(plain(text))


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _norm(item: LedgerItem) -> str:
    if item.kind == "setting" and item.key and _IN in item.key:
        return f"{item.value}{_IN}{item.key.partition(_IN)[2]}"  # (one value in two files: two items)
    return _squash(item.value) if item.kind in HEADING else item.value

