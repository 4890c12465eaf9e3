"""The composition root: ``bootstrap(settings)`` builds everything, nothing is built at import."""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from context_compaction.application.runtime.bus import MessageBus
from context_compaction.application.handlers import HANDLERS, read_only_handlers
from context_compaction.application.contracts.ports import (
    Clock,
    EventStore,
    IdFactory,
    ReadModel,
    TimelineStore,
    TokenCountCache,
    TurnLeases,
)
from context_compaction.application.runtime.services import Services
from context_compaction.application.contracts.settings import Settings
from context_compaction.domain.errors import InvalidCommand, StorageError

from . import otel
from .catalog import LiteLLMCatalog
from .database import Dialect, quote_identifier, refuse_keyword_schema, storage_cause, storage_failure
from .eventstore import SessionsApplication, build_store
from .eventstore.attempts import SqlAttemptLog
from .eventstore.feed import SqlEventFeed
from .memory import build_memory_store
from .memory.build import PREFIX as MEMORY_PREFIX
from .memory.build import MemoryStorage
from .memory.stores import MemoryTimelineFollower
from .readmodel import SqlTokenCountCache
from .purge import SqlContentEraser
from .readonly import postgres_read_only, sqlite_read_only
from .summarizers import make_summarizer
from .system import RandomIds, SystemClock
from .timeline import SqlTimelineStore, TimelineFollower
from .tokens import TiktokenCounter
from .turnleases import SqlTurnLeases


@dataclass(frozen=True)
class Store:
    """What the store was built from (``Services.store``, the ``StoreHandles`` port):
    for ``ctxc verify``, the read-only refusal and the tests' harness."""

    app: SessionsApplication
    database: str
    timeline_follower: Any
    #: The SQL database (None on ``memory://``).
    db: Any = None
    #: The ``memory://`` tables (None on SQL).
    memory: MemoryStorage | None = None
    read_only: str | None = None


def store_of(bus: MessageBus) -> Store:
    """The store a bus built by ``bootstrap`` runs on."""
    store = bus.services.store
    if not isinstance(store, Store):
        raise InvalidCommand("this bus was not built by bootstrap: it names no store")
    return store


@dataclass(frozen=True)
class DatabaseTarget:
    dialect: Dialect
    env: dict[str, str]
    schema: str | None
    description: str
    """Where, without credentials: ``sqlite:///FILE`` or ``postgresql://HOST:PORT/DB``."""


@contextmanager
def opening(target: DatabaseTarget) -> Iterator[None]:
    """Errors while opening the database become ``storage_error`` naming the database
    (never its password) and the cause."""
    try:
        yield
    except StorageError as exc:  # (StorageBusy included)
        cause = exc.details.get("cause") or storage_cause(exc)
        raise _cannot_open(target, cause) from exc
    except Exception as exc:
        if storage_failure(exc) is None:
            raise
        raise _cannot_open(target, _connect_cause(exc)) from exc


def _create_private_file(target: DatabaseTarget) -> None:
    """A new SQLite file is created readable by its owner only: it holds whole
    conversations. SQLite gives its -wal and -shm files the database file's mode."""
    if target.dialect.is_postgres:
        return
    path = target.env["SQLITE_DBNAME"]
    if path.startswith("file:"):  # an SQLite URI (in-memory databases among them)
        in_uri = _uri_file(path)
        if in_uri is None:
            return
        path = in_uri
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass  # an existing file keeps the mode its owner gave it
    except OSError as exc:  # (``opening`` names the file)
        cause = exc.strerror or type(exc).__name__
        raise StorageError(cause, details={"cause": cause}) from None


def _uri_file(uri: str) -> str | None:
    """The file an SQLite ``file:`` URI may create (None: in memory, or a mode that
    never creates one, which must keep failing on a missing file)."""
    parsed = urlparse(uri)
    mode = (parse_qs(parsed.query).get("mode") or ["rwc"])[-1]
    path = unquote(parsed.path)
    if mode != "rwc" or parsed.netloc not in ("", "localhost") or path in ("", ":memory:"):
        return None
    return path


def _cannot_open(target: DatabaseTarget, cause: str) -> StorageError:
    details: dict[str, Any] = {"database": target.description, "cause": cause}
    if target.dialect.is_postgres:
        env = target.env
        details.update(host=env["POSTGRES_HOST"], port=int(env["POSTGRES_PORT"]))
        where = (
            f"PostgreSQL at {env['POSTGRES_HOST']}:{env['POSTGRES_PORT']} "
            f"(database {env['POSTGRES_DBNAME']!r})"
        )
        if cause in _UNREACHABLE:
            return StorageError(f"{where} is unreachable: {cause}", details=details)
        return StorageError(f"{where} cannot be used: {cause}", details=details)
    return StorageError(f"cannot open the database {target.description}: {cause}", details=details)


