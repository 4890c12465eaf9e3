"""What ``ctxc`` needs before a command runs: its settings (with errors that name the
setting and where it came from) and a check that a read-only command has a database to
read. (The hint for a failed summary call is in every interface: ``failure_causes``.)"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from context_compaction.domain.errors import InvalidCommand, StorageError


class UsageError(Exception):
    """Something the operator gave (settings, a file) is unusable: exit 2, message as is."""


def settings_for(args: argparse.Namespace, **extra: Any) -> Any:
    """The settings of this run; anything wrong with them is a ``UsageError`` naming the
    setting, the variable or file it came from, and why."""
    import warnings

    from pydantic import ValidationError

    from context_compaction.application.contracts.settings import Settings, UnknownSettingWarning, problems

    from .logs import configure_logging

    # Logging first, so that a misspelled CTXC_* variable is reported as a log line (the
    # warning itself would repeat it in Python's own format).
    configure_logging(json_lines=bool(getattr(args, "log_json", False)), verbose=getattr(args, "verbose", False))
    warnings.simplefilter("ignore", UnknownSettingWarning)
    # Options win over the file, the file over CTXC_* variables, these over the defaults
    # (ADR 0069): an option the operator did not give sets nothing.
    overrides = dict(extra)
    if getattr(args, "db", None):  # --db FILE|URL: a bare path is a SQLite file
        overrides["database_url"] = args.db if "://" in args.db else f"sqlite:///{Path(args.db).resolve()}"
    if getattr(args, "log_json", False):
        overrides["log_json"] = True
    if getattr(args, "summarizer", None):
        overrides["summarizer"] = args.summarizer
    try:
        if getattr(args, "config", None):
            settings = Settings.from_file(args.config, **overrides)
        else:
            settings = Settings(**overrides)
    except ValidationError as exc:
        source = f" (settings file {args.config})" if getattr(args, "config", None) else ""
        raise UsageError("bad settings" + source + ":\n  " + "\n  ".join(problems(exc))) from None
    except OSError as exc:
        raise UsageError(f"cannot read the settings file {args.config}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a file or variable that must hold JSON (never echoed)
        raise UsageError(f"bad settings: {exc}") from None
    if settings.log_json and not getattr(args, "log_json", False):
        configure_logging(json_lines=True, verbose=getattr(args, "verbose", False))
    _check_database_url(args, settings)
    return settings


def _check_database_url(args: argparse.Namespace, settings: Any) -> None:
    """A database URL we cannot open is what the operator gave (``--db``, the settings
    file or ``CTXC_DATABASE_URL``): refused before any command runs, naming where it
    came from (exit 2, the one exit-code table)."""
    from .bootstrap import MEMORY_PREFIX, parse_database_url

    if settings.database_url.startswith(MEMORY_PREFIX):
        return
    try:
        parse_database_url(settings)
    except InvalidCommand as exc:
        raise DatabaseRefused(f"{exc.message} (database_url from {_database_source(args)})") from None


def _database_source(args: argparse.Namespace) -> str:
    import json
    import os

    if getattr(args, "db", None):
        return "--db"
    config = getattr(args, "config", None)
    if config:
        try:
            data = json.loads(Path(config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if isinstance(data, dict) and "database_url" in data:
            return f"the settings file {config}"
    if any(key.upper() == "CTXC_DATABASE_URL" for key in os.environ):
        return "CTXC_DATABASE_URL"
    return "the default"


def require_database(settings: Any, command: str) -> None:
    """A command that only reads refuses a missing SQLite file instead of creating an
    empty database there (a typo in --db would otherwise leave files behind)."""
    from urllib.parse import parse_qs, unquote, urlparse


    from .bootstrap import parse_database_url

    target = parse_database_url(settings)
    if target.dialect.is_postgres:
        _require_postgres_tables(target, command)
        return
    path = target.env["SQLITE_DBNAME"]
    if path.startswith("file:"):
        parsed = urlparse(path)
        if "memory" in parse_qs(parsed.query).get("mode", []) or unquote(parsed.path) in ("", ":memory:"):
            return
        path = unquote(parsed.path)
    if not Path(path).exists():
        raise NoDatabase(
            f"no database at {path}: `ctxc {command}` works on what is stored and creates none "
            "(check --db, the --config file's database_url or CTXC_DATABASE_URL)",
            details={"database": f"sqlite:///{path}", "cause": "no such file"},
        )


def _require_postgres_tables(target: Any, command: str) -> None:
    """As a missing SQLite file: a schema without our events table (a typo in
    ``?schema=``) is refused, not created with every table in it."""
    import psycopg

    from .eventstore import SessionsApplication

    env, schema = target.env, target.schema
    table = f'"{schema}".{SessionsApplication.name.lower()}_events'
    try:
        with psycopg.connect(
            host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"], dbname=env["POSTGRES_DBNAME"],
            user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None,
            connect_timeout=max(1, round(float(env["POSTGRES_CONNECT_TIMEOUT"]))),
        ) as conn:
            row = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
    except psycopg.Error:
        return  # bootstrap reports an unreachable database with its cause
    if row is None or row[0] is None:
        raise NoDatabase(
            f"no context-compaction tables in schema {schema!r} of {target.description}: "
            f"`ctxc {command}` works on what is stored and creates none (check --db, the --config file's "
            "database_url or CTXC_DATABASE_URL)",
            details={"database": target.description, "schema": schema, "cause": "no such schema or table"},
        )


class OptionOutOfBounds(InvalidCommand):
    """An option value the command refuses: ``invalid_command`` as through ``dispatch``,
    and exit 2 as every other usage error (one exit-code table, issue 35)."""


class DatabaseRefused(InvalidCommand):
    """A ``database_url`` that is no URL we open (``mysql://``, ``sqlite:///``, a bare
    name in the file or the variable): ``invalid_command``, exit 2 (bad settings)."""


class NoDatabase(StorageError):
    """A command that only reads found no database where it was told to look: a missing
    input, ``storage_error`` as before, exit 2 as every missing input file."""


#: Errors in what the operator gave: their code and envelope as ever, exit 2.
USAGE_ERRORS = (OptionOutOfBounds, DatabaseRefused, NoDatabase)


def run_subcommand(args: Any) -> int:
    """The subcommand; an option value its command's model refuses (``timeline --limit
    5000``) is that command's ``invalid_command`` naming the field, as through
    ``dispatch``, not an internal error (exit 2: a usage error)."""
    from pydantic import ValidationError

    try:
        return int(args.func(args))
    except ValidationError as exc:
        if exc.title not in _command_model_names():
            raise
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "command"
        raise OptionOutOfBounds(f"{where}: {first['msg']}") from None


def _command_model_names() -> set[str]:
    from context_compaction.application.contracts.commands import command_types

    return {cls.__name__ for cls in command_types().values()}
