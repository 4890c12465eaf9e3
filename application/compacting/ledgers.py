"""The must-keep ledger and citations of a compaction candidate (issue 16, ADR 0031).

Between the summary call and the §10.4 validation: citations outside the summarized
range are removed, the ledger is carried from the previous checkpoint and extended with
the items of every message the compaction covers (not only those that fit the bounded
summary input), and the summary is verified against it. Summarizer-agnostic: the same
step runs for the LLM, the extractive or any plugged-in summarizer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from context_compaction.domain.budget import Count
from context_compaction.domain.ledger import (Ledger, LedgerItem, LedgerReport, extract, fair_order, present,
                                              stated_text, verify)
from context_compaction.domain import coverage
from context_compaction.domain.cues import CATCH_ALL
from context_compaction.domain.marks import still_stated
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.provenance import clean_citations
from context_compaction.domain.summary import (SourceEntry, SummarySource, build_summary_source, content_text,
                                               describe_binary, storable_text, summary_prompt, to_entry)

#: The ledger may add up to this many times the summary's output reserve (ADR 0031):
#: at a 128K window (reserve 2,048) 8,192 tokens, room for ~450 fact lines.
LEDGER_FACTOR = 4


@dataclass(frozen=True)
class VerifiedSummary:
    text: str
    ledger: Ledger
    report: LedgerReport
    citations_removed: int
    #: What ``CheckpointCommitted.ledger`` stores.
    record: dict[str, Any]


def ledger_budget(output_reserve: int, room: int) -> int:
    """Tokens the written-back items may take: ``LEDGER_FACTOR`` times the output
    reserve, at most half the room the window leaves beside the kept tail and the
    summary itself (so that a verified candidate still fits under the threshold)."""
    return max(0, min(LEDGER_FACTOR * output_reserve, room // 2))


def checklist_for(previous: Mapping[str, Any] | None, covered: Sequence[MessageRecord]) -> tuple[LedgerItem, ...]:
    """The cumulative checklist a summarizer is given (issue 44): the previous ledger with
    every covered message's items merged in, in write-back priority order."""
    ledger, _ = Ledger.from_record(previous).merge(extract(covered_entries(covered)))
    return tuple(fair_order(ledger.items))


def must_keep_lines(checklist: Sequence[LedgerItem], budget_tokens: int, count: Count,
                    remark_tokens: int | None = None) -> list[str]:
    """The checklist lines an LLM summary prompt carries, highest priority first, within
    ``budget_tokens`` (the summary input gives up the same room); remarks (ADR 0099) within
    ``remark_tokens`` of it, the share the write-back gives them too."""
    out, spent, remarks = [], 0, 0
    for item in checklist:
        line = item.line()
        cost = count(line) + 1
        if spent + cost > budget_tokens:
            break
        if item.kind in CATCH_ALL:
            if remark_tokens is not None and remarks + cost > remark_tokens:
                continue
            remarks += cost
        out.append(line)
        spent += cost
    return out


@dataclass(frozen=True)
class SummaryInput:
    """What one summary call is given (issue 44): the bounded source, the prompt with
    its must-keep lines, and the checklist for summarizers that read it directly."""

    source: SummarySource
    prompt: list[dict[str, str]]
    checklist: tuple[LedgerItem, ...]
    #: Tokens the ledger may write back into the summary (``ledger_budget``).
    ledger_tokens: int


