"""Builders and a harness shared by the tests."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from context_compaction import Settings, bootstrap
from context_compaction.application.runtime.bus import MessageBus
from harness import Inspect


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(text: str | None = None, calls: list[tuple[str, str, str]] | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, **extra}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    return message


def tool(call_id: str, text: str, name: str | None = None) -> dict[str, Any]:
    message = {"role": "tool", "tool_call_id": call_id, "content": text}
    if name:
        message["name"] = name
    return message


def read_turns(start: int, count: int) -> list[dict[str, Any]]:
    """``count`` turns from ``start``: user, assistant calling ``read``, its result,
    assistant (4 messages each, about 60 tokens of payload)."""
    out: list[dict[str, Any]] = []
    for n in range(start, start + count):
        out += [user(f"step {n}"), assistant(None, [(f"c{n}", "read", "{}")]),
                tool(f"c{n}", f"contents {n} " + "line " * 30, name="read"), assistant(f"done {n} " + "ok " * 20)]
    return out


def commit_checkpoint(session: Any, first_retained_seq: int, *, created_at: str = "2024-01-01T00:00:00+00:00") -> None:
    """Commit the next checkpoint on a ``Session`` aggregate, cutting before
    ``first_retained_seq`` (domain tests: no handler, no summary)."""
    from context_compaction.domain.checkpoint import Checkpoint

    generation = session.context_generation + 1
    session.commit_checkpoint(Checkpoint(
        checkpoint_id=f"cp_{generation}", generation=generation, parent_checkpoint_id=None, summary="s",
        first_retained_seq=first_retained_seq, source_max_seq=first_retained_seq - 1, trigger_reason="auto",
        provider_kind="extractive", model="m", tokens_before=10, tokens_after=1, degraded=False,
        summary_source={}, created_at=created_at))


def mixed_session(h: Any, session_id: str) -> None:
    """A short session of every message shape a host edits: plain and multi-part user
    content, an assistant tool call and its result."""
    ok(h.do({"type": "start_session", "session_id": session_id, "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": session_id, "messages": [
        user("plain question"),
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}]},
        assistant(None, calls=[("call_1", "read_file", '{"path": "a.py"}')]),
        tool("call_1", "contents of a.py"),
        assistant("done"),
    ]}))


def compacted_with_ledger(h: Any, pairs: int) -> Any:
    """Session ``s`` of ``pairs`` user/assistant pairs full of must-keep facts (paths,
    tickets, settings, ports), compacted once by the extractive summarizer: its
    checkpoint carries a ledger. ``h`` is made with compaction off and a small
    ``keep_recent_tokens``."""
    from context_compaction import commands

    h.bus.dispatch(commands.StartSession(session_id="s", model="gpt-4o", agent_token_limit=None))
    batch: list[dict[str, Any]] = []
    for n in range(pairs):
        batch += [
            {"role": "user", "content": f"Edit src/mod{n}.py, ticket PROJ-{n}; set FLAG_{n}=on. " * 3},
            {"role": "assistant", "content": f"Done with src/mod{n}.py on port {8000 + n}."},
        ]
    h.bus.dispatch(commands.AppendMessages(session_id="s", messages=batch))
    outcome = h.do({"type": "compact", "session_id": "s"})
    assert outcome["ok"] and outcome["result"]["status"] == "compacted", outcome
    return h


def parse_before_adr_0056(bus: Any, data: Any) -> Any:
    """``MessageBus.parse`` before ADR 0056 (main's application/runtime/bus.py at 3696e5f): the
    oracle the JSON fast path is compared with."""
    from pydantic import ValidationError

    from context_compaction.application.runtime.bus import validation_error
    from context_compaction.application.contracts.commands import COMMAND_ADAPTER, command_types
    from context_compaction.domain.errors import InvalidCommand, InvalidMessage
    from context_compaction.domain.messages import json_problem

    limit = bus.services.settings.limits.max_request_bytes
    if isinstance(data, (str, bytes, bytearray)):
        if len(data) > limit:
            raise InvalidCommand(f"request larger than {limit:,} bytes")
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise InvalidCommand(f"not valid JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise InvalidCommand("a command must be a JSON object")
    problem = json_problem(dict(data))
    if problem:
        raise (InvalidMessage if problem.startswith("messages.") else InvalidCommand)(problem)
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in command_types():
        raise InvalidCommand(f"unknown command type {kind!r}" if isinstance(kind, str) else "missing type")
    try:
        return COMMAND_ADAPTER.validate_python(dict(data))
    except ValidationError as exc:
        raise validation_error(exc) from None
    except RecursionError:
        raise InvalidCommand("command nested too deeply") from None


def ok(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["ok"], envelope
    return envelope["result"]


def err(envelope: dict[str, Any], code: str) -> dict[str, Any]:
    assert not envelope["ok"], envelope
    assert envelope["error"]["code"] == code, envelope
    return envelope["error"]


def memory_url() -> str:
    """A ``memory://`` store of its own (ADR 0045): shared by the buses that name it."""
    return f"memory://{uuid.uuid4().hex}"


class NeedsDatabase(Exception):
    """A test asked the memory backend for SQL: it belongs on SQLite/PostgreSQL."""


class Harness:
    """Buses on one database (a SQLite file, a PostgreSQL schema or a ``memory://``
    store); ``reopen()`` is a restart."""

    def __init__(self, target: Path | str, *, adapters: dict[str, Any] | None = None, **settings: Any) -> None:
        self.url = target if isinstance(target, str) and "://" in target else f"sqlite:///{target}"
        self.path = Path(str(target)) if not isinstance(target, str) or "://" not in target else None
        self.settings = settings
        self.adapters = dict(adapters or {})
        self.buses: list[MessageBus] = []
        self.bus = self.new_bus()

    @property
    def inspect(self) -> Inspect:
        """What tests look at behind the current bus (its application, recorder, tables)."""
        return Inspect(self.bus)

    @property
    def is_postgres(self) -> bool:
        return self.url.startswith("postgres")

    @property
    def is_memory(self) -> bool:
        return self.url.startswith("memory://")

    def new_bus(self, *, adapters: dict[str, Any] | None = None, **overrides: Any) -> MessageBus:
        """A bus on the same database; ``adapters`` replace ports (summarizer, timeline, ...)."""
        settings = Settings(database_url=self.url, **{**self.settings, **overrides})
        bus = bootstrap(settings, **{**self.adapters, **(adapters or {})})
        self.buses.append(bus)
        return bus

    def reopen(self) -> MessageBus:
        self.bus.close()
        self.bus = self.new_bus()
        return self.bus

    def do(self, command: dict[str, Any] | str) -> dict[str, Any]:
        return self.bus.dispatch_json(command)

    # ------------------------------------------------ raw database access (tests only)
    def _db(self) -> Any:
        if self.is_memory:
            raise NeedsDatabase("raw SQL needs a SQLite or PostgreSQL harness")
        for bus in reversed(self.buses):
            if not bus._closed:
                return Inspect(bus).db, Inspect(bus).app
        bus = self.new_bus()
        return Inspect(bus).db, Inspect(bus).app

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Run SQL (``{t}`` before table names) outside the library, e.g. to break things."""
        db, _ = self._db()
        with db.write() as cur:
            cur.execute(sql, params)

    def fail_inserts(self, table: str) -> None:
        """Make every INSERT into ``table`` fail inside its transaction; reads still work."""
        if self.is_postgres:
            self.execute("CREATE OR REPLACE FUNCTION {t}ctxc_fail() RETURNS trigger AS $$"
                         " BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql")
            self.execute(f"CREATE TRIGGER ctxc_fail BEFORE INSERT ON {{t}}{table}"
                         " FOR EACH ROW EXECUTE FUNCTION {t}ctxc_fail()")
        else:
            self.execute(f"CREATE TRIGGER ctxc_fail BEFORE INSERT ON {table}"
                         " BEGIN SELECT RAISE(ABORT, 'injected failure'); END")

    def allow_inserts(self, table: str) -> None:
        self.execute(f"DROP TRIGGER ctxc_fail ON {{t}}{table}" if self.is_postgres else "DROP TRIGGER ctxc_fail")

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        db, _ = self._db()
        with db.read() as cur:
            return cur.execute(sql, params).fetchall()

    def events(self) -> int:
        """How many session events are stored (all sessions; not the compaction attempt
        logs, which record attempts that change nothing by design: ADR 0032)."""
        if self.is_memory:
            return sum(1 for n in _notifications(self._bus()) if not _is_attempt(n.topic))
        db, app = self._db()
        with db.read() as cur:
            return int(cur.execute(
                f"SELECT COUNT(*) FROM {app.projector.events_table.qualified} WHERE topic NOT LIKE ?",
                (ATTEMPT_TOPICS,),
            ).fetchone()[0])

    def stored_events(self, topic_prefix: str) -> list[tuple[int, str, bytes]]:
        """(version, topic, state) of the stored events whose topic starts with
        ``topic_prefix``, by version: the notification log, on any backend."""
        app = Inspect(self._bus()).app
        found = [n for n in app.recorder.select_notifications(start=1, limit=10**9)
                 if n.topic.startswith(topic_prefix)]
        return sorted(((n.originator_version, n.topic, bytes(n.state)) for n in found), key=lambda r: r[0])

    def count(self, table: str) -> int:
        if self.is_memory:
            return _memory_count(self._bus(), table)
        return int(self.query(f"SELECT COUNT(*) FROM {{t}}{table}")[0][0])

    def _bus(self) -> MessageBus:
        for bus in reversed(self.buses):
            if not bus._closed:
                return bus
        return self.new_bus()

    def close(self) -> None:
        for bus in self.buses:
            bus.close()


@contextmanager
def table_locked(h: Harness, mode: str, table: str = "contextcompaction_events") -> Iterator[None]:
    """Another connection holds a PostgreSQL table (the events table unless named) in
    ``mode`` while the block runs (a writer elsewhere), and lets go after it."""
    import psycopg

    from backends import POSTGRES_URL

    schema = h.url.split("schema=")[1]
    locker = psycopg.connect(POSTGRES_URL)
    locker.execute(f'LOCK TABLE "{schema}".{table} IN {mode} MODE')
    try:
        yield
    finally:
        locker.rollback()
        locker.close()


def notifies_heard(h: Harness, channel_prefix: str, command: dict[str, Any], timeout: float) -> list[Any]:
    """The PostgreSQL NOTIFYs that running ``command`` sends. The library names the
    channel after the events table, alike in every schema: a channel of this harness's
    own keeps other databases' writers out of it."""
    import psycopg

    from backends import POSTGRES_URL

    recorder = h.inspect.recorder
    recorder.channel_name = channel_prefix + h.url.split("schema=")[1].replace("-", "_")
    listener = psycopg.connect(POSTGRES_URL, autocommit=True)
    try:
        listener.execute(f'LISTEN "{recorder.channel_name}"')
        ok(h.do(command))
        return list(listener.notifies(timeout=timeout, stop_after=1))
    finally:
        listener.close()


def event_count(h: Harness) -> int:
    return h.events()


ATTEMPT_TOPICS = "context_compaction:CompactionAttempts%"


def _is_attempt(topic: str) -> bool:
    return topic.startswith(ATTEMPT_TOPICS.rstrip("%"))


def _notifications(bus: MessageBus) -> list[Any]:
    """Every stored event of a memory bus, in notification order."""
    return list(Inspect(bus).recorder.select_notifications(start=1, limit=10**9))


def _memory_count(bus: MessageBus, table: str) -> int:
    from context_compaction.infrastructure.readmodel import PROJECTED_TABLES

    storage = Inspect(bus).memory
    if table in PROJECTED_TABLES:
        return len(bus.services.read_model.table_rows(table))  # type: ignore[attr-defined]
    if table == "rm_timeline":
        return len(storage.timeline._entries)
    if table == "rm_token_counts":
        return sum(len(counts) for counts in storage.token_cache._counts.values())
    raise NeedsDatabase(f"the memory backend has no table {table}")


def fingerprint(bus: MessageBus) -> tuple[Any, ...]:
    """Everything a command could change: the sessions' event log and every projected
    table. The compaction attempt log (its own streams, ADR 0032) records attempts
    that change nothing, by design: ``attempt_count`` counts them."""
    from context_compaction.infrastructure.readmodel import PROJECTED_TABLES

    read_model = bus.services.read_model
    if Inspect(bus).is_memory:
        ids = [n.id for n in _notifications(bus) if not _is_attempt(n.topic)]
        return (max(ids, default=None), tuple(tuple(read_model.table_rows(t)) for t in PROJECTED_TABLES))
    app = Inspect(bus).app
    table = app.projector.events_table
    row = Inspect(bus).db.query_one(
        f"SELECT MAX({table.id_column}) FROM {table.qualified}"
        " WHERE topic NOT LIKE ?", (ATTEMPT_TOPICS,)
    )
    newest = row[0] if row else None
    tables = tuple(tuple(read_model.table_rows(t)) for t in PROJECTED_TABLES)
    return (newest, tables)


FAKE_MODEL = "openai/fake-model"


def llm_settings(base_url: str, *, token_limit: int = 32_000, timeout: float = 10.0, **extra: Any) -> dict[str, Any]:
    """Settings for sessions on the fake provider, summarized through litellm over HTTP."""
    return {
        "summarizer": "llm",
        "summary_timeout_seconds": timeout,
        "models": {FAKE_MODEL: {"api_base": base_url, "api_key": "test-key", "token_limit": token_limit}},
        **extra,
    }


class RecordingSummarizer:
    """A fake summarizer port that records its requests; it can block or fail."""

    def __init__(self, *, fail: bool = False, text: str | None = None) -> None:
        import threading

        from context_compaction.infrastructure.summarizers import ExtractiveSummarizer

        self.inner = ExtractiveSummarizer()
        self.requests: list[Any] = []
        self.fail = fail
        self.text = text
        self.entered = threading.Event()
        self.release: Any = None  # a threading.Event to wait for, when set

    def summarize(self, request: Any) -> Any:
        from context_compaction.application.contracts.ports import SummaryResult
        from context_compaction.domain.errors import SummaryFailed

        self.requests.append(request)
        self.entered.set()
        if self.release is not None:
            self.release.wait(timeout=30)
        if self.fail:
            raise SummaryFailed("the fake summarizer failed")
        if self.text is not None:
            return SummaryResult(text=self.text, provider_kind="fake", model="fake")
        return self.inner.summarize(request)


def attempt_count(bus: MessageBus) -> int:
    """Events in the compaction attempt logs of every session (ADR 0032)."""
    if Inspect(bus).is_memory:
        return sum(1 for n in _notifications(bus) if _is_attempt(n.topic))
    app = Inspect(bus).app
    table = app.projector.events_table
    row = Inspect(bus).db.query_one(
        f"SELECT COUNT(*) FROM {table.qualified} WHERE topic LIKE ?", (ATTEMPT_TOPICS,)
    )
    return int(row[0]) if row else 0

#: mypy settings of the typing tests: a host's script under ``--strict``; litellm unchecked.
MYPY_CONFIG = """\
[mypy]
strict = True
follow_imports = silent
no_error_summary = True
show_column_numbers = False

[mypy-litellm.*]
follow_imports = skip
ignore_missing_imports = True
"""


def mypy_package_root(root: Path) -> str:
    """A folder where mypy finds ``context_compaction``: the editable install maps the
    package onto four folders through an import hook, which mypy does not run."""
    import context_compaction

    package = Path(context_compaction.__file__).parent
    if package.name == "context_compaction":  # a wheel install: found as it is
        return ""
    tree = root / "context_compaction"
    tree.mkdir(parents=True)
    for item in package.iterdir():
        if item.suffix in (".py", ".typed"):
            (tree / item.name).symlink_to(item)
    for layer in ("domain", "application", "infrastructure"):
        (tree / layer).symlink_to(package.parent / layer)
    return str(root)


# ------------------------------------------------------------- threads, answers
def in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``fn`` in a daemon thread; its result (or exception) lands in the dict."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


class CheckpointNames:
    """Checkpoint ids differ between databases: named by the order they were seen
    (``keep``: ids that are not checkpoint ids, such as the session's)."""

    def __init__(self, keep: tuple[str, ...] = ()) -> None:
        self.keep = keep
        self.names: dict[str, str] = {}

    def name(self, value: Any) -> Any:
        if isinstance(value, str) and len(value) >= 16 and value not in self.keep:
            return self.names.setdefault(value, f"ckpt{len(self.names)}")
        return value


def normal_answer(value: Any, ids: CheckpointNames, volatile: set[str], key: str = "") -> Any:
    """An answer envelope without its ``volatile`` keys, checkpoint ids named by ``ids``."""
    if isinstance(value, dict):
        return {k: normal_answer(v, ids, volatile, k) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [normal_answer(v, ids, volatile, key) for v in value]
    if "checkpoint" in key or key in ("now_active", "parent", "checkpoint_id", "id", "attempt_id"):
        return ids.name(value)
    return value


def wait_until_serving(proc: "subprocess.Popen[bytes]", url: str, seconds: float = 60) -> None:
    """Until ``ctxc serve`` answers its health probe; a server that exits fails with its stderr."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "ctxc serve did not start"
        time.sleep(0.1)


def serving(proc: "subprocess.Popen[bytes]", port: int) -> Iterator[str]:
    """The URL of a started ``ctxc serve`` once it answers; the server stops after."""
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
