"""A session view parses its checkpoint's ledger once per stored text (issue 18 (c)).

The view reads the active checkpoint on every turn; the ledger is the one large JSON
value in that row. ``LedgerCache`` keys the parse by the whole text, so a hit is what
parsing gives and a changed row is parsed again.
"""

from __future__ import annotations

import json
from pathlib import Path

from context_compaction.infrastructure.readmodel.rows import LedgerCache, checkpoint_row
from helpers import Harness, compacted_with_ledger


def compacted(tmp_path: Path) -> Harness:
    h = Harness(tmp_path / "l.db", summarizer="extractive",
                context_compaction={"enabled": False, "keep_recent_tokens": 200})
    return compacted_with_ledger(h, 40)  # type: ignore[no-any-return]


def test_the_view_reuses_the_parsed_ledger_until_its_text_changes(tmp_path: Path) -> None:
    h = compacted(tmp_path)
    read_model = h.bus.services.read_model
    first = read_model.session_view("s")
    second = read_model.session_view("s")
    assert first.checkpoint is not None and first.checkpoint.ledger
    assert first.checkpoint.ledger["items"], "the fixture's checkpoint has no ledger items"
    assert second.checkpoint.ledger["items"] is first.checkpoint.ledger["items"]  # parsed once
    stored = h.query("SELECT ledger FROM {t}rm_checkpoints")[0][0]
    assert first.checkpoint.ledger == json.loads(stored)

    changed = json.loads(stored)
    changed["report"] = {**changed.get("report", {}), "items_total": 12345}
    h.execute("UPDATE {t}rm_checkpoints SET ledger = ?", (json.dumps(changed),))
    third = read_model.session_view("s")
    assert third.checkpoint.ledger == changed  # a different text is parsed again
    h.close()


def test_the_ledger_cache_is_bounded_and_keeps_the_newest() -> None:
    cache = LedgerCache(size=2)
    texts = [json.dumps({"items": [n]}) for n in range(3)]
    parsed = [cache(t) for t in texts]
    assert parsed == [{"items": [0]}, {"items": [1]}, {"items": [2]}]
    assert cache(texts[2]) is parsed[2] and cache(texts[1]) is parsed[1]
    assert cache(texts[0]) is not parsed[0]  # the oldest was dropped


def test_a_checkpoint_row_parses_its_ledger_only_when_it_is_read() -> None:
    # A projection or a turn that does not compact never reads the ledger, which one
    # compaction of a long history makes large (every dropped item): no parse for them.
    parsed: list[str] = []

    def parse(text: str) -> object:
        parsed.append(text)
        return json.loads(text)

    ledger = json.dumps({"items": [{"kind": "port", "value": "8443", "seq": 3}],
                         "report": {"items_total": 1, "dropped_items": []}})
    row = ("cp", "s", 1, None, "summary", 5, 4, "manual", "extractive", "gpt-4o", 900, 100, 0,
           "{}", "2026-12-01T00:00:00Z", 7, ledger, None)
    checkpoint = checkpoint_row(row, parse)
    assert checkpoint.first_retained_seq == 5 and checkpoint.ledger is not None
    assert parsed == []
    assert checkpoint.ledger_report == {"items_total": 1, "dropped_items": []}
    assert checkpoint.to_record()["ledger"] == json.loads(ledger)
    assert parsed == [ledger]  # once, on first use
