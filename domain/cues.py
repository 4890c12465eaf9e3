"""The English cues the fact checklist reads, and what counts as a value and as a subject
word (issue 44, ADRs 0083 and 0096). Pure.

The checklist kinds, the value patterns (amounts, dates, versions, setting names, people's
names), the cue tables that name a sentence's kind (rules, decisions, soft wishes, work
reported done, changes) and the two tests every later step asks: does a sentence carry a
value (``_has_value``) and what is it about (``subject_words``). Extraction
(``checklist.py``), the joining of a value to its subject or an answer to its question
(``joining.py``) and supersession (``supersession.py``) all read them; they live here so
that each of those modules can import them without importing another. Tuning a cue is
an edit to this file.
"""

from __future__ import annotations

import re

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
#: Any other content-bearing sentence a user states (ADR 0099): no cue, no value, no name
#: reads it, yet it is theirs. The lowest priority, never superseded by a guess; it is
#: there so that its loss, too, is reported.
REMARK = "remark"
#: A question the assistant asked about the work with no cue word (ADR 0103): open until
#: an answer joins it. Like a remark: no anchors, lowest priority, bounded apart.
OPEN_QUESTION = "open_question"
#: The catch-all kinds: what no typed rule reads, carried while a summary states it and
#: reported once, by the compaction where it leaves (ADRs 0099, 0103).
CATCH_ALL = frozenset((REMARK, OPEN_QUESTION))

_NUM_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
             r"forty|fifty|sixty|seventy|eighty|ninety|hundred|half)(?:-\w+)?")
_UNIT = (r"(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|"
         r"[KMGT]i?B|kilobytes?|megabytes?|gigabytes?|%|percent|requests?|replicas?|connections?|"
         r"workers?|retries|users?|rows?|items?|nodes?|cores?|tokens?)")
# (a number starts at its run's first digit: tried inside "123,123,…" too, a pasted row took
# quadratic time, 8 KB in 90 s; a start inside a run matches only where the first one did)
_AMOUNT = re.compile(rf"[$€£]\s?\d[\d,.]*\b|\b(?<!\d[,.])\d[\d,.]*\s?{_UNIT}\b|\b{_NUM_WORD}\s+{_UNIT}\b", re.I)
_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
          r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)")
_DATE = re.compile(
    rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|"
    r"\b\d{4}-\d{2}-\d{2}\b|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b|"
    r"\b(?:Q[1-4]|end of (?:the )?(?:week|month|quarter|sprint))\b"
)
# (a manifest's own form too, "boto3 = \"1.34.90\"" in pyproject.toml: ADR 0114)
_VERSION = re.compile(r"\b([A-Za-z][\w.-]*[A-Za-z0-9])(?:(?:\s*(?:==|~=|>=|<=|@)\s*|\s*=\s*[\"']|\s+(?:to|at|is|on|version|v|past|beyond|"
                      r"above|below|from|off|than|under|over|before|after)?\s*)v?(\d+\.\d+(?:\.\d+)?)|"
                      r"[,:?]\s+v?(\d+\.\d+\.\d+))\b")
# (the version said first, ADR 0096: "5.0.8 of redis-py is what we ship")
_VERSION_FIRST = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\s+(?:of|for)\s+([A-Za-z][\w.-]*[A-Za-z0-9])|^\W*v?\d+\.\d+\.\d+\b()")
_SETTING = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
_NAME = re.compile(r"\b(?:[A-Z][a-z]+ (?:[A-Z][a-z]+|[A-Z]\.)(?: [A-Z][a-z]+)?|Team [A-Z]\w+|the [A-Z]\w+ team)\b")

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
        r"i do not want|please don't|please do not|i'd rather|i would rather|favou?r(?:ite|ed|s)?|how i like|can't stand|"
        r"whenever you can|ever\b|stick (?:to|with)|(?:big )?fan of|personally|can we not|let's not|please no|"
        # (a whole word at the end too: "please no" is no cue in "please note")
        r"keep (?:\w+ ){1,3}out of)\b", re.I)),
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

