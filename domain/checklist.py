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
languages matches no cue and is not cut: it is kept whole where it is kept at all.
"""

from __future__ import annotations

import re

from .followups import is_follow_up
from .splitting import SENTENCE_CHARS, clip, split_raw

RULE, DECISION, PERSON, DATE, AMOUNT = "rule", "decision", "person", "date", "amount"
VERSIONED, SETTING_TEXT, PREFERENCE, TASK, QUESTION = "versioned", "setting_text", "preference", "task", "question"
#: A sentence that changes something ("the ORM is now Tortoise") without another kind's
#: cue: it takes the kind of the item it supersedes (``Ledger.merge``).
UPDATE = "update"
#: A pronoun follow-up ("that moved to Friday", ADR 0091) before ``ledger.extract`` gives
#: it the subject of the item before it; one with nothing before it is an update as is.
FOLLOW_UP = "follow_up"
#: A salient sentence no cue names (ADR 0083): it carries a value or a named entity, a
#: commitment or a reason, and a subject of its own. People say facts without cue words.
STATEMENT = "statement"
#: Checklist kinds, in the order a summary lists them (and their write-back priority).
CHECKLIST_KINDS = (RULE, PREFERENCE, DECISION, TASK, QUESTION, PERSON, DATE, AMOUNT, VERSIONED, SETTING_TEXT,
                   UPDATE, STATEMENT)
HEADING = "Fact Checklist"

_NUM_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
             r"forty|fifty|sixty|seventy|eighty|ninety|hundred|half)(?:-\w+)?")
_UNIT = (r"(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|"
         r"[KMGT]i?B|kilobytes?|megabytes?|gigabytes?|%|percent|requests?|replicas?|connections?|"
         r"workers?|retries|users?|rows?|items?|nodes?|cores?|tokens?)")
_AMOUNT = re.compile(rf"[$€£]\s?\d[\d,.]*\b|\b\d[\d,.]*\s?{_UNIT}\b|\b{_NUM_WORD}\s+{_UNIT}\b", re.I)
_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
          r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)")
_DATE = re.compile(
    rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|"
    r"\b\d{4}-\d{2}-\d{2}\b|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b|"
    r"\b(?:Q[1-4]|end of (?:the )?(?:week|month|quarter|sprint))\b"
)
_VERSION = re.compile(r"\b([A-Za-z][\w.-]*[A-Za-z0-9])(?:(?:\s*(?:==|~=|>=|<=|@)\s*|\s+(?:to|at|is|on|version|v|past|beyond|"
                      r"above|below|from|off|than|under|over|before|after)?\s*)v?(\d+\.\d+(?:\.\d+)?)|"
                      r"[,:?]\s+v?(\d+\.\d+\.\d+))\b")
# (the version said first, ADR 0096: "5.0.8 of redis-py is what we ship")
_VERSION_FIRST = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\s+(?:of|for)\s+([A-Za-z][\w.-]*[A-Za-z0-9])|^\W*v?\d+\.\d+\.\d+\b()")
_SETTING = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
_NAME = re.compile(r"\b(?:[A-Z][a-z]+ (?:[A-Z][a-z]+|[A-Z]\.)(?: [A-Z][a-z]+)?|Team [A-Z]\w+|the [A-Z]\w+ team)\b")
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


_CUES = (
    (QUESTION, re.compile(
        r"\b(open question|unresolved|undecided|haven't decided|not decided|not sure|unsure|tbd|to be decided|"
        r"needs? to answer|come back to it|whether)\b", re.I)),
    (DECISION, re.compile(
        r"\b(went with|go(?:ing)? with|settled on|decided|decision|chose|chosen|picked|opted for|switch(?:ed)? "
        r"(?:\w+ ){0,3}to|lock in|final call|wins for|we(?:'ll| will) use|reversing course|the fix is|"
        r"root cause|makes the most sense|let's (?:just )?go|we're doing|we are doing|ended up (?:with|going|using|picking))\b",
        re.I)),
    (PREFERENCE, re.compile(
        r"\b(i(?: \w+ly)? prefer|i'd prefer|i would prefer|i'd like|i would like|my preference|i like|i don't want|"
        r"i do not want|please don't|please do not|i'd rather|i would rather|favou?r|how i like|can't stand|"
        r"whenever you can|ever\b|stick (?:to|with)|(?:big )?fan of|personally|can we not|let's not|please no|"
        r"keep (?:\w+ ){1,3}out of)", re.I)),
    (RULE, re.compile(
        r"\b(must|never|do not|don't|always|at most|no more than|at least|hard constraint|constraint|rule|"
        r"non-negotiable|not negotiable|stay within|tops out|sign-off|approval|exceed|go over|limit|cap|"
        r"required|mandatory|forbidden|not allowed|make sure|only use)\b", re.I)),
    (TASK, re.compile(
        r"\b(step \d+(?: of \d+)?|\d+ ?(?:/|out of|of) ?\d+ (?:steps?|tasks?|are|done)|checked off|wrapped up|"
        r"still to do|left to do|remaining|next step|blocked on|(?:is|are|now) (?:done|finished|complete)|"
        r"finished|completed|wraps?(?: up)?|(?:is|are|'s) (?:sorted|shipped|merged|landed)|ticked off|crossed off|"
        r"\d+ (?:out )?of (?:the )?\d+|(?<=\w)\s*[\u2014\u2013:-]+\s*(?:done|finished|complete|completed))\b", re.I)),
)
# (a wish said softly, ADR 0096: "I lean towards X", "X suits me better than Y", "my vote is
# for X", "ideally X", "I'm not keen on X", "X over Y for Z" — a preference only when it
# names something besides the wish itself: "that suits me" or "works for me" is assent)
_SOFT_PREFERENCE = re.compile(
    r"\blean(?:ing)?\s+(?:more\s+|heavily\s+|slightly\s+|a bit\s+)?towards?\b|"
    r"\b(?:suits?|works?|fits?|sits?)\s+(?:me|us)\s+(?:better|best|fine|well|nicely)\b|"
    r"\b(?:suits?|works?|fits?)\s+(?:better|best)\s+for\s+(?:me|us)\b|\b(?:better|nicer|easier)\s+for\s+(?:me|us)\b|"
    r"\bmy (?:vote|pick|choice|money|go-to|default|thing|rule of thumb)\b|\bi(?:'d| would)? vote for\b|"
    r"\bideally\b|\bif (?:it were|it was|it's) up to me\b|\bif i had my way\b|\bif i had to (?:choose|pick)\b|"
    r"\bpartial to\b|\bkeen on\b|\bnot (?:a |the )?(?:big |huge )?fan\b|\bsteer clear\b|\bstay away from\b|"
    r"\bi(?:'d| would) (?:sooner|much rather|go for|pick|choose|avoid|stick|lean|keep|use)\b|\bi tend to\b|"
    r"\b(?:happier|more comfortable) with\b|\bpreferabl[ey]\b|\b(?:nicer|better) if\b|"
    r"\b(?:i|we) (?:really |much |kind of |kinda )?(?:love|dislike|hate|enjoy)\b|\bnot (?:into|big on|wild about)\b|"
    r"\bmore of an? [\w-]+ (?:person|fan|shop|team)\b|\bno\b(?=(?:\s+[\w-]+){1,6},?\s+(?:please|thanks)\b)|"
    r"^\s*(?![\w.+-]*(?:ing|ed)\b)[\w.+-]+ over [\w.+-]+(?=,| for\b| in\b| as\b| please\b|\s*[.!]?\s*$)|"
    # (stance words: "I much prefer", "a big believer in", "beats", "the way to go", "drives me
    # nuts", "a no-go", "has no place in", "hard pass", "keep X free of", "go easy on")
    r"\bprefer(?:s|red|ring|ence)?\b|\bbeliever in\b|\b(?:nothing |\w+ )beats? (?!me\b)|\bthe way to go\b|"
    r"\b(?:wins?|win out) over\b|\b(?:reads?|feels?|looks?) (?:better|cleaner|nicer|clearer|saner)\b|"
    r"\b(?:happ(?:y|ier|iest)|comfortable) with\b|\bswear by\b|\bi(?:'m| am) (?:all )?(?:team|for)\b|"
    r"\b(?:drives?|makes?) me (?:nuts|crazy|mad|nervous|uneasy|twitchy|sad)\b|\bup the wall\b|\b(?:bugs?|annoys?) me\b|"
    r"\ballergic to\b|\bno-go\b|\bno place in\b|\bnot on my watch\b|\bhard pass\b|\bpass on\b|\bgo easy on\b|"
    r"\bsteer away\b|\b(?:keep|leave)\b(?=(?: \w+){1,4} (?:out of|free of|out)\b)|\b(?:live|do|go) without\b|"
    r"\bthe less\b(?=.{1,60}\bthe better\b)|\bgive me\b(?=.{1,40}\bover\b)|\bi(?:'d| would) love\b|"
    r"\b(?:can|could) we (?:please )?(?:skip|avoid|drop|ditch|leave out|go without|stay away from)\b|"
    r"\bi find\b(?=.{0,50}\b(?:nicer|easier|better|cleaner|clearer|simpler|nicest|easiest|best)\b)|"
    r"\b(?:easier|nicer|kinder) on (?:everyone|everybody|me|us|the \w+|\w+ers)\b|\brather not\b|\bdon't (?:love|like|want)\b|\b(?:would|'d) appreciate\b|"
    r",\s*(?:every (?:single )?time|all the way|any day)\s*[.!]*\s*$|\bplease,\s+no\b|\banything (?:but|except)\b|"
    # (a standing wish or a suggestion: "X for Y wherever possible", "X by default", "how about
    # X for Y?", "X gets my vote", "X is what I'd pick")
    r"\bwher(?:e|ever) (?:possible|you can|we can|it makes sense)\b|\bwhen(?:ever)? possible\b|\bif at all possible\b|"
    r"\b(?:by|as a|as the) default\b|\bdefault to\b|\bas a (?:rule|habit)\b|\bgoing forward\b|\bgets? my vote\b|"
    r"\b(?:how|what) about\b|\bany chance (?:we|you)\b|\bmind if (?:we|i)\b|\bwhy not\b|\bshouldn't we\b|"
    r"\b(?:can|could|shall) we (?:just |maybe |please )?(?:stick|default|standardi[sz]e|settle|keep)\b|"
    r"\b(?:is|are) what (?:i(?:'d| would)?|we'd|we would) (?:like|want|prefer|pick|choose|use|go for|reach for)\b|\bwhat (?:i|we)(?:'d| would) (?:use|pick|choose|go for)\b|"
    # (an opinion marked as one, or a practice judged: "IMO", "in my book", "X is the sane
    # choice for Y", "X makes Y so much easier")
    r"\bimh?o\b|\bin my (?:experience|book|opinion|view)\b|\bfor my money\b|\bto my mind\b|\bif you ask me\b|"
    r"\b(?:is|are|'s|'re) the (?:sane|right|better|best|obvious|clear|smart|preferred|nicer|cleaner|safer) "
    r"(?:choice|option|pick|call|way|move|default|approach)\b|"
    r"\b(?:is|are|'s|'re) (?:so |much |way |a lot |far )(?:nicer|better|cleaner|easier|saner|safer|simpler|clearer)\b|"
    r"\bmakes?\b(?=(?: [\w-]+){1,4} (?:so |much |way |a lot )?(?:easier|nicer|saner|simpler|less painful|"
    r"more pleasant|bearable|cleaner)\b)", re.I)
# (a piece of work reported done in any word order, ADR 0096: "Landed the audit export",
# "docs update complete", "got the backfill done", "crossed the load test off the list")
_DONE = re.compile(r"\b(?:done|finished|complete|completed|landed|sorted(?: out)?|shipped|wrapped(?: up)?|"
                   r"(?:crossed|ticked|checked|knocked|struck)(?=(?:\s+[\w-]+){0,5}?\s+off\b)|knocked out|"
                   r"over the line|out the door)\b", re.I)
# (said of work not yet done: "once the tests are done", "let me know when you're done")
_NOT_DONE = re.compile(r"^\s*(?:once|when|whenever|after|if|until|as soon as|before)\b|\b(?:you're|you are|you've|"
                       r"you have|when|once|until|if) (?:\w+ ){0,3}(?:done|finished|complete)|\blet me know\b", re.I)


def _reports_done(sentence: str) -> bool:
    """A statement that a piece of work is done: not a question, a request or a condition,
    and about something ("Done!" alone is about nothing)."""
    return (not sentence.rstrip().endswith("?") and not _REQUEST.match(sentence) and not _NOT_DONE.search(sentence)
            and bool(subject_words(_without_exact(_DONE.sub(" ", sentence)))))


_PLEASE_NO = re.compile(r"^\s*please,?\s+(?:no|don't|never|not)\b", re.I)
_UPDATE = re.compile(r"\b(is now|are now|now is|moved to|changed to|change of plan|switch(?:ed)?|becomes|"
                     r"instead|from now on|revised|new \w+ for|reversing|roll \w+ forward|"
                     # (chat: "scrap that, ...", "we ended up ...", "no longer", "... for X now")
                     r"scrap that|scratch that|ended up|no longer|not anymore|changed (?:my|our) minds?|"
                     r"(?:for|on|to) the \w+(?: \w+)? now)\b", re.I)
# ("so that's 2 of 5" is no purpose clause: "so that" followed by 's is a statement)
# (a condition after the subject is no part of it either, ADR 0096: two limits that both
# hold "unless finance signs off" are two subjects)
_REASON = re.compile(r"\b(?:because|since|given that|due to|so that(?!'s)|as it|the reason)\b|;|"
                     r"(?:(?<=\w )|(?<=\w, ))(?:unless|except (?:when|if)|as long as|so long as|provided)\b", re.I)
_STOP = frozenset("""a an the and or but of to in on at by for from with as is are was were be been being it its
this that these those we our you your they them their i me my he she his her not no nor so than then there here
now new old all any some each every only also just very too more most less least into over under about after
before again please can could should would will shall may might must do does did done have has had get got make
made set let use used using what which who whom whose when where why how if else up down out off per via
change plan update correction actually instead hard rule from today last week time thing
question open explicit approval never exceed without total already runs because like i'd i'm it's whether
heads changed comes happens merging anything belong needs answer sure someone back let's going went chose
settled decided decision picked opted final call wins lock reason compared options always don't won't can't
stay within tops going past needs sign-off non-negotiable negotiable constraint keep raise ops scratch number
becomes revised expect roughly checked dashboard numbers put mark calendar ready everything need forget plan
around lands scheduled took over ping breaks touching acts loop quarter ask they're
step steps finished complete completed wrapped checked
behind through along across between within without above below beyond under until since onto upon
us ours yours mine theirs him himself herself itself ourselves themselves one ones
isn't aren't wasn't weren't doesn't didn't hasn't haven't that's there's what's we're we've we'll you're
you'll they'll let's gonna things thing stuff list lists items tasks role roles starting effective
when's who's where's how's whats
previous former current interim acting outgoing incoming replace replaces replaced replacing yesterday tomorrow
tonight""".split())
#: Kinds whose later statement about the same subject replaces the earlier one.
SUPERSEDING = frozenset((RULE, DECISION, PERSON, DATE, AMOUNT, VERSIONED, SETTING_TEXT, TASK, STATEMENT))


def sentences(text: str, asked: str | None = None) -> list[str]:
    """Sentences of a message, a value never apart from its subject (ADR 0083): a
    sentence with a value and no subject of its own ("So, $500.") and a neighbour with
    the subject and no value ("That's the budget cap.") are one statement; so is a
    value-less rule that points back at the value before it. ``asked``: the question
    that ended the message before (ADR 0096); an answer opening this one joins it."""
    raw = [s.strip(" -*\t") for s in split_raw(text) if s and s.strip(" -*\t")]
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


def asked_last(text: str) -> str | None:
    """The question that ends a message, when it asks for a subject's value ("When's the
    freeze?"): the next message's answer ("March 3, last I heard.") is about it."""
    raw = [s.strip(" -*\t") for s in split_raw(text[-400:]) if s.strip(" -*\t")]
    last = raw[-1] if raw else ""
    return last if _asks(last) else None


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


