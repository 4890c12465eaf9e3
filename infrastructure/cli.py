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
import json
import errno
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from .cli_eval import cmd_eval
from .cli_setup import USAGE_ERRORS, UsageError, require_database, run_subcommand, settings_for

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DIFFERENT, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_CLOSED_PIPE = 128 + 13  # what a shell reports for a process killed by SIGPIPE
EXIT_INTERRUPTED = 128 + 2  # Ctrl-C, as a shell reports SIGINT
READ_EVENTS_PAGE = 1000  # read_events' own bound


# ------------------------------------------------------------------ helpers
def _bus(args: argparse.Namespace, **extra: Any) -> Any:
    from .bootstrap import bootstrap

    settings = settings_for(args, **extra)
    if getattr(args, "read_only", False):
        require_database(settings, args.command)
    bus = bootstrap(settings)
    reason = bus.services.store.read_only if bus.services.store else None
    # Detected at start (issue 36): a subcommand that always writes is refused before it
    # reads its input; ``dispatch`` and ``serve`` run queries, the bus refuses their writes.
    if reason and args.command in ("compact", "import-legacy", "demo"):
        from context_compaction.domain.errors import StorageError

        bus.close()
        raise StorageError(f"the database is open read-only ({reason}): `ctxc {args.command}` writes",
                           details={"cause": "read_only"})
    return bus


# What a terminal acts on instead of showing: C0 controls (newline aside), DEL, C1
# controls, bidi embeddings, overrides and isolates. Stored text (messages, ids, tool
# names) is data: it reaches the operator's terminal escaped, never as a command to it.
_SHOWN = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0))}
_SHOWN.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def _shown(text: str) -> str:
    return text.translate(_SHOWN)


def _emit(args: argparse.Namespace, result: Any, text: str) -> int:
    if args.json:
        data = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print(_shown(text))
    return EXIT_OK


