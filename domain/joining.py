"""Which sentences of a message make one statement (ADRs 0083 and 0096). Pure.

``splitting.py`` cuts chat text into sentences; people then spread one fact over two
of them: a value with no subject of its own beside a subject with no value ("So, $500.
That's the budget cap."), a rule that points back at the value before it ("Never exceed
it."), a count of steps after the task it measures, and an answer to the question the
other side asked ("When's the freeze?" / "March 3, last I heard."). ``sentences`` joins
them so that the checklist never keeps a value apart from what it is the value of;
``asked_last`` hands a message's closing question to the next message.
"""

from __future__ import annotations

import re

from .cues import (_CASELESS, _CUES, _DONE, _FILLER, _HEDGE, _NUM_WORD, _REQUEST, _SOFT_PREFERENCE, _STOP, TASK,
                   _has_value, _value_less_rule, subject_words)
from .splitting import SENTENCE_CHARS, split_raw


def sentences(text: str, asked: str | None = None) -> list[str]:
    """Sentences of a message, a value never apart from its subject (ADR 0083): a
    sentence with a value and no subject of its own ("So, $500.") and a neighbour with
    the subject and no value ("That's the budget cap.") are one statement; so is a
    value-less rule that points back at the value before it. ``asked``: the question
    that ended the message before (ADR 0096); an answer opening this one joins it."""
    raw = _topic_to_wish([s.strip(" -*\t") for s in split_raw(text) if s and s.strip(" -*\t")], text)
    if asked is not None and raw:
        if not _belongs_to(asked, raw[0]):
            asked = None
        else:
            raw = [asked, *raw]
    out: list[str] = []
    for n, s in enumerate(raw):
        if out and _belongs_to(out[-1], s) and not (n + 1 < len(raw) and _leads(s, raw[n + 1], out[-1])):
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    if asked is not None and out and out[0] == asked:
        out.pop(0)  # (not joined after all: the question was the other message's)
    return out


def _topic_to_wish(raw: list[str], text: str) -> list[str]:
    """A topic that closes a run-on sentence belongs to the wish after it (ADR 0099):
    "flip the timeout to 75s for string formatting" / "I'd rather we use f-strings" — the
    wish's subject is "string formatting", not the timeout's; a wish without it is about
    nothing, so neither kept nor reported as what it is."""
    out = list(raw)
    for n in range(len(out) - 1):
        m = _TRAILING_TOPIC.search(out[n])
        # (never across a line break: a bullet or a chat line is a whole of its own)
        if m and m.start() > 0 and _WISH.match(out[n + 1]) \
                and re.search(rf"{re.escape(out[n])}[ \t]+{re.escape(out[n + 1])}", text):
            out[n], out[n + 1] = out[n][: m.start()].rstrip(" ,;"), f"{m.group(0).strip()} {out[n + 1]}"
    return out


# (a topic phrase closing a sentence, and the wish the splitter cut it from)
# (no stop after it: "... for string formatting." is a sentence of its own, complete)
_TRAILING_TOPIC = re.compile(r"\b(?:for|as for|regarding|when it comes to)\s+(?:the\s+|our\s+|my\s+|all\s+)?"
                             r"[A-Za-z](?:[\w.-]*\w)?(?:\s+[A-Za-z](?:[\w.-]*\w)?){0,3}\s*$", re.I)
_WISH = re.compile(r"^\s*I(?:'d| would)\s+(?:rather|prefer)\b|^\s*I\s+(?:\w+ly\s+)?prefer\b")


def asked_last(text: str) -> str | None:
    """The question that ends a message, when it asks for a subject's value ("When's the
    freeze?"): the next message's answer ("March 3, last I heard.") is about it."""
    raw = [s.strip(" -*\t") for s in split_raw(text[-400:]) if s.strip(" -*\t")]
    last = raw[-1] if raw else ""
    return last if _asks(last) or _asks_yes_no(last) else None


def _asks(s: str) -> bool:
    """A question about a subject, asking for its value: not a request to the assistant,
    no value of its own."""
    # (short: a long sentence ending in "?" is a report with a question glued on, and an
    # answer to that question is not about the report)
    return (s.endswith("?") and len(s) <= 100 and not _REQUEST.match(s) and not _ASK_ACTION.match(s)
            and not _has_value(s) and bool(subject_words(s)))


