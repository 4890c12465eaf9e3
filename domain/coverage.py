"""Every loss reported, with no cue word (issue 44, ADR 0109): a check of the result. Pure.

The checklist reads sentences by their cues; a statement it never read as an item could
leave the context with no report. This check does not ask what a sentence *is*: at each
compaction, every sentence of people's prose that leaves the context — the user's and
the assistant's messages the compaction covers, and the lines of the previous summary
that stood for earlier ones — and carries a *value* (below) is looked for in the new
context (the summary with its checklist, and the raw tail kept after it). One the new
context no longer states is a loss, listed once, here (its sentence, its seq).

**Values** (``valuetokens.values``): a number (with its unit, an amount, a count, a version, a time,
an ordinal), a number word with a unit ("forty-five minutes"), a date (a month and day,
an ISO date, a weekday, a quarter), a path, a file name, a URL, an e-mail address, an
identifier (``snake_case``, ``camelCase``, a word with a digit, ``ALL_CAPS``), a quoted
or back-ticked string, and a capitalised name (a capitalised word that does not open the
sentence and is no stop word, or a run of two or more: "Redis Streams", "Priya Raman").
A word alone at the start of a sentence is no name: English capitalises every opener.

**Stated** (``Context.states``): some line of the new context holds every value of the
sentence (as whole tokens, case aside, citations and superseded notes taken out) and at
least ``SHARED`` of the sentence's own content words (half of them, at most ``MOST``;
compared by their first five letters, "replicas" and "replica" alike). A summary that
keeps the sentence, clips it around its values or restates it with its subject states
it; a line that only shares a number does not.

**Not statements**: a user's one-off request to act now ("Could you ...", "Please ...",
"Run the suite again": ``cues._REQUEST``, ``remarks._ONE_OFF``, as for remarks, ADR
0099): what it asks for is done or not in the answer, which is checked; tool results (re-run the tool: the raw history keeps them,
and a log's hundred numbers would flood the report; the ledger lists their errors),
fenced code blocks and code-like lines (code lives in files; its identifiers are on
every line), system and developer messages (pinned: they never leave), and the previous
summary's sections that stand for tools and facts (``Files and Operations``, ``Tool
Results and Failures``, ``Exact Facts``: the ledger's exact facts hold those).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .cues import _FILLER, _REQUEST, _STOP, WORD, subject_words
from .joining import sentences
from .lineindex import LineIndex
from .remarks import _ONE_OFF, whole
from .codelines import code_like, stated_pin
from .valueforms import plain
from .valuetokens import values

#: The kind of a coverage loss in ``dropped_items``: a sentence the new context no
#: longer states (its value: the sentence, whole up to 560 characters, else clipped
#: around its values).
UNSTATED = "unstated"
#: Of a sentence's content words, the share a line must hold to state it, and at most
#: this many: a long sentence clipped around its values still states it.
SHARED, MOST = 0.5, 3
#: A user's sentence with no value is looked for by its content words when it has this many.
BY_WORDS = 3
#: The previous summary's sections that stand for tools and exact facts, not for what
#: people said (``summary.HEADINGS``).
NOT_PROSE = frozenset(("Files and Operations", "Tool Results and Failures", "Exact Facts"))

_CITATION = re.compile(r"\s?\(\s*seqs?\b[^()\n]*\)|\((?:possibly )?superseded[^()\n]*\)|;?\s*possibly superseded at seq \d+", re.I)
# (a sentence a summary marks superseded is not stated as current: a wrong supersession
# would otherwise hide a loss; the line it stands on was listed when it was marked)
_MARKED = re.compile(r"\(superseded at seq \d+\) [^\n]*?(?:[.!?](?=\s)|$)", re.M)
_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
# (an indented bullet is a nested list item, not code: "    - budget stays under $4,000", ADR 0116)
_INDENTED = re.compile(r"^(?: {4}|\t)(?![ \t]*(?:[-*\u2022]|\d+[.)])[ \t]+[^\W\d_]).*$", re.M)
_SEQ = re.compile(r"\(\s*seqs?\s+(\d+)", re.I)
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_KIND_PREFIX = re.compile(r"^[a-z_]+:\s+")
_LINE_KIND = re.compile(r"^([ \t]*[-*][ \t]+)[a-z_]+:(?=\s)", re.M)  # (within its line: the lines stay aligned)
_NEGATION = re.compile(r"\b(?:never|not|no|nothing|nobody|cannot|without|avoid|stop)\b|n['\u2019]t\b", re.I)


def words(sentence: str, keys: Sequence[str]) -> set[str]:
    """The sentence's own content words (no stop word, filler or value), by their first
    five letters."""
    bare = sentence.casefold()
    for key in keys:
        bare = bare.replace(key, " ")
    return {w[:5] for w in re.findall(WORD, bare) if len(w) > 2 and w not in _STOP and w not in _FILLER}


def _pattern(key: str) -> re.Pattern[str]:
    """``key`` as a whole token; a number may have its unit glued on ("4pm", "90s")."""
    before = r"(?<![\w])" if key[:1].isalnum() or key[:1] == "_" else ""
    after = r"(?![\w])(?![.,]\d)" if key[-1:].isalnum() or key[-1:] == "_" else ""
    if key[:1].isdigit():
        before, after = r"(?<![\w.,])", r"(?!\d)(?![.,]\d)"
    return re.compile(before + re.escape(key) + after)


class Context:
    """The new context, read once: its lines (citations and superseded notes out,
    casefolded), where each starts, and each line's content words on demand."""

    def __init__(self, texts: Sequence[str] | Iterable[str]) -> None:
        texts = list(texts)
        # (a checklist line's kind is no word of what it states: "- setting_text: 12, for now.")
        self.text = "\n".join(plain(_LINE_KIND.sub(" ", _CITATION.sub(" ", _MARKED.sub(" ", t)))).casefold()
                              for t in texts if t)
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        # (the seq each line cites first: a line quoting a sentence cites its message)
        cites = [int(m.group(1)) if (m := _SEQ.search(ln)) else None for t in texts if t for ln in t.split("\n")]
        self.cites = cites if len(cites) == len(self.starts) else []
        self._words: dict[int, set[str]] = {}
        self._lines: dict[str, list[int]] = {}
        self._index: LineIndex | None = None  # (built on the first check: ADR 0115)
        self._patterns: dict[str, re.Pattern[str]] = {}  # (thousands of values: more than re's own cache)

    def _line(self, n: int) -> str:
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[n]:end]

    def _lines_with(self, key: str) -> list[int]:
        """The lines holding ``key`` as a token (each key searched once: sentences share them)."""
        if key not in self._lines:
            pattern, found, at = _pattern(key), {}, self.text.find(key)
            while at >= 0:  # (a plain search first, the token test only where it occurs)
                if pattern.match(self.text, at):
                    found[bisect_right(self.starts, at) - 1] = None
                at = self.text.find(key, at + 1)
            self._lines[key] = list(found)
        return self._lines[key]

    def _line_words(self, n: int) -> set[str]:
        if n not in self._words:
            self._words[n] = {w[:5] for w in re.findall(WORD, self._line(n)) if len(w) > 2}
        return self._words[n]

    def states(self, said: Said) -> bool:
        """Whether one line holds every value of ``said`` and ``said.need`` of its words."""
        if not said.keys:  # (a user's sentence with no value: a line with half its words, ADR 0116,
            # and its polarity: "never force-push" is not stated by "I force-pushed")
            negated = bool(_NEGATION.search(said.text))
            return not said.need or any(len(said.own & self._line_words(n)) >= said.need
                                        and bool(_NEGATION.search(self._line(n))) == negated
                                        for n in range(len(self.starts)))
        if self._index is None:
            self._index = LineIndex(self.text.split("\n"))
        rarest, found = max(said.keys, key=len), self._index.lines(said.keys)
        if found is not None and not found:
            return False
        others = [self._patterns.get(k) or self._patterns.setdefault(k, _pattern(k))
                  for k in said.keys if k != rarest or found is not None]
        for n in self._lines_with(rarest) if found is None else sorted(found):
            line = self._line(n)
            here = self._line_words(n)
            if all(p.search(line) for p in others) and len(said.own & here) >= said.need and (
                    not said.also or said.also & here or (said.cited and n < len(self.cites) and self.cites[n] == said.seq)):
                return True
        return False


