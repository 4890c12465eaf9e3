"""The session view reads the checkpoint's ledger on first use (ADR 0059), also after
other processes wrote. (Its ADR 0057 half tested a function ADR 0073 removed.)"""

from __future__ import annotations

import json
from typing import Any


from context_compaction import commands
from helpers import Harness, ok, user


# ---------------------------------------------------------------- ADR 0059 (lazy ledger)

def _compacted(make_harness: Any) -> Harness:
    h = make_harness("main", summarizer="extractive",
                     context_compaction={"enabled": False, "keep_recent_tokens": 200})
    h.bus.dispatch(commands.StartSession(session_id="s", model="gpt-4o", agent_token_limit=None))
    h.bus.dispatch(commands.AppendMessages(session_id="s", messages=_turns(0, 30)))
    outcome = h.do({"type": "compact", "session_id": "s"})
    assert outcome["ok"] and outcome["result"]["status"] == "compacted", outcome
    return h


def _turns(start: int, stop: int) -> list[dict[str, Any]]:
    batch: list[dict[str, Any]] = []
    for n in range(start, stop):
        batch += [
            {"role": "user", "content": f"Edit src/mod{n}.py, ticket PROJ-{n}; set FLAG_{n}=on. " * 3},
            {"role": "assistant", "content": f"Done with src/mod{n}.py on port {8000 + n}."},
        ]
    return batch


def test_an_empty_stored_ledger_is_still_no_ledger(make_harness: Any) -> None:
    """Before ADR 0059 a checkpoint row whose ledger text is empty read as "no ledger"
    (``LazyLedger(row[16]) if row[16] else None``) and the next compaction started a
    new one. The view's flag (``typeof(c.ledger) <> 'null'`` / ``IS NOT NULL``) now says
    there is one, and the fetched '' is parsed when the compaction uses it."""
    h = _compacted(make_harness)
    h.execute("UPDATE {t}rm_checkpoints SET ledger = ''")
    restarted = h.new_bus()
    view = restarted.services.read_model.session_view("s")
    assert view is not None and view.checkpoint is not None
    restarted.dispatch(commands.AppendMessages(session_id="s", messages=_turns(30, 40)))
    outcome = restarted.dispatch_json({"type": "compact", "session_id": "s"})
    assert outcome["ok"], outcome
    # (the view may still hold a not-yet-read ledger; read, it holds nothing)
    assert view.checkpoint.ledger is None or dict(view.checkpoint.ledger) == {}, \
        f"an empty ledger text reads as {dict(view.checkpoint.ledger)!r}"
    h.close()


def test_a_ledger_read_after_other_processes_compacted_and_reverted_is_its_own(make_harness: Any) -> None:
    """A view taken in one process, its ledger used only after another process
    compacted again and reverted: the lazily read ledger is the view's checkpoint's
    (rows are written once), not the newer one."""
    h = _compacted(make_harness)
    first = json.loads(h.query("SELECT ledger FROM {t}rm_checkpoints")[0][0])
    reader = h.new_bus()
    view = reader.services.read_model.session_view("s")
    assert view is not None and view.checkpoint is not None
    other = h.new_bus()
    other.dispatch(commands.AppendMessages(session_id="s", messages=_turns(30, 60)))
    assert other.dispatch(commands.Compact(session_id="s")).status == "compacted"
    reverted = other.dispatch_json({"type": "revert", "session_id": "s", "to_seq": 10})
    assert view.checkpoint.ledger is not None and dict(view.checkpoint.ledger) == first, reverted
    h.close()


def test_a_corrupt_stored_ledger_gives_an_error_code_and_changes_nothing(make_harness: Any) -> None:
    """A checkpoint row whose ledger text is not JSON: the compaction that builds on it
    must refuse with a CONTRACT code (``corrupt_event`` / ``storage_error``), not an
    ``internal_error``, and record nothing."""
    h = _compacted(make_harness)
    h.execute("UPDATE {t}rm_checkpoints SET ledger = ?", ('{"items": [',))
    restarted = h.new_bus()
    restarted.dispatch(commands.AppendMessages(session_id="s", messages=_turns(30, 40)))
    events = h.events()
    outcome = restarted.dispatch_json({"type": "compact", "session_id": "s"})
    assert not outcome["ok"] and outcome["error"]["code"] in ("corrupt_event", "storage_error"), outcome
    assert h.events() == events
    h.close()


def test_a_cold_process_reports_the_same_ledger_coverage_as_the_warm_one(make_harness: Any) -> None:
    """``get_context_usage`` reads the active checkpoint's ledger report: a cold process
    (its view's ledger not read yet) must report what the process that compacted does."""
    h = _compacted(make_harness)
    warm = ok(h.do({"type": "get_context_usage", "session_id": "s"}))
    cold = ok(h.new_bus().dispatch_json({"type": "get_context_usage", "session_id": "s"}))
    assert warm == cold
    assert json.dumps(warm).count("ledger") >= 1, warm
    h.close()