def summary_input(previous_summary: str | None, previous_ledger: Mapping[str, Any] | None,
                  covered: Sequence[MessageRecord], *, source_budget: int, output_reserve: int,
                  room: int, count: Count, reads_prompt: bool = True) -> SummaryInput:
    """The one way a compaction and ``resummarize`` build a summary call: the checklist
    takes up to a third of the input budget as must-keep lines, the material the rest;
    ``room`` (what the window leaves beside the kept tail and the summary) bounds the
    ledger's write-back. ``reads_prompt`` false (the extractive summarizer reads the
    source and the checklist, never the prompt): the material keeps its whole budget."""
    checklist = checklist_for(previous_ledger, covered)
    lines = must_keep_lines(checklist, source_budget // 3, count, remark_budget(covered_entries(covered)))
    remark_lines = {i.line() for i in checklist if i.kind in CATCH_ALL}
    must_keep = [ln for ln in lines if ln not in remark_lines]
    may_keep = [ln for ln in lines if ln in remark_lines]  # (remarks: lowest priority, said so in the prompt)
    spent = sum(count(ln) + 1 for ln in lines) if reads_prompt else 0
    source = build_summary_source(previous_summary, covered, count=count, budget_tokens=source_budget - spent)
    return SummaryInput(source, summary_prompt(source, output_reserve, must_keep, may_keep), checklist,
                        ledger_budget(output_reserve, room))


#: Remarks (ADR 0099) may take back at most this share of what a compaction covers:
#: written back whole, a user's own sentences would otherwise make a summary of short
#: messages as long as the messages, and the compaction would not shrink the context.
REMARK_SHARE = 0.25


def remark_budget(entries: Sequence[SourceEntry]) -> int:
    """Tokens the written-back remarks may take: ``REMARK_SHARE`` of the covered text, at
    a conservative 4 characters a token (no second tokenizer pass over the range)."""
    return int(sum(len(e.text) for e in entries) / 4 * REMARK_SHARE)


def covered_entries(records: Sequence[MessageRecord]) -> list[SourceEntry]:
    """Every message a compaction covers, as the extractor reads it."""
    names: dict[str, str] = {}
    return [to_entry(r, names) for r in records]


def tail_statements(retained: Sequence[MessageRecord]) -> tuple[LedgerItem, ...]:
    """The settings and checklist statements of the kept tail ``retained``: what may
    supersede a summary's older values. Extracted once per compaction (ADR 0103: the
    shrink check and the verification both read it; ~24 ms for a 57-message tail)."""
    return tuple(i for i in extract(covered_entries(retained)) if i.key is not None or i.anchors)


def checked_ledger(ledger: Ledger, newer: Sequence[LedgerItem]) -> Ledger:
    """What a summary is checked against: ``ledger`` with the kept tail's statements
    ``newer`` (``tail_statements``) superseding the older values they replace."""
    if not newer:
        return ledger
    check, _ = ledger.merge(newer)
    # (a statement of the tail marks what it supersedes; the tail states it itself)
    tail_only = {i.value for i in newer if i.key is None} - {i.value for i in ledger.items}
    return Ledger(tuple(i for i in check.items if i.value not in tail_only), check.superseded)


def verify_summary(
    text: str,
    *,
    previous: Mapping[str, Any] | None,
    covered: Sequence[MessageRecord],
    last_seq: int,
    budget_tokens: int,
    count: Count,
    retained: Sequence[MessageRecord] = (),
    previous_summary: str | None = None,
    tail: Sequence[LedgerItem] | None = None,
) -> VerifiedSummary:
    """``text`` with invalid citations removed and missing ledger items written back.

    ``retained`` (the raw tail kept after the summary) is read for settings and
    checklist statements only: one set again there supersedes the summary's older value,
    which is then marked as such rather than left to read as current next to the new one. The stored ledger
    does not take them (the next compaction reads those messages as covered). ``tail``: those
    statements already extracted (``Preparation.tail``); then ``retained`` is not read again.
    """
    cleaned, _, removed = clean_citations(text, 1, last_seq)
    entries = covered_entries(covered)
    ledger, evicted = Ledger.from_record(previous).merge(extract(entries))
    newer = tail_statements(retained) if tail is None else tail
    check = checked_ledger(ledger, newer)
    verified, report = verify(cleaned, check, budget_tokens, count, remark_tokens=remark_budget(entries))
    # Said again in the kept tail (checked with its seq there): it has not left. Listed now,
    # it was listed again, same seq, by the compaction covering the tail (ADR 0115).
    held = sum(1 for i in report.dropped_items if i.seq > last_seq)
    report.dropped_items = [i for i in report.dropped_items if i.seq <= last_seq]
    report.items_total -= held
    # Left the bounded ledger: reported, not lost silently, and counted among the items
    # (items_total = in_summary + restored + dropped holds).
    report.dropped_items.extend(evicted)
    report.items_total += len(evicted)
    before = {(i.kind, i.value) for i in Ledger.from_record(previous).superseded}
    report.superseded_items = [i for i in ledger.superseded if (i.kind, i.value) not in before]
    # A replaced value that leaves the context is a loss like any other (ADR 0091): the
    # supersession may be wrong, and a host only sees what ``dropped_items`` names. Left:
    # superseded now, or stated by the previous summary, and not stated (even marked) now.
    stated = stated_text(verified)
    out, since = _listed_before(previous), covered[0]["seq"] if covered else 0
    # (what the kept tail replaced in ``check`` only and left before: still listed if it was)
    checked = {(i.kind, i.value) for i in check.items}
    unstated = {(i.kind, i.value) for i in report.dropped_items} | {
        (i.kind, i.value) for i in ledger.items
        if (i.kind, i.value) in out and (i.kind, i.value) not in checked and i.seq < since and not present(stated, i)}
    leaving = [i for i in ledger.superseded
               if ((i.kind, i.value) not in before or (previous_summary and present(previous_summary, i)))
               and not present(stated, i) and not present(verified, i)]
    # Replaced by the kept tail and stated nowhere (not even marked): it leaves with this
    # compaction, so this one reports it (CONTRACT: "by the compaction where it leaves"),
    # and records it unstated, so that the next one, covering the tail, lists it no more.
    replaced = [i for i in ledger.items if (i.kind, i.value) not in checked
                and not present(stated, i) and not present(verified, i)]
    unstated |= {(i.kind, i.value) for i in replaced}
    leaving += replaced
    report.dropped_items.extend(leaving)
    report.items_total += len(leaving)
    _listed_once(report, out, since)  # (a value that left before and is replaced now: listed then)
    # Whatever no item read (ADR 0109): a sentence of people's prose with a value that
    # leaves now and that the new context no longer states is listed here, once.
    # (what an earlier checkpoint listed and the ledger still carries counts as listed too)
    lost = unstated_sentences(covered, previous_summary, [verified, *(_text(r) for r in retained)],
                              [*report.dropped_items, *(LedgerItem(k, v, 0, 0) for k, v in out)], since - 1)
    report.dropped_items.extend(lost)
    report.items_total += len(lost)
    # A remark the summary does not state has left the context (ADR 0099): reported once,
    # here, then no longer carried; else every later compaction would report it again and
    # every checkpoint would store it again (the raw history still holds it for recall).
    gone = {(i.kind, i.value) for i in report.dropped_items if i.kind in CATCH_ALL}
    if gone:
        ledger = Ledger(tuple(i for i in ledger.items if (i.kind, i.value) not in gone), ledger.superseded)
    ledger = Ledger(ledger.items, still_stated(ledger.superseded, verified))  # (ADR 0110: the marks it needs)
    record = {**ledger.to_record(), "report": report.to_record(),
              # (positions in ``items``: the next compaction lists none of these again, ADR 0107)
              UNSTATED: [n for n, i in enumerate(ledger.items) if (i.kind, i.value) in unstated]}
    return VerifiedSummary(verified.strip(), ledger, report, removed, record)


def unstated_sentences(covered: Sequence[MessageRecord], previous_summary: str | None, context: Sequence[str],
                       listed: Sequence[LedgerItem], covered_before: int) -> list[LedgerItem]:
    """The coverage check (ADR 0109): the value-carrying sentences of the user's and the
    assistant's messages in ``covered`` and of the previous summary's lines (cited seq, else
    ``covered_before``, the last seq it covered) that no line of ``context`` (the new
    summary, the kept tail) states and no item ``listed`` already names; kind ``unstated``."""
    leaving = coverage.said_in((r["seq"], r["role"], _text(r)) for r in covered)
    leaving += coverage.said_in_summary(previous_summary, max(0, covered_before))
    lost = coverage.losses(leaving, coverage.Context(context), coverage.Context(i.value for i in listed))
    return [LedgerItem(coverage.UNSTATED, loss.text, loss.seq, loss.seq) for loss in lost]


def _text(record: MessageRecord) -> str:
    """A message's whole text (a summary's source is cut to its head and tail; a loss
    may be in the middle)."""
    return describe_binary(storable_text(content_text(record.get("content"))))


#: The ledger record's positions of the carried items its checkpoint neither stated nor
#: restored (ADR 0107).
UNSTATED = "unstated"


def _listed_before(previous: Mapping[str, Any] | None) -> set[tuple[str, str]]:
    """The (kind, value) of the items the previous checkpoint left unstated, each listed
    when it left (ADR 0107)."""
    if not previous:
        return set()
    if UNSTATED in previous:
        items = previous.get("items") or ()
        return {(items[n]["kind"], items[n]["value"]) for n in previous[UNSTATED] if n < len(items)}
    # (a record written before: its report listed every item it left unstated)
    return {(d["kind"], d["value"]) for d in (previous.get("report") or {}).get("dropped_items") or ()}


def _listed_once(report: LedgerReport, out: set[tuple[str, str]], since: int) -> None:
    """``report.dropped_items`` cut to what leaves the context in this compaction (ADR 0107):
    the items the previous checkpoint left unstated (``out``; an earlier one listed each
    when it left) are counted in ``dropped_before``, unless said again in the range
    covered now (from seq ``since``). Else a typed item that does not fit is listed by
    every compaction while the ledger carries it (70 k entries for ~560 items in a
    220-turn session at a 2K window)."""
    left = [i for i in report.dropped_items if i.seq >= since or (i.kind, i.value) not in out]
    report.dropped_before += len(report.dropped_items) - len(left)
    report.dropped_items = left