@dataclass(frozen=True)
class Said:
    """One sentence that leaves the context: the sentence, its values, the content words a
    line must share to state it (``need`` of ``own``), its seq, and where it stands among
    the sentences of its message (or summary line), which the report quotes around it."""

    text: str
    keys: tuple[str, ...]
    seq: int
    own: frozenset[str] = frozenset()
    need: int = 0
    pieces: tuple[str, ...] = ()
    at: int = 0
    #: Words of which a stating line must hold one besides (its subject, said around it).
    also: frozenset[str] = frozenset()
    #: A line citing its own seq states it without ``also``: its quote, not a like sentence.
    cited: bool = False


@dataclass(frozen=True)
class Loss:
    """One entry of the report: an excerpt of a message (or a summary line) that holds
    unstated sentences with the sentence before and after each, and its seq."""

    text: str
    seq: int


def said(text: str, seq: int, before: str = "", after: str = "", prior: str = "") -> Said | None:
    """``text`` as a loss to look for, when it carries a value. A fragment (fewer than two
    content words of its own, or no subject word once its values and hedges are out:
    "Priya Raman, for now.") is stated by a line with its values and one word of the
    sentences around it, where its subject is; alone in its message (or a summary's
    line), by its values. An answer (after a question: "The on-call reviewer this week?
    Priya Raman, as agreed.") is stated only with a word of its question besides."""
    keys = values(text)
    if not keys:
        return None
    own = words(text, keys)
    question = words(before, values(before)) - own if before.rstrip().endswith(("?", "\uff1f")) else set()
    # (a hedge is no subject: "Debug, until further notice." names nothing it is about)
    if len(own) >= 2 and subject_words(text):
        return Said(text, tuple(keys), seq, frozenset(own), min(MOST, math.ceil(len(own) * SHARED)),
                    also=frozenset(question))
    if not (before or after):  # (a line on its own: its values are all it says)
        # (a message of one fragment is about the message before it, ``prior``: "Fixed on
        # March 1." said again elsewhere in the tail is another fix, ADR 0114)
        return Said(text, tuple(keys), seq, frozenset(own), 0, also=frozenset(words(prior, values(prior)) - own),
                    cited=True)
    # (one word of the sentences around it: the fragment's own word proves nothing, the
    # checklist may keep "Tomasz Kowal, as agreed." without the question it answers)
    around = (words(before, values(before)) | words(after, values(after))) - own
    return Said(text, tuple(keys), seq, frozenset(own), 0, also=frozenset(question or around))


