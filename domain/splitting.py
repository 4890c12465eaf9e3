"""Where one sentence of chat text ends and the next begins (ADR 0091). Pure.

People in a chat often skip the capital after a full stop ("done. next up is the
freeze"), skip the full stop before a capital ("give or take The suite ran twice"), and
ask a question and go on in lower case ("can we stick to pathlib? it reads better").
Splitting only before ``. X`` glued such a statement to a routine request, whose words
then made it look like (and be superseded by) another statement. Text in scripts
without case (CJK) splits only at its own full stops and at line breaks: never inside a
run of characters, so it is kept whole. ``clip`` shortens one sentence without cutting
off its values or a grapheme.
"""

from __future__ import annotations

import re
import unicodedata

# (CJK full stops end a sentence with no space after them)
# (a stop, then a capital, a digit, or a caseless script's character: a sentence in Chinese
# after an English one starts anew, ADR 0103)
# (a list bullet after a stop opens a sentence too: "... in reports/pdf.py? - Team convention:
# X." is a request and then a fact, ADR 0106)
# (a capital of any cased script opens one too: "... made explicit. В качестве ORM ...";
# so does a task-list box after a bullet, "... tuple. - [x] Measure ...", and a chat emoji
# code after a stop, "... your change. :gear: config ask: ...", whatever case follows it)
_UPPER = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0391-\u03a9\u0400-\u042f"
_EMOJI = r":[a-z0-9_+-]*[a-z][a-z0-9_+-]*:"
# (an abbreviation ends no sentence, whatever capital follows: "Dr. Özdemir", "г. Петров",
# "v. Ääkkönen", "d. h. Öl", "e.g. :tada:"; ADR 0114 amended)
_NOT_AFTER = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in (
    "Dr Mr Mrs Ms Prof St Jr Sr Hr Fr Nr vs ca approx ul ул пр г e.g i.e z.B u.a d.h".split())) + (
    # (a lone lower-case letter is an abbreviation only before a capital with a diacritic,
    # "v. Ääkkönen", "d. h. Öl": "in module a. Then …" and "at 5 p.m. Then …" end there)
    r"(?!(?<=\b[a-z]\.)\s+[\u00c0-\u00d6\u00d8-\u00de])")
_SPLIT = re.compile(rf"(?<=[.!?]){_NOT_AFTER}\s+(?=(?:[-*\u2022]\s+)?(?:\[[ xX]\]\s+)?[\"'(\[]?[{_UPPER}0-9$\u0e00-\u0e7f\u3040-\u30ff"
                    rf"\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|{_EMOJI}(?:\s|$))|"
                    r"(?<=[\u3002\uff01\uff1f])|\n+")
# ("? it", "! so": a question or exclamation ends its sentence whatever case follows)
_AFTER_MARK = re.compile(r"(?<=[?!])\s+(?=[a-z])")
# (". next": a full stop after a word of three letters or more, or after a path, ends a
# sentence; "e.g. the", "approx. 5", "v1.2. then" do not)
_AFTER_STOP = re.compile(r"(\S+)\.\s+(?=[a-z])")
_ABBREVIATIONS = frozenset("etc approx incl excl misc resp vs cf al fig ca est".split())
# (a capitalised word that opens sentences, right after a lower-case word with no stop:
# "... give or take The suite ran twice" — names, months and "I" are never openers)
_OPENERS = ("The This That These Those There Then We You They It It's Its Please Can Could Would Should "
            "Make Use Run Add Fix Check Look Let's So But Also Anyway Nice Thanks Ok Okay Oh Hmm Btw Fyi "
            "Just Maybe What Why How When Where Which Who Whose If Now Next Great Sure Yes Yeah Otherwise").split()
_MISSING_STOP = re.compile(r"(?<=[a-z0-9)`])\s+(?=(?:%s)\b(?!-))" % "|".join(re.escape(w) for w in _OPENERS))
# (an emoji code closes a chat sentence as a stop does: ":tada: I added the test")
# (only before a word that opens sentences: "Use the :memo: Notes template", "status
# :white_check_mark: Done on staging" go on; ADR 0114 amended)
_AFTER_EMOJI = re.compile(rf"(?<!\S){_EMOJI}\s+(?=(?:I|{'|'.join(map(re.escape, _OPENERS))})\b)")


# (with no stop either: an aside marker opens a new statement — "the limit is 10 MB now
# fwiw TIMEOUT is 75s"; "I" and a verb after a word that ends a clause — "fine honestly
# I traced it"; not "the thing I traced", "so I think")
_ASIDE = re.compile(r"(?<=[a-z0-9)])\s+(?=(?:fwiw|btw|fyi|ps|anyway|oh)\b(?!-),?\s+\S)")
_I_AFTER = re.compile(r"\b(\w+)\s+(?=I\s+[a-z]+ed\b|I'(?:ve|ll|m|d)\b)")
# ("I think", "I guess" open a sentence unless a conjunction leads into them: "so I think")
# (so do "I'd rather", "I'd prefer": a wish opens its own statement — "... moved teams I'd
# rather keep the old parser")
_I_THINK = re.compile(r"\b(\w+)\s+(?=I\s+(?:think|guess|believe|reckon|suppose)\b|I'd\s+(?:rather|prefer)\b)")
_LEADS_INTO = frozenset("so and but or that which what because if when as then where why how who than since "
                        "until unless while before after whether though although cause".split())
