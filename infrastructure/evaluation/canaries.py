"""Typed canaries: what is planted, and how a context is scored for it.

A canary is one statement of one kind about one subject. It is kept when a line of the
context states its value next to its subject (and, for a negated preference, the
negation). A canary that a later one supersedes (same kind and subject, new value) must
then no longer be stated as current in the summary: that line would have to carry a
``superseded`` mark, or the new value.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

KINDS = ("rule", "decision", "person", "date", "amount", "version", "setting",
         "preference", "task", "question")

# ("keep X out of Y" and "is sorted" are the spoken set's: its self-check, which every set
# now has, found the scorer could not read them even in the canary's own sentence)
_NEGATION = re.compile(r"\b(no|not|never|do not|dont|without|avoid)\b|n't\b|\b(leave|keep)\b.*\bout\b", re.I)
DONE_WORDS = ("done", "finished", "complete", "completed", "wrapped up", "landed", "checked off", "sorted")
OPEN_WORDS = ("to do", "todo", "remaining", "still open", "not started", "pending", "left to")


@dataclass
class Canary:
    kind: str
    subject: str
    anchors: tuple[str, ...]  # one of them must share the line with the value
    values: tuple[str, ...]  # any one of them, case-insensitive
    text: str
    negated: bool = False
    round: int = 0
    superseded_by: Canary | None = field(default=None, repr=False)

    @property
    def value(self) -> str:
        return self.values[0]


def _spans(canary: Canary, context: str) -> list[str]:
    """The stretches of ``context`` where the canary's value and one of its anchors occur
    no farther apart than its own sentence spans (a canary may be two sentences: "Log
    retention? Roughly 90 days."), each with 30 characters before (where a superseded
    mark stands)."""
    text = context.casefold()
    reach = len(canary.text) + 10
    values = [m.start() for v in canary.values for m in re.finditer(_value_pattern(v), text)]
    anchors = [m.start() for a in canary.anchors for m in re.finditer(_anchor_pattern(a), text)]
    out = []
    for v in values:
        for a in anchors:
            lo, hi = min(v, a), max(v, a)
            if hi - lo <= reach and "\n" not in text[lo:hi]:
                # (the 30 characters before stop at the line's start: a mark or a flag on the
                # line above is about another statement)
                start = max(0, lo - 30, text.rfind("\n", 0, lo) + 1)
                out.append(_marked_before(text, lo, reach) + _doubted(text, hi) + text[start : hi + 15])
    return out


def _value_pattern(value: str) -> str:
    """A value as a whole token: "$500" is not in "$5000", "3 replicas" not in "13 replicas"."""
    v = re.escape(value.casefold())
    before = r"(?<![\w.])" if value[:1].isalnum() else ""
    after = r"(?![\w])(?![.,]\d)" if value[-1:].isalnum() else ""
    return before + v + after


def _anchor_pattern(anchor: str) -> str:
    """An anchor as the start of a word (a stem: "replica" in "replicas"), never inside
    one ("orm" in "platform", "rate" in "migrate")."""
    return r"(?<![\w])" + re.escape(anchor.casefold())


def about(canary: Canary, text: str) -> bool:
    """Whether ``text`` (one dropped item, say) names both the canary's subject and its
    value within its reach: one of the two alone is about something else."""
    return bool(_spans(canary, text))


_MARK = re.compile(r"\(superseded[^()\n]*\) ")
#: A checklist line whose value a later change may have replaced (ADR 0083): the value is
#: stated, flagged; it is neither lost nor presented as current.
DOUBT = "possibly superseded"


def _doubted(text: str, at: int) -> str:
    end = text.find("\n", at)
    return f"{DOUBT} " if DOUBT in text[at : end if end >= 0 else len(text)] else ""


def flagged(canary: Canary, context: str) -> bool:
    """Whether the context states the canary only with a possibly-superseded flag."""
    spans = [x for x in _spans(canary, context) if not x.startswith("superseded")]
    return bool(spans) and all(x.startswith(DOUBT) for x in spans)


def _marked_before(text: str, at: int, reach: int) -> str:
    """"superseded " when the sentence holding ``at`` opens with a superseded mark."""
    before = text[max(0, at - reach - 30, text.rfind("\n", 0, at) + 1) : at]  # (this line's marks only)
    marks = list(_MARK.finditer(before))
    if marks and not re.search(r"[.!?]\s", before[marks[-1].end() :]):
        return "superseded "
    return ""


def kept(canary: Canary, context: str) -> bool:
    """Whether ``context`` states the canary as current."""
    for span in _spans(canary, context):
        if span.startswith(DOUBT):
            span = span[len(DOUBT):]  # (stated, flagged: kept, counted as flagged apart)
        if "superseded" in span:
            continue
        if not canary.negated or _NEGATION.search(span):
            return True
    return False


def stated_as_current(old: Canary, summary: str) -> bool:
    """Whether ``summary`` still presents a superseded value as current: a line with the
    old value and its subject, no superseded mark and not the new value beside it."""
    new = old.superseded_by
    assert new is not None
    while new.superseded_by is not None:  # (the newest statement of the subject is current)
        new = new.superseded_by
    if any(v in new.values for v in old.values):
        return False  # (set back to the old value: stating it is right)
    for span in _spans(old, summary):
        if "superseded" in span or any(v.casefold() in span for v in new.values):
            continue
        return True
    return False


# ------------------------------------------------------------------ pools
# (subject, anchors, values): the subjects and values both phrasing sets draw from.
RULES = (
    ("budget cap", ("budget",), ("$500", "$750", "$1,200", "$2,000")),
    ("API rate limit", ("rate",), ("120 requests per minute", "300 requests per minute", "60 requests per minute")),
    ("upload size limit", ("upload",), ("25 MB", "10 MB", "50 MB")),
    ("test timeout", ("timeout",), ("90 seconds", "45 seconds", "two minutes")),
    ("staging replica count", ("replica",), ("3 replicas", "5 replicas", "7 replicas")),
    ("bundle size limit", ("bundle",), ("180 KB", "250 KB", "320 KB")),
    ("connection pool ceiling", ("pool",), ("20 connections", "40 connections", "64 connections")),
)
DECISIONS = (
    ("queue backend", ("queue",), ("Redis Streams", "RabbitMQ", "NATS JetStream")),
    ("ORM", ("orm",), ("SQLAlchemy Core", "Peewee", "Tortoise")),
    ("HTTP client", ("http",), ("aiohttp", "urllib3", "requests-futures")),
    ("CI runner", ("ci",), ("GitHub Actions", "Buildkite", "Drone")),
    ("feature-flag service", ("flag",), ("Unleash", "Flagsmith", "GrowthBook")),
    ("cache layer", ("cache",), ("Memcached", "Valkey", "Hazelcast")),
)
REASONS = ("it already runs in production", "the team knows it well", "it had the lowest latency in our test",
           "its licence is simpler", "it retries out of the box", "it is the cheapest to operate")
PEOPLE = (
    ("on-call reviewer", ("reviewer",)),
    ("release manager", ("release",)),
    ("security contact", ("security",)),
    ("owner of the billing service", ("billing",)),
    ("database admin", ("database",)),
    ("product lead for search", ("search",)),
)
NAMES = ("Priya Raman", "Tomasz Kowal", "Aiko Tanaka", "Marcus Bell", "Fatima Okafor", "Lena Fischer",
         "Diego Alvarez", "Sven Lund", "Nadia Haddad", "Kwame Mensah", "Team Falcon", "the Platform team")
DATES = (
    ("release freeze", ("freeze",)),
    ("migration deadline", ("deadline",)),
    ("customer demo", ("demo",)),
    ("security audit", ("audit",)),
    ("beta launch", ("beta",)),
    ("contract renewal", ("renewal",)),
)
DATE_VALUES = ("March 14", "April 2", "2026-05-19", "June 30", "Friday 9 January", "the 21st of July",
               "October 3", "2026-11-12", "Monday 2 February", "August 27")
AMOUNTS = (
    ("p95 latency budget", ("latency",), ("250 milliseconds", "180 ms", "400 milliseconds")),
    ("monthly cloud spend", ("cloud spend", "spend"), ("$3,400 a month", "$2,150 a month", "$5,800 a month")),
    ("nightly batch runtime", ("batch",), ("forty-five minutes", "two hours", "95 minutes")),
    ("cache TTL", ("ttl",), ("ninety seconds", "15 minutes", "600 seconds")),
    ("log retention", ("retention",), ("14 days", "thirty days", "90 days")),
    ("max payload", ("payload",), ("12 GB", "eight megabytes", "512 KB")),
)
VERSIONS = (
    ("httpx", ("0.27.2", "0.28.1")), ("pydantic", ("2.7.4", "2.8.2")), ("uvicorn", ("0.30.1", "0.29.0")),
    ("sqlalchemy", ("2.0.31", "2.0.36")), ("celery", ("5.4.0", "5.3.6")), ("boto3", ("1.34.90", "1.35.2")),
    ("redis-py", ("5.0.8", "4.6.0")), ("alembic", ("1.13.2", "1.12.1")),
)
SETTINGS = (
    ("MAX_WORKERS", ("8", "12", "16")), ("LOG_LEVEL", ("debug", "warning", "info")),
    ("CACHE_BACKEND", ("redis", "memcached", "memory")), ("REQUEST_TIMEOUT", ("30s", "45s", "75s")),
    ("SENTRY_SAMPLE_RATE", ("0.25", "0.1", "0.05")), ("DB_POOL_SIZE", ("15", "25", "35")),
)
PREFERENCES = (  # (subject, anchors, value, negated)
    ("commit messages", ("commit",), "emojis", True),
    ("the test suite", ("test",), "mocked database", True),
    ("new modules", ("module",), "wildcard imports", True),
    ("library code", ("library",), "print debugging", True),
    ("file handling", ("file",), "pathlib", False),
    ("string formatting", ("format",), "f-strings", False),
    ("public functions", ("public",), "keyword-only arguments", False),
    ("code review", ("review",), "small pull requests", False),
)
TASKS = ("schema migration", "backfill script", "API handlers", "load test", "docs update",
         "feature flag rollout", "rate limiter", "audit log export")
QUESTIONS = (  # (anchor phrase, the question's clause)
    ("archived projects", "archived projects belong in the CSV export"),
    ("webhook retries", "webhook retries have to be idempotent"),
    ("draft invoices", "guests may see draft invoices"),
    ("v1 endpoints", "the v1 endpoints get removed in Q3"),
    ("contractors", "SSO is required for contractors"),
    ("soft delete", "soft delete should cascade to attachments"),
)


@dataclass(frozen=True)
class Phrasings:
    """One phrasing set: per kind, templates; per updatable kind, update templates.

    Slots: {s} subject, {S} subject capitalised, {v} value, {V} value capitalised,
    {r} reason, {n}/{m} step numbers, {k} setting name.
    """

    name: str
    templates: dict[str, Sequence[str]]
    updates: dict[str, Sequence[str]]
    negated: Sequence[str] = ()  # preference templates for a negated value


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fill(template: str, **slots: str) -> str:
    slots = {**slots, **{k.upper(): _cap(v) for k, v in slots.items() if len(k) == 1}}
    return template.format(**slots)


class Planter:
    """Draws canaries of every kind from a phrasing set, seeded."""

    def __init__(self, phrasings: Phrasings, seed: int) -> None:
        self.p = phrasings
        self.rng = random.Random(f"{phrasings.name}-{seed}")
        self.used: dict[str, set[str]] = {k: set() for k in KINDS}

    def _pick_subject(self, kind: str, pool: Sequence[tuple]) -> tuple:
        free = [x for x in pool if x[0] not in self.used[kind]] or list(pool)
        item = self.rng.choice(free)
        self.used[kind].add(item[0])
        return item

    def _template(self, kind: str) -> str:
        return self.rng.choice(list(self.p.templates[kind]))

    def plant(self, kind: str, round_: int = 0) -> Canary:
        rng, t = self.rng, self._template(kind) if kind not in ("preference",) else ""
        if kind == "rule":
            s, anchors, values = self._pick_subject(kind, RULES)
            v = rng.choice(values)
            return Canary(kind, s, anchors, (v,), _fill(t, s=s, v=v), round=round_)
        if kind == "decision":
            s, anchors, values = self._pick_subject(kind, DECISIONS)
            v, r = rng.choice(values), rng.choice(REASONS)
            return Canary(kind, s, anchors, (v,), _fill(t, s=s, v=v, r=r), round=round_)
        if kind == "person":
            s, anchors = self._pick_subject(kind, PEOPLE)
            v = rng.choice(NAMES)
            return Canary(kind, s, anchors, (v,), _fill(t, s=s, v=v), round=round_)
        if kind == "date":
            s, anchors = self._pick_subject(kind, DATES)
            v = rng.choice(DATE_VALUES)
            return Canary(kind, s, anchors, (v,), _fill(t, s=s, v=v), round=round_)
        if kind == "amount":
            s, anchors, values = self._pick_subject(kind, AMOUNTS)
            v = rng.choice(values)
            return Canary(kind, s, anchors, (v,), _fill(t, s=s, v=v), round=round_)
        if kind == "version":
            s, values = self._pick_subject(kind, VERSIONS)
            v = rng.choice(values)
            return Canary(kind, s, (s,), (v,), _fill(t, s=s, v=v), round=round_)
        if kind == "setting":
            k, values = self._pick_subject(kind, SETTINGS)
            v = rng.choice(values)
            return Canary(kind, k, (k,), (v,), _fill(t, k=k, v=v, s=k), round=round_)
        if kind == "preference":
            s, anchors, v, negated = self._pick_subject(kind, PREFERENCES)
            pool = self.p.negated if negated else self.p.templates[kind]
            return Canary(kind, s, anchors, (v,), _fill(rng.choice(list(pool)), s=s, v=v),
                          negated=negated, round=round_)
        if kind == "task":
            s = self._pick_subject(kind, [(x,) for x in TASKS])[0]
            m = rng.randint(4, 7)
            n = rng.randint(1, m - 1)
            return Canary(kind, s, (s,), DONE_WORDS, _fill(t, s=s, n=str(n), m=str(m)), round=round_)
        if kind == "question":
            anchor, clause = self._pick_subject(kind, QUESTIONS)
            return Canary(kind, anchor, (anchor,), (anchor,), _fill(t, s=clause), round=round_)
        raise ValueError(kind)

    def update(self, old: Canary, round_: int) -> Canary | None:
        """A later statement about ``old``'s subject with a new value, or None for kinds
        that are not updated (preferences, questions, tasks already done)."""
        templates = self.p.updates.get(old.kind)
        if not templates:
            return None
        pools = {"rule": RULES, "decision": DECISIONS, "amount": AMOUNTS}
        if old.kind in pools:
            values = next(x[2] for x in pools[old.kind] if x[0] == old.subject)
        elif old.kind == "version":
            values = next(x[1] for x in VERSIONS if x[0] == old.subject)
        elif old.kind == "setting":
            values = next(x[1] for x in SETTINGS if x[0] == old.subject)
        elif old.kind == "person":
            values = NAMES
        elif old.kind == "date":
            values = DATE_VALUES
        else:
            return None
        fresh = [v for v in values if v not in old.values]
        v = self.rng.choice(fresh)
        t = self.rng.choice(list(templates))
        r = self.rng.choice(REASONS)
        new = Canary(old.kind, old.subject, old.anchors, (v,), _fill(t, s=old.subject, k=old.subject, v=v, r=r),
                     round=round_)
        old.superseded_by = new
        return new