def _unreachable(exc: BaseException) -> bool:
    """A connection that could not be made (no server answered), as opposed to an
    error the server reported."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__module__.startswith("psycopg"):
            return getattr(seen, "sqlstate", None) is None
        seen = seen.__cause__
    return False


def _connect_cause(exc: BaseException) -> str:
    """Why a connection failed, from libpq's text reduced to a known phrase (its text
    names host and port and never the password, but we say it ourselves)."""
    cause = storage_cause(exc)
    if not _unreachable(exc):
        return cause
    text = str(exc).lower()
    for needle, phrase in _CONNECT_FAILURES:
        if needle in text:
            return phrase
    return "cannot connect"


_CONNECT_FAILURES = (
    ("refused", "connection refused"),
    ("timeout", "connection timed out"),
    ("timed out", "connection timed out"),
    ("translate host name", "unknown host"),
    ("name or service not known", "unknown host"),
    ("no route", "no route to host"),
    ("password", "authentication failed"),
    ("authentication", "authentication failed"),
    ("does not exist", "the database or role does not exist"),
)
_UNREACHABLE = {"connection refused", "connection timed out", "unknown host", "no route to host", "cannot connect"}


def parse_database_url(settings: Settings) -> DatabaseTarget:
    """``sqlite:///FILE``, ``sqlite:///:memory:`` or ``postgresql://USER@HOST:PORT/DB``."""
    url = settings.database_url
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise InvalidCommand("database_url sqlite:/// needs a file name")
        if path == ":memory:":
            # A plain :memory: gives every pooled connection its own empty database.
            path = f"file:ctxc-{uuid.uuid4().hex}?mode=memory&cache=shared"
        return DatabaseTarget(
            dialect=Dialect("sqlite"),
            env={
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": path,
                "SQLITE_LOCK_TIMEOUT": str(settings.sqlite_lock_timeout),
                "CREATE_TABLE": "y",
            },
            schema=None,
            description=f"sqlite:///{path}",
        )
    if url.startswith(("postgresql://", "postgres://")):
        parsed = urlparse(url)
        query = parse_qs(parsed.query)
        pg = settings.postgres
        schema = (query.get("schema") or [None])[0] or pg.schema_name or "public"
        if not _SCHEMA_NAME.fullmatch(schema):
            # We quote it wherever we use it, but eventsourcing names its composite types
            # as "schema.type" text, which PostgreSQL parses (and folds to lower case).
            raise InvalidCommand(
                "the PostgreSQL schema name must be 1..63 lower-case letters, digits or "
                "underscores, starting with a letter or underscore"
            )
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.postgres:PostgresFactory",
            "POSTGRES_DBNAME": (parsed.path or "/").lstrip("/") or "postgres",
            "POSTGRES_HOST": parsed.hostname or "127.0.0.1",
            "POSTGRES_PORT": str(parsed.port or 5432),
            "POSTGRES_USER": unquote(parsed.username or "postgres"),
            "POSTGRES_PASSWORD": unquote(parsed.password or ""),
            "POSTGRES_POOL_SIZE": str(pg.pool_size),
            "POSTGRES_MAX_OVERFLOW": str(pg.max_overflow),
            "POSTGRES_CONNECT_TIMEOUT": str(pg.connect_timeout),
            "POSTGRES_LOCK_TIMEOUT": str(pg.lock_timeout),
            "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": str(
                pg.idle_in_transaction_session_timeout
            ),
            "POSTGRES_SCHEMA": schema,
            "POSTGRES_PRE_PING": "y" if pg.pre_ping else "n",
            "CREATE_TABLE": "y",
        }
        safe = f"postgresql://{parsed.hostname}:{parsed.port or 5432}/{env['POSTGRES_DBNAME']}"
        return DatabaseTarget(Dialect("postgres", schema), env, schema, safe)
    raise InvalidCommand(
        "database_url must be sqlite:///FILE, sqlite:///:memory:, postgresql://... or memory://[NAME]"
    )


_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def bootstrap(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    **overrides: Any,
) -> MessageBus:
    """Build the event store, read model, adapters and the command bus."""
    settings = settings or Settings()
    if settings.database_url.startswith(MEMORY_PREFIX):
        return _bootstrap_memory(settings, clock, ids, overrides)
    target = parse_database_url(settings)
    env = dict(target.env)
    if settings.snapshot_interval:
        env["IS_SNAPSHOTTING_ENABLED"] = "y"
    with opening(target):
        read_only = sqlite_read_only(target.dialect, target.env)
        if read_only is None:
            _create_private_file(target)
        with _schema_lock(target) as pg_read_only:
            read_only = read_only or pg_read_only
            if read_only:
                env["CREATE_TABLE"] = "n"
            app, events, read_model, db = build_store(
                env,
                snapshot_interval=settings.snapshot_interval,
                dialect=target.dialect,
                postgres_schema=target.schema,
                # e.g. a subclass that also is eventsourcing's ``Leader``, to prompt
                # followers of the event feed after each save
                application_class=overrides.pop("application_class", SessionsApplication),
                read_only=read_only is not None,
            )
            leases = SqlTurnLeases(db)
            if target.dialect.is_postgres and read_only is None:
                # Under the schema lock: racing CREATEs fail on PostgreSQL. SQLite
                # creates it on first use, so a reading process never opens the
                # writer connection for it (ADR 0052).
                leases.create_table()
    timeline = overrides.pop("timeline", None) or SqlTimelineStore(db)
    token_cache = SqlTokenCountCache(db)
    token_cache.read_only = read_only is not None
    services = _services(settings, app, events, read_model, token_cache, timeline,
                         leases, clock, ids, overrides)
    assert app.projector is not None
    follower = TimelineFollower(db, app.projector, timeline)
    services.after_checkpoint.append(follower.catch_up)
    services.eraser = SqlContentEraser(app, db)
    if isinstance(services.attempts, SqlAttemptLog):  # (a write racing a purge, ADR 0072)
        services.attempts.after_content_write = services.eraser.erase_if_purged
    services.store = Store(app=app, db=db, database=target.description, timeline_follower=follower,
                           read_only=read_only)
    if read_only is not None:
        log.info("database opened read-only", extra={"cause": read_only})
    return _bus(services, app, read_only)