def prose(text: str) -> list[str]:
    """The sentences of a person's message that can carry a value: fenced code blocks,
    indented lines and code-like sentences out."""
    text = _INDENTED.sub(" ", _FENCE.sub(" ", text))
    return [s for s in sentences(text) if not code_like(s) or stated_pin(s)]


def _said_among(pieces: Sequence[str], seq: int, requests: bool = True, prior: str = "",
                by_words: bool = False) -> list[Said]:
    shared = tuple(pieces)
    out = []
    for n, s in enumerate(shared):
        if not requests and (_REQUEST.match(s) or _ONE_OFF.match(s)):
            continue  # (a one-off request is no statement: its answer is what is checked)
        before = shared[n - 1] if n else ""
        found = said(s, seq, before, shared[n + 1] if n + 1 < len(shared) else "", prior)
        if found is None and before.rstrip().endswith(("?", "\uff1f")) and (asked := values(before)):
            # (an answer with no value of its own is about the values its question names:
            # "LOG_LEVEL on staging? Warning until the launch." is stated with LOG_LEVEL)
            own = words(s, ())
            found = Said(s, tuple(asked), seq, frozenset(own), min(MOST, math.ceil(len(own) * SHARED)))
        elif found is None and by_words and len(own := words(s, ())) >= BY_WORDS and subject_words(s):
            # (a user's words without a value are still theirs, ADR 0116; the assistant's are not)
            found = Said(s, (), seq, frozenset(own), math.ceil(len(own) * SHARED))
        if found is not None:
            out.append(replace(found, pieces=shared, at=n))
    return out


