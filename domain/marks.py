"""The superseded values a summary still states, marked where it states them (issue 44,
ADRs 0083 and 0110). Pure: ``ledger.verify`` marks, ``verify_summary`` keeps in the record
what the summary still quotes.
"""

from __future__ import annotations

import re
from typing import Any

from .subjects import Item, _VALUE_KINDS, _carries_value
from .budget import Count
from .valueforms import _IN, same_setting
from .qualifiers import _paths


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
        # (a key names its file, ADR 0114: "MAX_WORKERS" said with no file is the one setting)
        new = current.get(old.key) or next((i for k, i in current.items() if same_setting(old.key, k)), None)
        if new is None or new.value == old.value or old.value not in text:
            continue
        note = f"{old.value} (superseded by {new.value} at seq {new.seq})"
        if note in text:
            continue
        pattern = re.compile(re.escape(old.value) + r"(?![^\s,;'\"`)])(?! \(superseded)")
        where = str(old.key).partition(_IN)[2]
        hits = [m.start() for m in pattern.finditer(text) if not _of_another_file(text, m.start(), where)]
        text = pattern.sub(lambda m: note if m.start() in hits else m.group(0), text)
        marked += len(hits)
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


def unmarked_within(text: str, summary: str, budget_tokens: int, count: Count) -> tuple[str, int]:
    """``text`` (``summary`` with superseded marks) within ``budget_tokens`` more than
    ``summary``: the marks spend the write-back's room (issue 44), and a marked line they
    have no room for is left out, newest first, with its stale value (a superseded value
    never reads as current; ``verify_summary`` reports it as leaving). The marks left."""
    lines, before = text.splitlines(), summary.splitlines()
    if len(lines) != len(before):  # (a mark never adds a line: kept as it is, not guessed)
        return text, sum(ln.count("(superseded ") for ln in lines) - sum(ln.count("(superseded ") for ln in before)
    marked = [n for n, (new, old) in enumerate(zip(lines, before)) if new != old]
    out = set()
    for n in reversed(marked):
        if count("\n".join(ln for k, ln in enumerate(lines) if k not in out)) - count(summary) <= budget_tokens:
            break
        out.add(n)
    kept = [n for n in marked if n not in out]
    marks = sum(lines[n].count("(superseded ") - before[n].count("(superseded ") for n in kept)
    return "\n".join(ln for k, ln in enumerate(lines) if k not in out), marks


def _of_another_file(text: str, at: int, where: str) -> bool:
    """The value at ``at`` sits on a line naming files, not ``where``: the same value of the
    setting in another file ("MAX_WORKERS=20 … config/staging.toml"), still current (ADR 0114 amended)."""
    if not where or where not in _paths(where):
        return False  # (an environment's key, "LOG_LEVEL in prod", names no file)
    line = text[text.rfind("\n", 0, at) + 1:(text.find("\n", at) + 1 or len(text) + 1) - 1]
    files = {p.removeprefix("./") for p in _paths(line)}
    return bool(files) and where not in files