# (a topic stated first is the wish's subject, not a sentence of its own: "For the config
# files I'd rather we use TOML", "on the CLI side I'd prefer click")
_TOPIC_LEAD = re.compile(r"^\s*(?:(?:and|but|so|ok|okay|oh|well)[,]?\s+)?(?:for|as for|regarding|re|when it comes to|"
                         r"on|with|in|about)\b(?:\s+[\w'.-]+){1,6}\s*,?\s*$", re.I)
_CLAUSE_ENDS = frozenset("now honestly basically btw fyi lol tbh though anyway too ok okay thanks possible "
                         "matters there them it well yesterday today again fine "
                         # (a state or a particle that closes a report: "we're 2 of 3 through I
                         # moved the ...", "all done I've pushed it")
                         "through done already yet finished sorted shipped complete ready later soon "
                         "tomorrow".split())


def split_raw(text: str) -> list[str]:
    """The sentences of ``text``, unjoined (``joining.sentences`` joins a value to its subject)."""
    out: list[str] = []
    for piece in _SPLIT.split(text):
        if not piece:
            continue
        for part in (p for emoji in _split_after_emoji(piece) for p in _AFTER_MARK.split(emoji)):
            for sub in _split_stops(part):
                for bit in _MISSING_STOP.split(sub):
                    for aside in _ASIDE.split(bit):
                        out += _split_before_i(aside)
    return out


def _split_after_emoji(text: str) -> list[str]:
    if ":" not in text:
        return [text]
    out, last = [], 0
    for m in _AFTER_EMOJI.finditer(text):
        if m.start() > last:  # (an emoji opening the piece ends nothing)
            out.append(text[last:m.end()].rstrip())
            last = m.end()
    return [*out, text[last:]]


def _split_before_i(text: str) -> list[str]:
    if " I" not in text:
        return [text]  # (cheap first: asked of every piece)
    cuts = sorted({m.end(1) for m in _I_AFTER.finditer(text) if m.group(1).lower() in _CLAUSE_ENDS}
                  | {m.end(1) for m in _I_THINK.finditer(text) if m.group(1).lower() not in _LEADS_INTO
                     and not _TOPIC_LEAD.match(text[: m.end(1)])})
    out, last = [], 0
    for at in cuts:
        out.append(text[last:at])
        last = at + len(text[at:]) - len(text[at:].lstrip())
    out.append(text[last:])
    return out


def _split_stops(text: str) -> list[str]:
    if ". " not in text:
        return [text]
    out, last = [], 0
    for m in _AFTER_STOP.finditer(text):
        word = m.group(1)
        bare = word.strip("\"')]").lower()
        if "/" in bare or (bare.isalpha() and len(bare) >= 3 and bare not in _ABBREVIATIONS):
            out.append(text[last : m.end(1) + 1])
            last = m.end()
    out.append(text[last:])
    return out


#: About how long one checklist sentence may be before ``clip`` shortens it.
SENTENCE_CHARS = 280


def clip(text: str) -> str:
    """A sentence within about ``SENTENCE_CHARS``, its values never cut off: the head,
    then each value of the rest with the few words before it ("... the hard budget cap we
    agreed on is $500 per month" keeps "$500"); never ends inside a character sequence."""
    text = " ".join(text.split())
    if len(text) <= SENTENCE_CHARS:
        return text
    at = _boundary(text, SENTENCE_CHARS - 3)
    head, rest = text[:at], text[at:]
    out, last = head + "...", 0
    for m in _DIGITS.finditer(rest):  # (a value keeps its rule: issue 44, mechanism 4)
        if m.start() < last:
            continue
        lo, hi = max(last, m.start() - 48), min(len(rest), m.end() + 24)
        if lo > last and " " in rest[lo:m.start()]:  # (whole words around the value)
            lo = rest.index(" ", lo, m.start()) + 1
        if hi < len(rest) and " " in rest[m.end():hi]:
            hi = rest.rindex(" ", m.end(), hi)
        snip = rest[_boundary(rest, lo):_boundary(rest, hi) if hi < len(rest) else hi].strip()
        if len(out) + len(snip) + 4 > 3 * SENTENCE_CHARS:
            break
        out, last = out + f" {snip}...", hi
    return out


def _boundary(text: str, at: int) -> int:
    """``at`` moved back to where a cut splits no grapheme (a joiner, a combining mark,
    a variation selector belongs with the character before it)."""
    while at > 0 and (unicodedata.combining(text[at]) or text[at] in _JOINERS or text[at - 1] == "\u200d"):
        at -= 1
    return at


_JOINERS = frozenset("\u200d\ufe0e\ufe0f") | {chr(c) for c in range(0x1F3FB, 0x1F400)}
_DIGITS = re.compile(r"\d[\d,.:/-]*")