def _answer(s: str) -> bool:
    """An answer's shape (ADR 0096): its head, up to the first comma or dash, is a value,
    a number word, or a name or one term, with no subject of its own — "March 3, last I
    heard", "Five, I think", "Marta Nowak, according to the rota", "RabbitMQ, since the
    team knows it"; never a reply of talk ("Sure, I'll do it", "Good question").
    """
    if s.endswith("?") or _REQUEST.match(s):
        return False
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
    if _has_value(head) or _BARE_NUMBER.match(head):
        return not subject_words(_BARE_NUMBER.sub(" ", head))
    # (a term alone: "Postgres.", "pytest, since it's there", "Marta, I think")
    return len(head_words) <= 2 and not _ANSWER_NOT.match(head)


_ANSWER_HEAD = re.compile(r",|;|\s[\u2013\u2014-]\s|\s\(|[.!](?:\s|$)")
_BARE_NUMBER = re.compile(rf"^(?:(?:about|around|roughly|maybe|probably|just|only|like|um|uh|oh|prob|approx\.?)\s+)*"
                          rf"(?:{_NUM_WORD}|\d[\d,.]*)\b", re.I)
# (one word that is talk, not a term: "Sure", "Done", "Nope", "Thanks")
_ANSWER_NOT = re.compile(r"^(?:sure|done|nope|nah|thanks|cool|no|yes|yeah|ok|okay|fine|great|agreed|same|"
                         r"nothing|none|nobody|unknown|dunno|later|soon|maybe|why|what|how)\b", re.I)