def said_in(messages: Iterable[tuple[int, str, str]]) -> list[Said]:
    """The value-carrying sentences of ``messages`` (seq, role, text): the user's and
    the assistant's only."""
    out, prior = [], ""
    for seq, role, text in messages:
        if role in ("user", "assistant") and text:
            pieces = prose(text)
            out += _said_among(pieces, seq, requests=role != "user", prior=prior, by_words=role == "user")
            prior = pieces[-1] if pieces else prior
    return out


def said_in_summary(summary: str | None, default_seq: int) -> list[Said]:
    """The value-carrying sentences of a summary's lines that stand for what people said
    (not its tool, file and exact-fact sections), each with the first seq its line cites
    (else ``default_seq``: the last the summary covered)."""
    groups: dict[object, tuple[int, list[str]]] = {}  # (a message's lines, in order: ADR 0116)
    section = ""
    for n, line in enumerate((summary or "").splitlines()):
        heading = _HEADING.match(line)
        if heading:
            section = heading.group(1)
            continue
        if section in NOT_PROSE or not line.strip():
            continue
        line = _MARKED.sub(" ", _LINE_KIND.sub(r"\1", line))  # (no bare "setting_text:" left to read, ADR 0115)
        cited = _SEQ.search(line)
        seq = int(cited.group(1)) if cited else default_seq
        body = _KIND_PREFIX.sub("", _BULLET.sub("", _CITATION.sub(" ", line)).strip())
        if body.lower().startswith("latest request:"):
            body = body[len("latest request:"):].strip()
        # (the lines citing one message are its sentences, quoted together when they leave, each
        # once: a line's subject is often the one before, "Compared the HTTP clients." / "aiohttp.")
        pieces = groups.setdefault(seq if cited else n, (seq, []))[1]
        pieces += [p for p in prose(body) if p not in pieces]
    # (a line citing its message still states a fragment of it; an answer needs its question's word)
    return [s if s.at and s.pieces[s.at - 1].rstrip().endswith(("?", "\uff1f")) else replace(s, cited=True)
            for seq, pieces in groups.values() for s in _said_among(pieces, seq, requests=False)]


def losses(leaving: Iterable[Said], context: Context, listed: Context) -> list[Loss]:
    """What of ``leaving`` the new ``context`` no longer states and no item ``listed``
    (the ledger's report of this compaction) names already, each sentence once: one
    entry per stretch of a message, each unstated sentence with the sentence before and
    after it (its subject is often there: "The on-call reviewer? Priya Raman.")."""
    seen: set[str] = set()
    lost: dict[int, list[Said]] = {}
    for s in leaving:
        key = " ".join(s.text.split()).casefold()
        if key in seen:
            continue
        seen.add(key)
        if not (context.states(s) or listed.states(s)):
            lost.setdefault(id(s.pieces) if s.pieces else id(s), []).append(s)
    out = []
    for group in lost.values():
        pieces = group[0].pieces or (group[0].text,)
        stretches: list[list[int]] = []
        for s in sorted(group, key=lambda x: x.at):
            lo, hi = max(0, s.at - 1), min(len(pieces) - 1, s.at + 1)
            if stretches and lo <= stretches[-1][1] + 1:
                stretches[-1][1] = hi
            else:
                stretches.append([lo, hi])
        for lo, hi in stretches:
            out.append(Loss(" ".join(whole(p) for p in pieces[lo:hi + 1]), group[0].seq))
    return out
