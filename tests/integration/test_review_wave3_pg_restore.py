"""Break-it review (wave 3) of ADR 0057 (PostgreSQL's ordered-insert function) and
ADR 0059 (the session view reads the checkpoint's ledger on first use)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import psycopg
import pytest

from backends import POSTGRES_URL
from cli_inprocess import run_cli
from context_compaction import commands
from context_compaction.infrastructure.eventstore.pgsql import ORDERED_FUNCTION
from helpers import Harness, ok, user


def _schema(h: Harness) -> str:
    return h.url.split("schema=")[1]


def _function_definition(h: Harness) -> str | None:
    rows = h.query(
        "SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = ? AND p.proname = ?", (_schema(h), ORDERED_FUNCTION))
    return rows[0][0] if rows else None


@pytest.mark.postgres
def test_a_start_while_another_process_makes_the_function_still_starts(pg_databases: Any) -> None:
    """The function is missing (dropped mid-run, or a database of the previous release)
    and one process's append is making it (``_insert_one_trip``, outside the schema
    lock every start takes): a process starting at that moment runs the same
    ``CREATE FUNCTION`` from ``create_table``; it must start, as the append tolerates
    the same race (DuplicateFunction / UniqueViolation)."""
    h: Harness = pg_databases.harness("start-race")
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    definition = _function_definition(h)
    assert definition is not None
    h.execute(f"DROP FUNCTION {{t}}{ORDERED_FUNCTION}")
    h.bus.close()

    maker = psycopg.connect(POSTGRES_URL)  # the appending process, mid-creation
    maker.execute(definition)  # (not committed: its pg_proc row blocks an equal one)
    outcome: dict[str, Any] = {}

    def start() -> None:
        try:
            bus = h.new_bus()
            outcome["appended"] = bus.dispatch_json({"type": "append_messages", "session_id": "s",
                                                     "messages": [user("one")]})
        except Exception as exc:  # noqa: BLE001 - the assertion below names it
            outcome["error"] = f"{type(exc).__name__}: {exc}"

    starter = threading.Thread(target=start)
    starter.start()
    # Commit once the starter waits on the maker's uncommitted row (or it gave up).
    with psycopg.connect(POSTGRES_URL, autocommit=True) as watcher:
        deadline = time.monotonic() + 30
        while starter.is_alive() and time.monotonic() < deadline:
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
                " AND transactionid = (SELECT backend_xid FROM pg_stat_activity WHERE pid = %s)",
                (maker.info.backend_pid,)).fetchone()
            if waiting and waiting[0]:
                break
            time.sleep(0.05)
    maker.commit()
    maker.close()
    starter.join(60)
    assert "error" not in outcome, f"a start racing an append's CREATE FUNCTION failed: {outcome['error']}"
    assert ok(outcome["appended"])["seqs"] == [1]


@pytest.mark.postgres
def test_a_read_only_command_on_a_previous_release_schema_creates_nothing(
    pg_databases: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema made by the release before ADR 0057 has no function; ``ctxc sessions``
    (read-only) must read it and create nothing in it: before ADR 0057 its start's
    schema statements were all ``IF NOT EXISTS`` no-ops on such a schema."""
    h: Harness = pg_databases.harness("read-only-old")
    ok(h.do({"type": "start_session", "session_id": "S", "model": "gpt-4o"}))
    h.execute(f"DROP FUNCTION {{t}}{ORDERED_FUNCTION}")
    h.bus.close()
    capsys.readouterr()
    assert run_cli(["sessions", "--db", h.url]) == 0
    assert "S" in capsys.readouterr().out
    assert _function_definition(h) is None, "a read-only command created the ordered-insert function"