#: Hedges around an answer's value: talk, not a subject ("last I heard", "if memory serves").
_HEDGE = re.compile(
    r"\b(?:last (?:i|we) (?:heard|checked|looked|saw)|if (?:i |we )?(?:remember|recall)(?: (?:correctly|right))?|"
    r"if memory serves|iirc|afaik|as far as (?:i|we) know|according to (?:the |our |my )?[\w-]+|"
    r"i (?:believe|think|guess|reckon|suppose|hear)|i'd (?:say|guess)|(?:i was|i'm|we were) told|"
    r"apparently|supposedly|for now|at the moment|currently|tentatively|or so|give or take|at (?:the )?latest|"
    r"at (?:the )?earliest|or thereabouts|ish|until further notice|if (?:nothing|that) changes|so far|as of (?:now|today))\b", re.I)


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


_POINTS_BACK = re.compile(r"^(?:that's|that is|this is|it's|it is|for|as for|re:?|about|on)\b", re.I)


def _belongs_to(before: str, s: str) -> bool:
    """Whether ``s`` completes the statement ``before`` makes: one has the value, the
    other the subject; or ``s`` points back at ``before``'s value."""
    if len(before) + len(s) > 2 * SENTENCE_CHARS:
        return False
    value_before, value_here = _has_value(before), _has_value(s)
    if _asks(before) and (_answer(s) or (_SOFT_PREFERENCE.search(s) is not None
                                         and not subject_words(_SOFT_PREFERENCE.sub(" ", s)))):
        return True  # (ADR 0096: "When's the freeze? March 3, last I heard.", "Emojis? Hard pass.")
    if value_before and not value_here and (not subject_words(before) or _value_less_rule(s)):
        return bool(subject_words(s)) or _value_less_rule(s)
    if value_here and not subject_words(s) and not value_before:
        return bool(subject_words(before))  # ("Log retention? Roughly 90 days.")
    # (a count of steps says how far the task before it is: "The export is done. That
    # makes 4 of 6.")
    return bool(_PROGRESS.search(s)) and dict(_CUES)[TASK].search(before) is not None and not _PROGRESS.search(before)


