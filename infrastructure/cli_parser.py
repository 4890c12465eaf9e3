"""The ``ctxc`` argument parser: every option with its help and default; the global
options (``--db``, ``--config``, ``--summarizer``, ``--json``, ``--log-json``, ``-v``) are
accepted before or after the subcommand."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:  # uvicorn would fail with a traceback (exit 4)
        raise argparse.ArgumentTypeError("must be a port number, 0..65535")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be zero or a positive integer")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


#: One table for every subcommand (issue 35): what the operator typed is 2, what the
#: command met is 1.
EXIT_CODES = [
    (0, "ok"),
    (1, "the command failed (its error code printed; dispatch: a line failed)"),
    (2, "usage: an unknown or missing option, an option out of range, a missing or unreadable "
        "input file (a reading command's database too), bad settings or database URL"),
    (3, "verify found a difference or a damaged event"),
    (4, "internal error"),
    (130, "interrupted"),
    (141, "stdout closed early"),
]


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, when it has one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (default is None or default is argparse.SUPPRESS or isinstance(default, bool)
                or "%(default)" in text or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"

    def _split_lines(self, text: str, width: int) -> list[str]:
        # (never inside a name: "ctxc-demo" must stay whole, also to copy it)
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options every command takes, before or after its name. The copy on each
    subcommand defaults to SUPPRESS, so that it never overwrites a value given before
    the subcommand with its own default."""

    def d(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--db", default=d(None), metavar="FILE|URL",
                       help="SQLite file or database URL (default: the --config file's database_url, "
                            "else $CTXC_DATABASE_URL, else ./ctxc.db)")
    group.add_argument("--config", default=d(None), metavar="FILE",
                       help="JSON settings file (it wins over CTXC_* variables, options win over both)")
    # (no argparse choices: any registered summarizer is a name; bootstrap refuses others)
    group.add_argument("--summarizer", default=d(None), metavar="NAME",
                       help="how checkpoints are summarized: llm (litellm, the session's model), "
                            "extractive (offline, deterministic), native, or another registered "
                            "name (default: the settings' summarizer, llm)")
    group.add_argument("--json", action="store_true", default=d(False), help="machine-readable JSON output")
    group.add_argument("--log-json", action="store_true", default=d(False), help="log as JSON lines on stderr")
    group.add_argument("-v", "--verbose", action="store_true", default=d(False),
                       help="log at INFO level on stderr (default: WARNING)")