@pytest.mark.postgres
def test_a_dropped_function_mid_run_loses_no_event_across_processes(pg_databases: Any) -> None:
    """Two processes on one schema; the function is dropped between their appends
    several times. Every append lands once, notification ids stay gapless and in
    order, and the read model points at every event."""
    h: Harness = pg_databases.harness("drop-mid-run")
    other = h.new_bus()
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(other.dispatch_json({"type": "start_session", "session_id": "b", "model": "gpt-4o"}))
    for n in range(6):
        if n % 2 == 0:
            h.execute(f"DROP FUNCTION IF EXISTS {{t}}{ORDERED_FUNCTION}")
        ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user(f"a{n}")]}))
        ok(other.dispatch_json({"type": "append_messages", "session_id": "b", "messages": [user(f"b{n}")]}))
        ok(other.dispatch_json({"type": "append_messages", "session_id": "a", "messages": [user(f"x{n}")]}))
    # (A rolled-back insert of the shared session's losing writer leaves a permanent
    # hole in the sequence, as before ADR 0057; what matters is that none is lost.)
    ids = [r[0] for r in h.query("SELECT notification_id FROM {t}contextcompaction_events ORDER BY notification_id")]
    assert len(ids) == len(set(ids)) == 2 + 3 * 6, ids  # 2 starts, 18 appends
    history = ok(h.do({"type": "get_history", "session_id": "a"}))
    assert [m["content"] for m in history["messages"]] == [t for n in range(6) for t in (f"a{n}", f"x{n}")]
    rows = h.query("SELECT seq, notification_id FROM {t}rm_messages WHERE session_id = 'a' ORDER BY seq")
    assert [r[0] for r in rows] == list(range(1, 13)) and [r[1] for r in rows] == sorted(r[1] for r in rows)
    # ``ctxc verify``: the read model rebuilt from the events equals the live one.
    assert run_cli(["verify", "--db", h.url]) == 0


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


@pytest.mark.postgres
def test_the_function_dropped_while_writers_and_a_follower_run(pg_databases: Any) -> None:
    """The concurrent-writers test of ``test_pg_append_order`` with the function dropped
    again and again while four writers (own and shared sessions) append and a follower
    polls: every append succeeds (an append that finds the function gone makes it and
    takes the careful path), the follower sees every stored id in order, the read
    model points at every event."""
    from helpers import in_thread
    from test_pg_append_order import _consistent

    h: Harness = pg_databases.harness("drop-concurrent")
    ok(h.do({"type": "start_session", "session_id": "shared", "model": "gpt-4o"}))
    buses = [h.new_bus() for _ in range(4)]
    for i, bus in enumerate(buses[:2]):
        ok(bus.dispatch_json({"type": "start_session", "session_id": f"own{i}", "model": "gpt-4o"}))
    turns = 15
    plan = [(buses[0], "own0"), (buses[1], "own1"), (buses[2], "shared"), (buses[3], "shared")]
    recorder = h.bus.services.extra["app"].recorder
    done = threading.Event()
    seen: list[int] = []
    schema = _schema(h)

    def follow() -> None:
        while True:
            finished = done.is_set()
            start = seen[-1] + 1 if seen else 1
            seen.extend(n.id for n in recorder.select_notifications(start=start, limit=50))
            if finished and (not seen or not recorder.select_notifications(start=seen[-1] + 1, limit=1)):
                return

    def drop() -> int:
        dropped = 0
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            while not done.is_set():
                conn.execute(f'DROP FUNCTION IF EXISTS "{schema}".{ORDERED_FUNCTION}')
                dropped += 1
                time.sleep(0.05)
        return dropped

    def write(bus: Any, sid: str) -> list[int]:
        return [ok(bus.dispatch_json({"type": "append_messages", "session_id": sid,
                                      "messages": [user(f"{sid}-{k}"), user("more")]}))["seqs"][0]
                for k in range(turns)]

    follower, followed = in_thread(follow)
    dropper, drops = in_thread(drop)
    writers = [in_thread(lambda bus=bus, sid=sid: write(bus, sid)) for bus, sid in plan]
    for thread, _ in writers:
        thread.join(120)
    done.set()
    follower.join(60)
    dropper.join(60)
    assert "error" not in drops, drops.get("error")
    assert "error" not in followed, followed.get("error")
    for _, out in writers:
        assert "error" not in out, f"an append failed while the function was dropped: {out.get('error')!r}"
    firsts = sorted(s for _, out in writers[2:] for s in out["result"])
    assert firsts == list(range(1, 4 * turns, 2))
    stored_ids = [n.id for n in recorder.select_notifications(start=1, limit=10**6)]
    assert seen == stored_ids
    assert len(stored_ids) == 3 + 4 * turns * 2
    _consistent(h)


def test_a_cold_process_reports_the_same_ledger_coverage_as_the_warm_one(make_harness: Any) -> None:
    """``get_context_usage`` reads the active checkpoint's ledger report: a cold process
    (its view's ledger not read yet) must report what the process that compacted does."""
    h = _compacted(make_harness)
    warm = ok(h.do({"type": "get_context_usage", "session_id": "s"}))
    cold = ok(h.new_bus().dispatch_json({"type": "get_context_usage", "session_id": "s"}))
    assert warm == cold
    assert json.dumps(warm).count("ledger") >= 1, warm
    h.close()
