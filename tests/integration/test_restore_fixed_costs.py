"""A cold restore reads what a projection needs and no more (ADR 0059).

The session view leaves the checkpoint's ledger (the row's one large value, every item
a compaction dropped) in the database and reads it when something uses it; a second
compaction, which builds on the previous ledger, still gets all of it.
"""

from __future__ import annotations

import json
from typing import Any

from context_compaction import commands
from helpers import compacted_with_ledger


def _compacted(make_harness: Any) -> Any:
    return compacted_with_ledger(make_harness("main", summarizer="extractive",
                                              context_compaction={"enabled": False, "keep_recent_tokens": 200}), 30)


def test_a_session_view_reads_the_ledger_only_when_it_is_used(make_harness: Any) -> None:
    h = _compacted(make_harness)
    stored = json.loads(h.query("SELECT ledger FROM {t}rm_checkpoints")[0][0])
    assert stored["items"], "the fixture's checkpoint has no ledger items"

    restarted = h.new_bus()
    view = restarted.services.read_model.session_view("s")
    assert view is not None and view.checkpoint is not None
    ledger = view.checkpoint.ledger
    assert ledger is not None and repr(ledger) == "LazyLedger(not read yet)"
    # A projection is served without it.
    projection = restarted.dispatch(commands.GetProjection(session_id="s"))
    assert projection.messages
    assert dict(ledger) == stored  # read on first use: the stored text, whole
    assert repr(ledger).endswith("characters)")
    h.close()


def test_a_checkpoint_without_a_ledger_has_none_in_its_view(make_harness: Any) -> None:
    h = _compacted(make_harness)
    h.execute("UPDATE {t}rm_checkpoints SET ledger = NULL")
    view = h.new_bus().services.read_model.session_view("s")
    assert view is not None and view.checkpoint is not None
    assert view.checkpoint.ledger is None
    h.close()


def test_a_second_compaction_builds_on_the_whole_previous_ledger(make_harness: Any) -> None:
    h = _compacted(make_harness)
    first = json.loads(h.query("SELECT ledger FROM {t}rm_checkpoints")[0][0])
    restarted = h.new_bus()  # a cold process: its view has the ledger unread
    more = []
    for n in range(30, 60):
        more += [
            {"role": "user", "content": f"Edit src/mod{n}.py, ticket PROJ-{n}; set FLAG_{n}=on. " * 3},
            {"role": "assistant", "content": f"Done with src/mod{n}.py on port {8000 + n}."},
        ]
    restarted.dispatch(commands.AppendMessages(session_id="s", messages=more))
    outcome = restarted.dispatch(commands.Compact(session_id="s"))
    assert outcome.status == "compacted"
    rows = h.query("SELECT generation, ledger FROM {t}rm_checkpoints ORDER BY generation")
    second = json.loads(rows[-1][1])
    # The first ledger's items are carried (kept or superseded), none forgotten: the
    # new messages name none of them, so only the previous ledger can have given them.
    def keys(ledger: dict[str, Any], *parts: str) -> set[tuple[str, str]]:
        return {(i["kind"], i["value"]) for part in parts for i in ledger.get(part, [])}

    assert keys(first, "items") <= keys(second, "items", "superseded")
    h.close()
