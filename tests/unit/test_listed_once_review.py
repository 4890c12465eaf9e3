"""Each loss listed once across a session's checkpoints (ADRs 0107, 0109; review of
issue 44, ADR 0115), and the coverage check's line index finds what a scan finds.

The sentences here are this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import replace
from typing import Any

from context_compaction.application.compacting.ledgers import VerifiedSummary, verify_summary
from context_compaction.domain.cues import WORD
from context_compaction.domain.coverage import Context, Said, _pattern, said_in_summary, values

NONE = "## Progress\nNone."
SETTING = "Set APP_PORT=8080 in the env file."


def words(text: str) -> int:
    return len(text.split())


def msg(seq: int, text: str, role: str = "assistant") -> dict[str, Any]:
    return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}


def compact(previous: VerifiedSummary | None, covered: list[dict[str, Any]], *, summary: str = NONE,
            retained: list[dict[str, Any]] | None = None) -> VerifiedSummary:
    return verify_summary(summary, previous=previous.record if previous else None, covered=covered,
                          last_seq=covered[-1]["seq"], budget_tokens=0, count=words, retained=retained or [],
                          previous_summary=previous.text if previous else None)


def entries(*checkpoints: VerifiedSummary) -> Counter[tuple[str, str, int]]:
    return Counter((d["kind"], d["value"], d["seq"]) for v in checkpoints for d in v.record["report"]["dropped_items"])


def counts_hold(v: VerifiedSummary) -> None:
    r = v.record["report"]
    assert r["dropped"] == len(r["dropped_items"]) + r["dropped_before"]
    assert r["items_total"] == r["in_summary"] + r["restored"] + r["dropped"]


def test_a_statement_the_kept_tail_says_again_is_listed_once_when_it_leaves() -> None:
    # Before: checked with the tail's seq, the setting was listed by the compaction that
    # kept the tail (where it had not left) and again, same seq, by the one covering it.
    first = compact(None, [msg(1, SETTING)], retained=[msg(2, SETTING)])
    assert first.record["report"]["dropped_items"] == []
    counts_hold(first)
    second = compact(first, [msg(2, SETTING)], retained=[msg(3, "Done.")])
    assert {(d["kind"], d["value"], d["seq"]) for d in second.record["report"]["dropped_items"]} == {
        ("setting", "APP_PORT=8080", 2), ("setting_text", SETTING, 2)}
    counts_hold(second)
    third = compact(second, [msg(3, "Done.")])
    assert third.record["report"]["dropped_items"] == [] and third.report.dropped_before == 2
    assert max(entries(first, second, third).values()) == 1


def test_a_marked_line_of_the_previous_summary_leaves_no_bare_kind_to_list() -> None:
    # Before: the marked sentence taken out, "setting_text:" was read as a sentence with a
    # value (an identifier) and listed, same seq, by every compaction whose previous
    # summary carried the marked line.
    line = ('- setting_text: (superseded at seq 40) In the staging env file, CACHE_BACKEND needs to be '
            '"memcached". (seq 17)')
    assert said_in_summary(f"## Fact Checklist\n{line}\n", 30) == []
    previous = replace(compact(None, [msg(30, "Done.")]), text=f"## Fact Checklist\n{line}")
    again = compact(previous, [msg(31, "Done.")], summary=f"## Fact Checklist\n{line}")
    later = compact(again, [msg(32, "Done.")], summary=NONE)
    assert all(d["value"] != "setting_text:" for v in (again, later) for d in v.record["report"]["dropped_items"])


def _scan(context: Context, said: Said) -> bool:
    """ADR 0109's rule read literally: some line holds every value as a token and the words."""
    for line in context.text.split("\n"):
        here = {w[:5] for w in re.findall(WORD, line) if len(w) > 2}
        if all(_pattern(k).search(line) for k in said.keys) and len(said.own & here) >= said.need \
                and (not said.also or said.also & here):
            return True
    return False


def test_the_line_index_finds_every_line_a_scan_finds() -> None:
    # Glued units, versions, digit-led names, quotes, paths, names and keys that share
    # runs: the index narrows the lines to test, it never changes the answer (ADR 0115).
    tokens = ["3", "3pm", "30", "3.5", "1,200", "$1,200", "7.2.4", "7.2.4rc1", "v7.2.4", "2fa", "2fa-setup",
              "2024-03-01", "Priya Raman", "Priya", "src/x.py", "x.py", "/etc/hosts", "MAX_WORKERS=3", "q3",
              "March 3", "March 3rd", '"--force"', "3,", "a3", "3a", "30s", "3_x", "Redis 7.2", "4rc1", "14:00-16:00",
              "'quoted thing'", "cache", "warm", "today"]
    rng = random.Random(7)
    checked = 0
    for _ in range(400):
        lines = [" ".join(rng.choice(tokens) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 8))]
        context = Context(["\n".join(lines)])
        sentence = "We warm the cache " + " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 4))) + " today."
        keys = values(sentence)
        for said in [Said(sentence, tuple(keys), 1, frozenset({"cache", "warm"}), 1),
                     *(Said(sentence, (k,), 1) for k in keys)]:
            if said.keys:
                assert context.states(said) == _scan(context, said), (said.keys, lines)
                checked += 1
    assert checked > 800


def test_a_check_reads_only_the_lines_that_hold_all_its_values(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Before: every line holding the longest value was read, for every sentence checked
    # (here 3,000 lines for one sentence): a huge compaction's check grew with the square
    # of its size (2,000 messages of 1,000 characters: 15 s -> 31 s with the check).
    text = "\n".join([f"- module parser_{n} reads the retry_budget" for n in range(3000)]
                     + ["- the retry_budget is 5 for parser_7"])
    context, read = Context([text]), []
    line_words = Context._line_words
    monkeypatch.setattr(Context, "_line_words", lambda self, n: read.append(n) or line_words(self, n))
    sentence = "The retry_budget is 5 from now on."
    said = Said(sentence, tuple(values(sentence)), 1, frozenset({"budge"}), 1)
    assert said.keys == ("retry_budget", "5")
    assert context.states(said) and read == [3000]