_PROGRESS = re.compile(r"\b\d+ (?:out )?of (?:the )?\d+\b|\b\d+/\d+ (?:steps?|tasks?|items?|things?|done|complete)")


def subject_words(s: str) -> list[str]:
    """The content words of a sentence once its values, names, fillers and reason are
    taken out: what it is about."""
    s = _HEDGE.sub(" ", _REASON.split(s, maxsplit=1)[0])
    # (an amount's rate is part of the value: "$40 an hour" is about nothing called "hour")
    s = _RATE.sub(" ", s)
    bare = _DATE.sub(" ", _AMOUNT.sub(" ", _NAME.sub(" ", _VERSION_ANY.sub(" ", s))))
    return [w for w in (x.lower() for x in re.findall(r"[A-Za-z][A-Za-z'-]+", bare))
            if len(w) > 2 and w not in _STOP and w not in _FILLER]


_VERSION_ANY = re.compile(r"\bv?\d+(?:\.\d+)+\b")
_RATE = re.compile(rf"(?:{_AMOUNT.pattern})\s+(?:a|an|per|each|every)\s+"
                   r"(?:second|minute|hour|day|night|week|month|quarter|year|user|seat|request|run)s?\b", re.I)
#: Words of talk, not of a subject ("yeah", "honestly", "pretty sure").
_FILLER = frozenset("""yeah yep yes nope okay ok hmm ugh well really honestly basically literally
think guess pretty sure maybe probably roughly about around like give take btw fyi lol tbh
anyway though still right good fine great nice cool firm thanks thank way""".split())