def _table(rows: list[list[Any]], header: list[str]) -> str:
    """A table as text (rich): a header, its rule, one line per row, never wrapped.
    Cells are ``Text``: stored text is shown as it is, never read as rich markup."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(*header, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="")
    for row in rows:
        table.add_row(*(Text("" if c is None else _shown(str(c))) for c in row))
    console = Console(width=100_000, no_color=True, highlight=False, emoji=False, legacy_windows=False)
    with console.capture() as captured:
        console.print(table)
    return "\n".join(line.rstrip() for line in str(captured.get()).splitlines())


def _preview(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        parts = []
        for part in value:
            kind = part.get("type")
            parts.append(part.get("text", "") if kind == "text" else f"[{kind}]")
        value = " ".join(parts)
    value = " ".join(value.split())
    return value if len(value) <= width else value[: width - 1] + "…"


def _chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value or "", ensure_ascii=False))


# ------------------------------------------------------------------ commands
def cmd_dispatch(args: argparse.Namespace) -> int:
    """JSON lines in (stdin), one envelope per line out (stdout); exit 1 when any line
    failed, so that a script notices without parsing every envelope."""
    bus = _bus(args)
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


def cmd_sessions(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    if getattr(args, "tree", False):  # (issue 42)
        from .cli_tree import cmd_sessions_tree

        return cmd_sessions_tree(args)
    with _bus(args) as bus:
        result = bus.dispatch(c.ListSessions(limit=args.limit, offset=args.offset))
    rows = [
        [s.session_id, s.model, s.message_count, s.invalidated_count, s.context_generation,
         s.active_checkpoint_id or "-", "deleted" if s.deleted else "", s.updated_at[:19]]
        for s in result.sessions
    ]
    text = _table(rows, ["session", "model", "messages", "hidden", "gen", "checkpoint", "state", "updated"])
    return _emit(args, result, text if rows else "no sessions")


def cmd_history(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.GetHistory(session_id=args.session, include_invalidated=args.all,
                                           include_deleted=args.include_deleted))
    rows = []
    for m in result.messages:
        calls = ",".join(call.function.name for call in m.tool_calls)
        rows.append([
            m.seq, m.role + (" (steer)" if m.steering else ""), m.turn_id or "",
            calls or (m.tool_call_id or ""), _chars(m.content),
            "hidden" if m.invalidated else "", _preview(m.content),
        ])
    text = _table(rows, ["seq", "role", "turn", "tools", "chars", "state", "content"])
    return _emit(args, result, text if rows else "no messages")


def cmd_info(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    system = Path(args.system_prompt_file).read_text(encoding="utf-8") if args.system_prompt_file else args.system_prompt
    with _bus(args) as bus:
        result = bus.dispatch(c.GetContextUsage(session_id=args.session, system_prompt=system, model=args.model))
    return _emit(args, result, f"{args.session} ({result.model})\n{result.text}")


def cmd_compact(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    from .progress import Progress

    # A summary call can take a minute: a spinner with the elapsed time on a terminal.
    # (A failed call's message ends with the credentials hint: failure_causes.)
    with _bus(args) as bus, Progress(f"compacting {_shown(args.session)}: summary call", counts=False,
                                     enabled=not args.json):
        result = bus.dispatch(c.Compact(session_id=args.session, model=args.model))
    return _emit(args, result, result.report)


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.ListCheckpoints(session_id=args.session,
                                                 include_deleted=args.include_deleted))
    rows = [
        [cp.generation, cp.checkpoint_id, cp.trigger_reason, cp.provider_kind,
         f"{cp.tokens_before:,} -> {cp.tokens_after:,}", cp.first_retained_seq,
         ", ".join(s for s, on in (("active", cp.active), ("degraded", cp.degraded)) if on), cp.created_at[:19]]
        for cp in result.checkpoints
    ]
    text = _table(rows, ["gen", "checkpoint", "reason", "summarizer", "tokens", "first seq", "state", "created"])
    return _emit(args, result, text if rows else "no checkpoints")


def _projection_text(projection: Any) -> str:
    rows = [[i, m["role"], _chars(m.get("content")), ",".join(t["function"]["name"] for t in m.get("tool_calls") or []),
             _preview(m.get("content"))] for i, m in enumerate(projection.messages)]
    head = (f"checkpoint {projection.checkpoint_id or '-'}, generation {projection.context_generation}, "
            f"raw seqs {projection.first_raw_seq or '-'}..{projection.max_raw_seq}, version {projection.version}")
    notes = "".join(f"\nnote: {d}" for d in projection.diagnostics)
    return head + notes + "\n" + _table(rows, ["#", "role", "chars", "tool calls", "content"])


def cmd_projection(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.GetProjection(session_id=args.session, model=args.model))
    return _emit(args, result, _projection_text(result))


def cmd_replay(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.ReplaySession(session_id=args.session, at_version=args.at_version,
                                              include_deleted=args.include_deleted))
    head = (f"{args.session} as of version {result.version}: model {result.model}, next seq {result.next_seq}"
            f"{', deleted' if result.deleted else ''}")
    return _emit(args, result, head + "\n" + _projection_text(result.projection))


def cmd_timeline(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.RecallTimeline(session_id=args.session, query=args.query, limit=args.limit))
    blocks = [f"{e.key}  ({e.created_at[:19]})\n{e.content}" for e in result.entries]
    return _emit(args, result, "\n\n".join(blocks) if blocks else "no timeline entries")


def cmd_verify(args: argparse.Namespace) -> int:
    from .progress import Progress
    from .verify import verify

    with _bus(args) as bus, Progress("verify", enabled=not args.json) as progress:
        from .bootstrap import store_of

        report = verify(store_of(bus).app, bus.services.read_model, on_progress=progress.update)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(_shown(report.text()))
    return EXIT_OK if report.ok else EXIT_DIFFERENT


def cmd_import_legacy(args: argparse.Namespace) -> int:
    from .legacy import import_legacy
    from .progress import Progress

    if not Path(args.file).exists():  # an input file named on the command line: exit 2, as everywhere
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), args.file)
    with _bus(args) as bus, Progress("import", enabled=not args.json) as progress:
        report = import_legacy(bus, Path(args.file), default_model=args.model, on_progress=progress.update)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(_shown(report.text()))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from .http import serve

    return serve(args, settings_for(args))


def cmd_inspect(args: argparse.Namespace) -> int:
    from .cli_inspect import cmd_inspect as inspect

    return inspect(args)


def cmd_resummarize(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with _bus(args) as bus:
        # (``--summarizer``, a global option, picks the summarizer through the settings)
        result = bus.dispatch(c.Resummarize(session_id=args.session, checkpoint_id=args.checkpoint,
                                            model=args.model))
    lg = result.ledger
    text = "\n".join([
        f"== committed summary of {result.checkpoint_id} ==",
        result.committed_summary,
        "",
        f"== resummarized ({result.summarizer}, {result.model}, {result.tokens:,} tokens; nothing stored) ==",
        result.summary,
        "",
        f"ledger: {lg['items_total']:,} items, {lg['in_summary']:,} in summary, "
        f"{lg['restored']:,} restored, {lg['dropped']:,} dropped",
    ])
    return _emit(args, result, text)


def cmd_events(args: argparse.Namespace) -> int:
    """The event feed as JSON lines; ``--follow`` polls for more until interrupted."""
    from context_compaction.application.contracts import commands as c

    after, left = args.after, args.limit  # --limit: events in all (None: every one)
    try:
        with _bus(args) as bus:
            while left is None or left > 0:
                size = READ_EVENTS_PAGE if left is None else min(left, READ_EVENTS_PAGE)
                page = bus.dispatch(c.ReadEvents(after=after, limit=size))
                events = page.events
                for event in events:
                    print(json.dumps(event.model_dump(mode="json"), ensure_ascii=False))
                if events:
                    after = events[-1].position
                    left = None if left is None else left - len(events)
                    sys.stdout.flush()
                    if page.more:
                        continue  # (stopped at its count or bytes: more may be waiting, no sleep)
                if not args.follow:
                    return EXIT_OK
                time.sleep(args.interval)
            return EXIT_OK
    except KeyboardInterrupt:  # how a follower is stopped: not a failure
        return EXIT_OK


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
    "sessions": cmd_sessions,
    "history": cmd_history,
    "info": cmd_info,
    "compact": cmd_compact,
    "checkpoints": cmd_checkpoints,
    "projection": cmd_projection,
    "replay": cmd_replay,
    "timeline": cmd_timeline,
    "verify": cmd_verify,
    "import-legacy": cmd_import_legacy,
    "serve": cmd_serve,
    "resummarize": cmd_resummarize,
    "events": cmd_events,
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
            print(_shown(f"cause: {cause}"), file=sys.stderr)  # (before: the error stays the last line)
        print(_shown(f"error: {exc.code}: {exc.message}"), file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, USAGE_ERRORS) else EXIT_FAILED
    except UsageError as exc:
        print(_shown(f"error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a file named on the command line
        where = f"{exc.filename}: " if exc.filename else ""
        print(_shown(f"error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - one line for an operator, the traceback with -v
        print(_shown(f"error: internal_error: unexpected {type(exc).__name__}: {_first_line(exc)}"),
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