def _bootstrap_memory(
    settings: Settings, clock: Clock | None, ids: IdFactory | None, overrides: dict[str, Any]
) -> MessageBus:
    """The memory backend (ADR 0045): the same write path on an in-memory recorder."""
    if "application_class" in overrides:
        raise InvalidCommand("application_class needs a SQL database_url")
    app, events, read_model, storage = build_memory_store(
        settings.database_url, snapshot_interval=settings.snapshot_interval
    )
    timeline = overrides.pop("timeline", None) or storage.timeline
    services = _services(settings, app, events, read_model, storage.token_cache, timeline,
                         storage.leases, clock, ids, overrides)
    follower = MemoryTimelineFollower(storage.recorder, app.mapper, timeline)
    services.after_checkpoint.append(follower.catch_up)
    services.store = Store(app=app, memory=storage, database=settings.database_url,
                           timeline_follower=follower)
    return _bus(services, app)


def _bus(services: Services, app: SessionsApplication, read_only: str | None = None) -> MessageBus:
    def close() -> None:
        # Background summaries first (ADR 0038): none may commit into a closed store.
        services.turns.background.cancel(timeout=services.settings.summary_timeout_seconds)
        app.close()

    return MessageBus(services, read_only_handlers(read_only) if read_only else HANDLERS, on_close=close)


def _services(
    settings: Settings, app: SessionsApplication, events: EventStore, read_model: ReadModel,
    token_cache: TokenCountCache, timeline: TimelineStore, leases: TurnLeases, clock: Clock | None,
    ids: IdFactory | None, overrides: dict[str, Any],
) -> Services:
    catalog = overrides.pop("catalog", None) or LiteLLMCatalog()
    summarizer = overrides.pop("summarizer", None) or make_summarizer(settings)
    services = Services(
        settings=settings,
        events=events,
        # Forks read their inherited prefix from their ancestors (issue 42, ADR 0081).
        read_model=TreeReadModel(read_model),
        clock=clock or SystemClock(),
        ids=ids or RandomIds(),
        catalog=catalog,
        tokens=overrides.pop("tokens", None) or TiktokenCounter(catalog.provider_of),
        token_cache=token_cache,
        summarizer=summarizer,
        timeline=timeline,
        attempts=overrides.pop("attempts", None) or SqlAttemptLog(app),
        summarizer_named=lambda name: make_summarizer(settings.model_copy(update={"summarizer": name})),
    )
    services.feed = SqlEventFeed(app)
    services.leases = leases
    services.telemetry = overrides.pop("telemetry", None) or otel.telemetry()
    return services


from .readmodel.tree import TreeReadModel  # noqa: E402 (issue 42: one hunk)

log = logging.getLogger("context_compaction.bootstrap")

#: pg_advisory_lock key that serializes schema creation across processes.
_SCHEMA_LOCK = 0x63747863  # "ctxc"


@contextmanager
def _schema_lock(target: DatabaseTarget) -> Iterator[str | None]:
    """PostgreSQL: create the schema and tables under an advisory lock.

    Several workers starting at once would otherwise race on ``CREATE ... IF NOT
    EXISTS`` and fail with "tuple concurrently updated". Yields why the database is
    to be read only (a role without INSERT on the events table, a standby, a read-only
    transaction default: issue 36), or None; read-only, nothing is created or locked.
    """
    if not target.dialect.is_postgres:
        yield None
        return
    import psycopg

    env = target.env
    with psycopg.connect(
        dbname=env["POSTGRES_DBNAME"],
        host=env["POSTGRES_HOST"],
        port=int(env["POSTGRES_PORT"]),
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"] or None,
        connect_timeout=int(env["POSTGRES_CONNECT_TIMEOUT"]),
        autocommit=True,
    ) as conn:
        refuse_keyword_schema(conn, target.schema)
        reason = postgres_read_only(conn, target.schema, f"{SessionsApplication.name.lower()}_events")
        if reason:
            yield reason
            return
        conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            if target.schema not in (None, "public"):
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(target.schema)}")
            yield None
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))