def _has_value(s: str) -> bool:
    # (a digit inside a name is not a value: "P95", "S3", "urllib3")
    return bool(_AMOUNT.search(s) or _DATE.search(s) or re.search(r"(?<![A-Za-z0-9_])\d", s) or _NAME.search(s))


def _value_less_rule(s: str) -> bool:
    """A short rule that points back at what the sentence before it stated ("Never
    exceed it without approval."): it is about that sentence's value."""
    cue = dict(_CUES)[RULE]
    return bool(cue.search(s)) and len(s) < 120 and bool(_BACK.search(s))


# (points back: "it", "that"; or has no subject of its own: "Never exceed without approval.")
_BACK = re.compile(r"\b(it|that|this|them|those|these)\b|^(never|do not|don't|always|must|no more)\b", re.I)


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
            and subject_words(_SOFT_PREFERENCE.sub(" ", sentence)):
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


def _without_exact(sentence: str) -> str:
    """The sentence without paths, ids and identifiers: the ledger's exact facts hold them
    already ("Ticket PAY-7.", "Done with src/mod3.py.")."""
    sentence = _EXACT.sub(" ", _CITATION.sub(" ", sentence))
    return _IDENT.sub(lambda m: " " if _IDENT_MARK.search(m.group(0)) else m.group(0), sentence)


