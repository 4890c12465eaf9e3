"""``ctxc``: the command-line interface.

Imports are lazy so that commands which never call a model start fast (no litellm).

Exit codes:
  0  success
  1  the command failed; its contract error code is printed (``error: <code>: <message>``);
     ``dispatch``: at least one line failed (each failure is in its envelope)
  2  usage error: an unknown command or option, bad settings (file, environment), an
     input file that cannot be read
  3  ``verify`` found a difference between the read model and the events, or a damaged event
  4  unexpected internal error
  141  stdout was closed early (``ctxc history S | head -1``): quiet, as git exits on SIGPIPE
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from . import cli_reads as reads
from .cli_common import (
    EXIT_CLOSED_PIPE,
    EXIT_DIFFERENT,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    emit,
    open_bus,
    shown,
)
from .cli_eval import cmd_eval
from .cli_setup import USAGE_ERRORS, UsageError, run_subcommand, settings_for


# ------------------------------------------------------------------ commands
def cmd_dispatch(args: argparse.Namespace) -> int:
    """JSON lines in (stdin), one envelope per line out (stdout); exit 1 when any line
    failed, so that a script notices without parsing every envelope."""
    bus = open_bus(args)
    failed = 0
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            # The envelope's bytes in one orjson walk, as the HTTP edge answers (ADR 0062;
            # ``dispatch_json`` + ``json.dumps`` walked a prepare_turn result twice).
            reply = bus.dispatch_json_reply(line)
            failed += reply.error_code is not None
            sys.stdout.write(reply.body.decode("utf-8") + "\n")
            sys.stdout.flush()
    finally:
        bus.close()
    return EXIT_FAILED if failed else EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .progress import Progress

    if args.db or args.config:
        raise UsageError("ctxc demo makes its own database in --workdir (recreated on each run) and "
                         "takes no --db or --config: give --workdir DIR")
    # --json: the narrative is left out, stdout carries the one JSON document
    out = (lambda line: None) if args.json else None
    with Progress("demo", total=args.turns, enabled=not args.json) as progress:
        facts = run_demo(Path(args.workdir), turns=args.turns, out=out or progress.print, on_turn=progress.advance)
    if args.json:
        print(json.dumps({k: v for k, v in facts.items() if k not in ("info", "replay")}, indent=2, default=str))
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    from .progress import Progress

    # A summary call can take a minute: a spinner with the elapsed time on a terminal.
    # (A failed call's message ends with the credentials hint: failure_causes.)
    with open_bus(args) as bus, Progress(f"compacting {shown(args.session)}: summary call", counts=False,
                                     enabled=not args.json):
        result = bus.dispatch(c.Compact(session_id=args.session, model=args.model))
    return emit(args, result, result.report)


def cmd_verify(args: argparse.Namespace) -> int:
    from .progress import Progress
    from .verify import verify

    with open_bus(args) as bus, Progress("verify", enabled=not args.json) as progress:
        from .bootstrap import store_of

        report = verify(store_of(bus).app, bus.services.read_model, on_progress=progress.update)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(shown(report.text()))
    return EXIT_OK if report.ok else EXIT_DIFFERENT


def cmd_import_legacy(args: argparse.Namespace) -> int:
    from .legacy import import_legacy
    from .progress import Progress

    if not Path(args.file).exists():  # an input file named on the command line: exit 2, as everywhere
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), args.file)
    with open_bus(args) as bus, Progress("import", enabled=not args.json) as progress:
        report = import_legacy(bus, Path(args.file), default_model=args.model, on_progress=progress.update)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(shown(report.text()))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from .http import serve

    return serve(args, settings_for(args))


def cmd_inspect(args: argparse.Namespace) -> int:
    from .cli_inspect import cmd_inspect as inspect

    return inspect(args)


# ------------------------------------------------------------------- parser
def _issue_43_commands() -> dict[str, Any]:
    from . import cli_costs

    return {"cost": cli_costs.cmd_cost, "preview": cli_costs.cmd_preview,
            "commit-candidate": cli_costs.cmd_commit_candidate, "simulate": cli_costs.cmd_simulate}


def _issue_42_commands() -> dict[str, Any]:
    from . import cli_tree

    return {"fork": cli_tree.cmd_fork}


COMMANDS = {
    "demo": cmd_demo,
    "dispatch": cmd_dispatch,
    "sessions": reads.cmd_sessions,
    "history": reads.cmd_history,
    "info": reads.cmd_info,
    "compact": cmd_compact,
    "checkpoints": reads.cmd_checkpoints,
    "projection": reads.cmd_projection,
    "replay": reads.cmd_replay,
    "timeline": reads.cmd_timeline,
    "verify": cmd_verify,
    "import-legacy": cmd_import_legacy,
    "serve": cmd_serve,
    "resummarize": reads.cmd_resummarize,
    "events": reads.cmd_events,
    "inspect": cmd_inspect,
    **_issue_43_commands(),
    **_issue_42_commands(),
    "eval": cmd_eval,
}


def build_parser() -> argparse.ArgumentParser:
    from .cli_parser import build_parser as build

    return build(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    from context_compaction.domain.errors import ContextCompactionError

    try:
        return int(run_subcommand(args))
    except BrokenPipeError:
        return _closed_pipe()
    except ContextCompactionError as exc:
        if args.json:
            _print_or_closed(json.dumps({"ok": False, "error": exc.to_dict()}))
        cause = exc.details.get("cause")
        # a failed call's own words (a provider's, redacted), which its message leaves out
        if "error_class" in exc.details and isinstance(cause, str) and cause not in exc.message:
            print(shown(f"cause: {cause}"), file=sys.stderr)  # (before: the error stays the last line)
        print(shown(f"error: {exc.code}: {exc.message}"), file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, USAGE_ERRORS) else EXIT_FAILED
    except UsageError as exc:
        print(shown(f"error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a file named on the command line
        where = f"{exc.filename}: " if exc.filename else ""
        print(shown(f"error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - one line for an operator, the traceback with -v
        print(shown(f"error: internal_error: unexpected {type(exc).__name__}: {_first_line(exc)}"),
              file=sys.stderr)
        if getattr(args, "verbose", False):
            raise
        return EXIT_INTERNAL


def _first_line(exc: BaseException, width: int = 300) -> str:
    text = (str(exc).strip().splitlines() or ["(no message)"])[0]
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_or_closed(text: str) -> None:
    try:
        print(text)
    except BrokenPipeError:
        _closed_pipe()


def _closed_pipe() -> int:
    """The reader of stdout went away (``| head``): say nothing, as git does on SIGPIPE.
    What is still buffered goes to /dev/null, so the flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_CLOSED_PIPE


def run() -> None:
    """The ``ctxc`` console script: ``main``, then exit without interpreter teardown.

    By the time ``main`` returns every command has closed its bus (and so its database
    connections) and no thread of ours runs; tearing down the modules pydantic and
    eventsourcing loaded would only add ~0.1 s to every command (ADR 0016).
    """
    code = main()
    logging.shutdown()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the output fitted the buffer, and the reader left early
        code = _closed_pipe()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