_PLEASE_NO = re.compile(r"^\s*please,?\s+(?:no|don't|never|not)\b", re.I)
_UPDATE = re.compile(r"\b(is now|are now|now is|moved to|changed to|change of plan|switch(?:ed)?|becomes|"
                     r"instead|from now on|going forward|revised|new \w+ for|reversing|roll \w+ forward|"
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
isn't aren't wasn't weren't doesn't didn't hasn't haven't that's there's what's we're we've we'll you're i've i'll
you'll they'll let's gonna things thing stuff list lists items tasks role roles starting effective
when's who's where's how's whats
previous former current interim acting outgoing incoming replace replaces replaced replacing yesterday tomorrow
tonight""".split())

#: Hedges around an answer's value: talk, not a subject ("last I heard", "if memory serves").
_HEDGE = re.compile(
    r"\b(?:last (?:i|we) (?:heard|checked|looked|saw)|if (?:i |we )?(?:remember|recall)(?: (?:correctly|right))?|"
    r"if memory serves|iirc|afaik|as far as (?:i|we) know|according to (?:the |our |my )?[\w-]+|"
    r"i (?:believe|think|guess|reckon|suppose|hear)|i'd (?:say|guess)|(?:i was|i'm|we were) told|"
    r"apparently|supposedly|for now|at the moment|currently|tentatively|or so|give or take|at (?:the )?latest|"
    r"at (?:the )?earliest|or thereabouts|ish|until further notice|if (?:nothing|that) changes|so far|as of (?:now|today))\b", re.I)


def subject_words(s: str) -> list[str]:
    """The content words of a sentence once its values, names, fillers and reason are
    taken out: what it is about."""
    s = _HEDGE.sub(" ", _REASON.split(s, maxsplit=1)[0])
    # (an amount's rate is part of the value: "$40 an hour" is about nothing called "hour")
    s = _RATE.sub(" ", s)
    bare = _DATE.sub(" ", _AMOUNT.sub(" ", _NAME.sub(" ", _VERSION_ANY.sub(" ", s))))
    return [w for w in (x.lower() for x in re.findall(WORD, bare))
            if len(w) > 2 and w not in _STOP and w not in _FILLER]


#: A word of a cased script, whole (ADR 0099): "läuft" is no "uft"; a caseless script
#: (CJK, Thai) has no words to these rules and is kept whole instead.
_LETTER = r"[^\W\d_\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
WORD = rf"{_LETTER}(?:{_LETTER}|['-])+"
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

# (a request to the assistant is not a fact: "Can you look at ...?", "Please run ...")
_REQUEST = re.compile(r"^\s*(?:can|could|would|will) you\b|^\s*please\b", re.I)


def _without_exact(sentence: str) -> str:
    """The sentence without paths, ids and identifiers: the ledger's exact facts hold them
    already ("Ticket PAY-7.", "Done with src/mod3.py.")."""
    sentence = _EXACT.sub(" ", _CITATION.sub(" ", sentence))
    return _IDENT.sub(lambda m: " " if _IDENT_MARK.search(m.group(0)) else m.group(0), sentence)


# (URLs, versions, ports and hashes: the ledger's exact facts hold them on their own)
_EXACT = re.compile(r"https?://\S+|\bv?\d+\.\d+\.\d+\S*|\bport \d+|(?<=localhost:)\d+|\b[0-9a-f]{7,40}\b", re.I)
_CITATION = re.compile(r"\(seqs? [^()]*\)")
_IDENT = re.compile(r"(?<![\w/.-])[A-Za-z][\w./-]*[A-Za-z0-9]")
# (a path or identifier mark: a slash, an underscore, a digit, a dotted suffix)
_IDENT_MARK = re.compile(r"[/_]|\d|\.\w")
# (a script without letter case — Chinese, Japanese, Korean, Thai: no cue of ours reads it)
_CASELESS = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