# (a subject stated first, then what holds for it: "Deploy window: Tuesdays only.", "When
# it comes to naming, snake_case.", "For the CLI, long options." — a key and its value)
_TOPIC = re.compile(r"^[^:?!]{3,60}:\s+\S|^(?:as for|regarding|when it comes to|for|on|about)\b[^,.;]{3,60},\s*\S",
                    re.I)
_BECAUSE = re.compile(r"\b(?:because|since|given that|due to|so that|the reason)\b", re.I)
# (URLs, versions, ports and hashes: the ledger's exact facts hold them on their own)
_EXACT = re.compile(r"https?://\S+|\bv?\d+\.\d+\.\d+\S*|\bport \d+|(?<=localhost:)\d+|\b[0-9a-f]{7,40}\b", re.I)
_CITATION = re.compile(r"\(seqs? [^()]*\)")
# (a request to the assistant is not a fact: "Can you look at ...?", "Please run ...")
_REQUEST = re.compile(r"^\s*(?:can|could|would|will) you\b|^\s*please\b", re.I)
# (an entity: a capitalised word inside a sentence, an acronym, a mixed-case or
# digit-bearing name: "Tortoise", "the ORM", "RabbitMQ", "urllib3")
_ENTITY = re.compile(r"(?<=[a-z,;:] )(?!I\b|I'|None\b|OK\b)[A-Z][a-z]{2,}\b|\b[A-Z]{2,6}s?\b|"
                     r"\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+[A-Z][a-z]\w*\b|\b[a-z]{3,}\d+\b")
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
        if len(own) == 1 and (mine := _plain_anchors(own[0])):
            return frozenset(out | mine)
    return frozenset(out | _plain_anchors(sentence))