# ("shall we ...?", "should I ...?", "do you want ...?": asking to act, not for a value)
_ASK_ACTION = re.compile(r"^\s*(?:shall|should|do|does|did|want|may|mind|is it ok|are you)\b|"
                         r"^\s*(?:can|could) (?:we|i)\b|^\s*any (?:objections|thoughts)\b", re.I)


def _asks_yes_no(s: str) -> bool:
    """A yes/no question about the work, which the catch-all keeps open ("Should the
    export keep archived projects?", ADR 0103): a yes or a no answers it. Not an offer or
    a check-in ("Should I run it?", "Does that help?")."""
    return (s.endswith("?") and len(s) <= 200 and "? " not in s and bool(_YES_NO_Q.match(s))
            and not _YES_NO_SELF.match(s) and len(subject_words(s)) >= 2)


_YES_NO_Q = re.compile(r"^\s*(?:should|shall|do|does|did|is|are|will|would|can|could|has|have)\b", re.I)
_YES_NO_SELF = re.compile(r"^\s*\w+\s+(?:i|we|you|that|this|it)\b", re.I)  # (asking to act: ADR 0096)
# (a yes or a no, said as such: "Yes, keep them.", "It does, 19% VAT included.", "No.")
_YES_NO_ANSWER = re.compile(r"^\s*(?:yes|yeah|yep|yup|no|nope|nah|correct|"
                            r"(?:it|they|we|you) (?:do|does|did|is|are|should|will|can|has|have)(?:n't| not)?)\b", re.I)


def _answer(s: str) -> bool:
    """An answer's shape (ADR 0096): its head, up to the first comma or dash, is a value,
    a number word, or a name or one term, with no subject of its own — "March 3, last I
    heard", "Five, I think", "Marta Nowak, according to the rota", "RabbitMQ, since the
    team knows it"; never a reply of talk ("Sure, I'll do it", "Good question").
    """
    if s.endswith("?") or _REQUEST.match(s):
        return False
    if _ANSWER_MARK.match(s):
        return True  # ("Q: ...? A: nobody knows yet.": said to be the answer)
    # (how the answer was found or that it is one, then the answer: "Checked the lockfile:
    # 2.7.4.", "That'd be Team Falcon." — the lead-in is no subject of its own)
    s = _ANSWER_LEAD.sub("", s, count=1)
    head = _ANSWER_HEAD.split(s, maxsplit=1)[0].strip()
    if not head or len(head) > 60:
        return False
    if _DONE.fullmatch(head.lower()) or (_DONE.match(head) and len(head.split()) <= 3):
        return True  # ("The schema migration? Done.", "Finished this morning.")
    head_words = re.findall(r"[A-Za-z][\w'.-]*", _HEDGE.sub(" ", head))
    if not head_words and not re.search(r"\d", head):
        return False
    if all(w.lower() in _STOP or w.lower() in _FILLER for w in head_words) and not re.search(r"\d", head):
        return False
    if _UNANSWERED.match(head):
        return True  # ("…?? nobody's answered": the question's state, ADR 0106)
    if _has_value(head) or _BARE_NUMBER.match(head):
        # (one token is the value itself: "eu-west-1, next to the database")
        return " " not in head or not subject_words(_BARE_NUMBER.sub(" ", head))
    # (a term alone: "Postgres.", "pytest, since it's there", "Marta, I think")
    return len(head_words) <= 2 and not _ANSWER_NOT.match(head)


# (said of a question: no one has its answer — "nobody's answered", "no one knows yet")
_UNANSWERED = re.compile(r"^(?:but\s+|and\s+|still\s+)?(?:nobody|no one|none of us|no-one)(?:'s|\s+has|\s+have)?\s+"
                         r"(?:\w+\s+)?(?:answered|replied|decided|knows?|checked|confirmed|said|an answer)\b|"
                         r"^(?:still\s+)?(?:unanswered|undecided|no answer)\b", re.I)