class _Version(argparse.Action):
    """``--version``, importing the package root only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from context_compaction import __version__

        print(f"ctxc {__version__}")
        parser.exit()


def build_parser(commands: Mapping[str, Callable[[argparse.Namespace], int]]) -> argparse.ArgumentParser:
    """The ``ctxc`` parser; ``commands`` maps each subcommand to the function that runs it."""
    parser = argparse.ArgumentParser(
        prog="ctxc",
        description="Event-sourced LLM session history and context compaction.",
        epilog="Exit codes (every subcommand): " + ", ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES) + ".",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    _global_options(parser, defaults=True)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, defaults=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str, session: bool = False,
            read_only: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text,
                           formatter_class=_HelpFormatter)
        if session:
            p.add_argument("session", help="session id")
        p.set_defaults(func=commands[name], read_only=read_only)
        return p

    _session_commands(add)
    _log_commands(add)
    _serve_command(add)
    from .cli_inspect import add_inspect_command

    add_inspect_command(add)
    from .cli_costs import add_parsers  # (issue 43)

    add_parsers(add)
    from .cli_tree import add_parsers as add_tree  # (issue 42)

    add_tree(add)
    from .cli_eval import add_parser as add_eval

    add_eval(add)
    return parser


_Add = Callable[..., argparse.ArgumentParser]


def _session_commands(add: _Add) -> None:
    p = add("demo", "run the offline demo session (no network, no API key)")
    p.add_argument("--workdir", default="ctxc-demo", help="folder for the demo database (recreated)")
    p.add_argument("--turns", type=_positive_int, default=12, help="turns in the scripted session")
    add("dispatch", "JSON commands on stdin, one envelope per line on stdout; "
                                  "exit 1 when any line failed")
    p = add("sessions", "list sessions", read_only=True)
    p.add_argument("--limit", type=_positive_int, default=100, help="sessions at most")
    p.add_argument("--offset", type=_non_negative_int, default=0, help="sessions to skip first")
    p.add_argument("--tree", action="store_true", help="forks and sub-agents nested under their parents")
    p = add("history", "the raw message log of a session", session=True, read_only=True)
    p.add_argument("--all", action="store_true", help="include invalidated (hidden) messages")
    p.add_argument("--include-deleted", action="store_true", help="an audit read of a deleted session")
    p = add("info", "context usage of a session (/info)", session=True, read_only=True)
    p.add_argument("--model", help="budget for this model (default: the session's)")
    p.add_argument("--system-prompt", metavar="TEXT", help="count this system prompt too (default: none)")
    p.add_argument("--system-prompt-file", metavar="FILE", help="count the system prompt in this file too")
    # read_only: an existing session in an existing database (a --db typo creates no file)
    p = add("compact", "compact a session now (manual /compact)", session=True, read_only=True)
    p.add_argument("--model", help="summarize with this model (default: the session's)")
    p = add("checkpoints", "the checkpoints of a session", session=True, read_only=True)
    p.add_argument("--include-deleted", action="store_true", help="an audit read of a deleted session")
    p = add("projection", "the history part of the next request", session=True, read_only=True)
    p.add_argument("--model", help="project for this model, for provider-private state replay "
                                   "(default: the session's)")
    p = add("replay", "state and projection of a session as of a past version",
            session=True, read_only=True)
    p.add_argument("--at-version", type=_positive_int, required=True, help="aggregate version to replay to")
    p.add_argument("--include-deleted", action="store_true", help="an audit read of a deleted session")


def _log_commands(add: _Add) -> None:
    """The commands over a session's past and the whole log: timeline, verify, events..."""
    p = add("timeline", "Timeline entries (checkpoint summaries) of a session",
            session=True, read_only=True)
    p.add_argument("query", nargs="?", help="text to look for (default: every entry)")
    p.add_argument("--limit", type=_positive_int, default=20, help="entries at most")
    add("verify", "rebuild the read model from the events in a scratch database and compare",
        read_only=True)
    p = add("resummarize", "summarize a past checkpoint's source again and print it beside the "
                           "committed summary (stores nothing)", session=True, read_only=True)
    p.add_argument("checkpoint", help="checkpoint id (see `ctxc checkpoints`)")
    p.add_argument("--model", help="summarize with this model (default: the session's)")
    p = add("events", "the event feed as JSON lines (position, session_id, version, type, at, "
                      "payload)", read_only=True)
    p.add_argument("--after", type=_non_negative_int, default=0,
                   help="start after this position (the last one a follower processed)")
    p.add_argument("--limit", type=_positive_int, default=None, help="events in all (default: every one)")
    p.add_argument("--follow", action="store_true", help="keep polling for new events until interrupted")
    p.add_argument("--interval", type=_positive_float, default=0.5, help="seconds between polls with --follow")
    p = add("import-legacy", "import sessions from a legacy PicoBot SQLite file")
    p.add_argument("file", help="the legacy SQLite file")
    p.add_argument("--model", default="gpt-4o", help="model for sessions whose row names none")


def _serve_command(add: _Add) -> None:
    p = add("serve", "HTTP endpoint POST /v1/commands (needs the [http] extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=_port, default=8080, help="port to listen on")
    p.add_argument("--token", help="bearer token (default: $CTXC_HTTP_TOKEN)")
    p.add_argument("--insecure-local", action="store_true", help="allow no token when bound to loopback")
    p.add_argument("--max-body-bytes", type=_positive_int, default=None,
                   help="request size limit (default: the settings' limits.max_request_bytes)")
    p.add_argument("--max-connections", type=_positive_int, default=256,
                   help="open connections at most; the longest-waiting idle one is closed for a new one")
    p.add_argument("--request-timeout", type=_positive_float, default=10.0,
                   help="seconds for a request (headers and body) to arrive")
    p.add_argument("--idle-timeout", type=_positive_int, default=5,
                   help="seconds an idle keep-alive connection stays open")
    p.add_argument("--public-docs", action="store_true",
                   help="serve /docs and /openapi.json without the token")