def _plain_anchors(sentence: str) -> set[str]:
    out: set[str] = set()
    # (the subject is stated before the reason: "... for the queue backend because the team
    # knows it" — two decisions with the same reason are about different things)
    sentence = _HEDGE.sub(" | ", _REASON.split(sentence, maxsplit=1)[0])  # ("until further notice": talk)
    bare = _DATE.sub(" | ", _AMOUNT.sub(" | ", _NAME.sub(" | ", sentence)))
    bare = bare[:1] + _VALUE_ENTITY.sub(" | ", bare[1:])
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]+|\|", bare)]
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
_VALUE_ENTITY = re.compile(r"(?<=[a-z,;:] )(?!I\b|I')[A-Z][a-z]{2,}\b|\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+[A-Z][a-z]\w*\b|"
                           r"\b[A-Z][a-z]+[A-Z]{2,}\w*\b")  # ("RabbitMQ", "GraphQL": a product, a value)
_VERSION_WORDS = frozenset("version versions stay stays stayed staying pin pins pinned pinning bump bumps bumped "
                           "bumping lock locks locked upgrade upgrades upgraded upgrading downgrade downgraded roll "
                           "rolled rolling forward moved move keep kept hold held sits lockfile we're running runs "
                           "run production release everywhere don past beyond above below from off than under over before after".split())


def checklist_items(text: str, asked: str | None = None) -> list[tuple[str, str, frozenset[str]]]:
    """(kind, sentence, anchors) of the checklist sentences of one message; ``asked``: the
    question the message before ended with (``asked_last``), which an answer joins."""
    out = []
    for s in sentences(text, asked):
        if len(s) < 8:
            continue
        if is_follow_up(s, _has_value, subject_words) and not _PROGRESS.search(s):
            out.append((FOLLOW_UP, clip(s), frozenset()))  # (its subject is the item before it: ledger.extract)
            continue
        kind = classify(s)
        if kind is None and _caseless_fact(s):
            kind = STATEMENT  # (no English cue can read it: kept whole, never superseded by a guess)
            out.append((kind, clip(s), frozenset()))
            continue
        if kind is not None:
            out.append((kind, clip(s), anchors(s, kind)))
    return out


# (a script without letter case — Chinese, Japanese, Korean, Thai: no cue of ours reads it)
_CASELESS = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
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


_IDENT = re.compile(r"(?<![\w/.-])[A-Za-z][\w./-]*[A-Za-z0-9]")
# ("Step 3 is done" updates "Step 3: start the migration"; "module 2" and "module 3" are two
# units, not two values of one: the number names the unit)
_STEP = re.compile(r"\b(?:step|phase|stage|module|part|ticket|milestone|batch) \d+(?: of \d+)?\b", re.I)
_IDENT_MARK = re.compile(r"[/_]|\d|\.\w")