_ANSWER_MARK = re.compile(r"^\s*A\s*:\s*\S")
_ANSWER_LEAD = re.compile(r"^\s*(?:(?:that|it)(?:'d| would) be|that's|that is|it's|it is|"
                          r"(?:i\s+)?(?:checked|looked(?: at| it up in)?|found|asked)\b[^:.?!]{0,40}:)\s+", re.I)
_ANSWER_HEAD = re.compile(r",|;|\s[\u2013\u2014-]\s|\s\(|[.!](?:\s|$)")
_BARE_NUMBER = re.compile(rf"^(?:(?:about|around|roughly|maybe|probably|just|only|like|um|uh|oh|prob|approx\.?)\s+)*"
                          rf"(?:{_NUM_WORD}|\d[\d,.]*)\b", re.I)
# (one word that is talk, not a term: "Sure", "Done", "Nope", "Thanks")
_ANSWER_NOT = re.compile(r"^(?:sure|done|nope|nah|thanks|cool|no|yes|yeah|ok|okay|fine|great|agreed|same|"
                         r"nothing|none|nobody|unknown|dunno|later|soon|maybe|why|what|how)\b", re.I)


def _fits(question: str, s: str) -> bool:
    """Whether a reply after "that's", "it's" or "that'd be" gives what was asked: a
    value, a name ("That'd be Team Falcon.") or the question's own subject; "That's
    Priya's call." is talk about who decides, and joined it would stand for the value."""
    m = _TALK_LEAD.match(s)
    if not m:
        return True
    head = _ANSWER_HEAD.split(s[m.end():], maxsplit=1)[0].strip()
    if re.search(r"\w'+s\b", head):
        return False  # (whose call, whose job: not the value)
    if re.fullmatch(r"(?:mon|tues|wednes|thurs|fri|satur|sun)day (?:today|tonight)", head, re.I):
        return False  # ("It's Friday today, I'm off Monday.": what day it is, not the date asked)
    return (_has_value(head) or bool(_BARE_NUMBER.match(head)) or bool(_NAME_HEAD.fullmatch(head))
            or bool(set(subject_words(head)) & set(subject_words(question))))


_TALK_LEAD = re.compile(r"^\s*(?:(?:that|it)(?:'d| would) be|that's|that is|it's|it is)\s+", re.I)
_NAME_HEAD = re.compile(r"[A-Z][\w.-]*(?:\s+[A-Z][\w.-]*){0,3}")


def _leads(s: str, after: str, before: str) -> bool:
    """Whether a value without a subject belongs to the sentence after it rather than the
    one before ("I think it was June 3? For the audit, yes."): the next one has the
    subject and no value, and the one before is not a subject asked as a question
    ("Log retention? Roughly 90 days.")."""
    return (not (before.rstrip().endswith("?") and not _REQUEST.match(before)) and _has_value(s)
            and not subject_words(s) and not _has_value(after) and bool(subject_words(after))
            # (the value is asked, or the next sentence points back at it: "For the audit,
            # yes." — not any next sentence: "3 of 7 are done now The function is split")
            and (s.rstrip().endswith("?") or bool(_POINTS_BACK.match(after))))


# (a subject named after the fact: "For the pool ceiling, that is.", "About the demo, I mean.")
_AFTERTHOUGHT = re.compile(r"^(?:for|as for|about|regarding|on)\b[^.?!]{3,80},\s*(?:that is|i mean|mind you)\W*$", re.I)
_POINTS_BACK = re.compile(r"^(?:that's|that is|this is|it's|it is|for|as for|re:?|about|on)\b", re.I)


def _belongs_to(before: str, s: str) -> bool:
    """Whether ``s`` completes the statement ``before`` makes: one has the value, the
    other the subject; or ``s`` points back at ``before``'s value."""
    if len(before) + len(s) > 2 * SENTENCE_CHARS:
        return False
    value_before, value_here = _has_value(before), _has_value(s)
    # (a sentence in a caseless script says its own subject, which no rule reads: "3月15日"
    # answers, "数据库迁移的截止日期是3月15日。" does not, ADR 0103)
    if _asks(before) and len(_CASELESS.findall(s)) < 4 and ((_answer(s) and _fits(before, s)) or (_SOFT_PREFERENCE.search(s) is not None
                                         and not subject_words(_SOFT_PREFERENCE.sub(" ", s)))):
        return True  # (ADR 0096: "When's the freeze? March 3, last I heard.", "Emojis? Hard pass.")
    if _asks_yes_no(before) and (_YES_NO_ANSWER.match(s) or _UNANSWERED.match(s)):
        # ("Should the export keep archived projects? Yes, keep them." / "... Still undecided.")
        return True
    if value_before and not value_here and _AFTERTHOUGHT.match(s):
        return True  # ("40 connections is the ceiling. For the connection pool ceiling, that is.")
    if value_before and not value_here and (not subject_words(before) or _value_less_rule(s)):
        return bool(subject_words(s)) or _value_less_rule(s)
    if value_here and not subject_words(s) and not value_before and not _CASELESS.search(s):
        # (a sentence in a caseless script has a subject no rule reads, ADR 0103)
        return bool(subject_words(before)) and _fits(before, s)  # ("Log retention? Roughly 90 days.")
    if not value_before and _NAMED.search(s) and not re.search(r"\d", s) and not before.rstrip().endswith("?") \
            and not _REQUEST.match(before) and not _CASELESS.search(s) and _phrase(before) and not _phrase(s) \
            and not _ARTICLE_NOUN.search(_REASON.sub(" ", s)) and not _LABELLED.search(s) \
            and _CHOOSES.search(s):
        # (a name said with no subject phrase belongs to the topic just named without a value:
        # "We benchmarked the options for the message broker. Going with Kafka, since ...",
        # ADR 0114; kept apart, the choice was on one checklist line and its subject on another)
        return True
    # (a count of steps says how far the task before it is: "The export is done. That
    # makes 4 of 6.")
    return bool(_PROGRESS.search(s)) and dict(_CUES)[TASK].search(before) is not None and not _PROGRESS.search(before)


_PROGRESS = re.compile(r"\b\d+ (?:out )?of (?:the )?\d+\b|\b\d+/\d+ (?:steps?|tasks?|items?|things?|done|complete)")


def _phrase(s: str) -> bool:
    """Two content words in a row, a reason clause and capitalised words (names) aside: a
    subject phrase ("the message broker"), not a verb alone ("Going with Kafka")."""
    words = re.findall(r"[A-Za-z][\w'-]*", _REASON.sub(" . ", s))
    content = [len(w) > 2 and w.islower() and w not in _STOP and w not in _FILLER for w in words]
    return any(a and b for a, b in zip(content, content[1:]))


# (a name within the sentence, not its opener: "wiring in Kafka", "going with RabbitMQ")
_NAMED = re.compile(r"(?<=[a-z,] )(?!I\b)[A-Z][a-z]{2,}\b|\b[A-Z][a-z]+[A-Z]\w*\b")
# (a choice said before the name; a thank-you or a meeting note names someone and chooses
# nothing: "Lunch with Omar went long.", "Pinged Lena about it.", ADR 0114 amended)
_CHOOSES = re.compile(r"\b(?:go(?:ing)? with|went with|wir(?:e|ing) in|wired in|settl(?:e|ed|ing) on|switch(?:ed|ing)? "
                      r"to|mov(?:e|ed|ing) to|migrat(?:e|ed|ing) to|pick(?:ed|ing)?|cho(?:ose|se|osing)|opt(?:ed|ing)? "
                      r"for|us(?:e|ed|ing)|adopt(?:ed|ing)?|select(?:ed|ing)?|land(?:ed|ing)? on|stick(?:ing)? with|stay(?:ed|ing)? "
                      r"with|decided on|replac(?:e|ed|ing) \w+ with|winner is|prefer(?:red)?|keep(?:ing)?|"
                      r"roll(?:ed|ing)? out|standardi[sz](?:e|ed|ing) on)\b", re.I)
# (a noun after an article is a subject of its own: "The importer now reads Parquet.")
_ARTICLE_NOUN = re.compile(r"\b(?:the|a|an|our|my|your|this|that|its|their)\s+[a-z]{3,}", re.I)
_REASON = re.compile(r"\b(?:because|since|given that|due to|so that|as it|as its)\b.*$", re.I)
# (a name right after a label has its subject there: "ORM: SQLAlchemy Core.")
_LABELLED = re.compile(r":\s+[A-Z]")
