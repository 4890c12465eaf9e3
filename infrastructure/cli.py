"""``ctxc``: the command-line interface.

Imports are lazy so that commands which never call a model start fast (no litellm).

Exit codes:
  0  success
  1  the command failed; its contract error code is printed (``error: <code>: <message>``)
  2  usage error (unknown command or option)
  3  ``verify`` found a difference between the read model and the events, or a damaged event
  4  unexpected internal error
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DIFFERENT, EXIT_INTERNAL = 0, 1, 2, 3, 4


# ------------------------------------------------------------------ helpers
def _database_url(value: str | None) -> str:
    value = value or os.environ.get("CTXC_DATABASE_URL") or "ctxc.db"
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).resolve()}"


def _settings(args: argparse.Namespace, **extra: Any) -> Any:
    from context_compaction.application.settings import Settings

    overrides = {"database_url": _database_url(args.db), **extra}
    if getattr(args, "log_json", False):
        overrides["log_json"] = True
    if getattr(args, "config", None):
        return Settings.from_file(args.config, **overrides)
    return Settings(**overrides)


def _bus(args: argparse.Namespace, **extra: Any) -> Any:
    from .bootstrap import bootstrap
    from .logs import configure_logging

    settings = _settings(args, **extra)
    configure_logging(json_lines=settings.log_json, verbose=getattr(args, "verbose", False))
    return bootstrap(settings)


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
    cells = [[str(c) for c in header]] + [["" if c is None else _shown(str(c)) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


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
    """JSON lines in (stdin), one envelope per line out (stdout)."""
    bus = _bus(args)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            envelope = bus.dispatch_json(line)
            sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    finally:
        bus.close()
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .progress import Progress

    with Progress("demo", total=args.turns, enabled=not args.json) as progress:
        facts = run_demo(Path(args.workdir), turns=args.turns, out=progress.print, on_turn=progress.advance)
    if args.json:
        print(json.dumps({k: v for k, v in facts.items() if k not in ("info", "replay")}, indent=2, default=str))
    return EXIT_OK


def cmd_sessions(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.ListSessions(limit=args.limit, offset=args.offset))
    rows = [
        [s.session_id, s.model, s.message_count, s.invalidated_count, s.context_generation,
         s.active_checkpoint_id or "-", "deleted" if s.deleted else "", s.updated_at[:19]]
        for s in result.sessions
    ]
    text = _table(rows, ["session", "model", "messages", "hidden", "gen", "checkpoint", "", "updated"])
    return _emit(args, result, text if rows else "no sessions")


def cmd_history(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.GetHistory(session_id=args.session, include_invalidated=args.all))
    rows = []
    for m in result.messages:
        calls = ",".join(call["function"]["name"] for call in m.get("tool_calls") or [])
        rows.append([
            m["seq"], m["role"] + (" (steer)" if m.get("steering") else ""), m.get("turn_id") or "",
            calls or (m.get("tool_call_id") or ""), _chars(m.get("content")),
            "hidden" if m.get("invalidated") else "", _preview(m.get("content")),
        ])
    text = _table(rows, ["seq", "role", "turn", "tools", "chars", "", "content"])
    return _emit(args, result, text if rows else "no messages")


def cmd_info(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    system = Path(args.system_prompt_file).read_text(encoding="utf-8") if args.system_prompt_file else args.system_prompt
    with _bus(args) as bus:
        result = bus.dispatch(c.GetContextUsage(session_id=args.session, system_prompt=system, model=args.model))
    return _emit(args, result, f"{args.session} ({result.model})\n{result.text}")


def cmd_compact(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.Compact(session_id=args.session, model=args.model))
    return _emit(args, result, result.report)


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.ListCheckpoints(session_id=args.session))
    rows = [
        [cp["generation"], cp["checkpoint_id"], cp["trigger_reason"], cp["provider_kind"],
         f"{cp['tokens_before']:,} -> {cp['tokens_after']:,}", cp["first_retained_seq"],
         "degraded" if cp["degraded"] else "", "active" if cp["active"] else "", cp["created_at"][:19]]
        for cp in result.checkpoints
    ]
    text = _table(rows, ["gen", "checkpoint", "reason", "summarizer", "tokens", "first seq", "", "", "created"])
    return _emit(args, result, text if rows else "no checkpoints")


def _projection_text(projection: Any) -> str:
    rows = [[i, m["role"], _chars(m.get("content")), ",".join(t["function"]["name"] for t in m.get("tool_calls") or []),
             _preview(m.get("content"))] for i, m in enumerate(projection.messages)]
    head = (f"checkpoint {projection.checkpoint_id or '-'}, generation {projection.context_generation}, "
            f"raw seqs {projection.first_raw_seq or '-'}..{projection.max_raw_seq}, version {projection.version}")
    notes = "".join(f"\nnote: {d}" for d in projection.diagnostics)
    return head + notes + "\n" + _table(rows, ["#", "role", "chars", "tool calls", "content"])


def cmd_projection(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.GetProjection(session_id=args.session, model=args.model))
    return _emit(args, result, _projection_text(result))


def cmd_replay(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.ReplaySession(session_id=args.session, at_version=args.at_version))
    head = (f"{args.session} as of version {result.version}: model {result.model}, next seq {result.next_seq}"
            f"{', deleted' if result.deleted else ''}")
    return _emit(args, result, head + "\n" + _projection_text(result.projection))


def cmd_timeline(args: argparse.Namespace) -> int:
    from context_compaction.application import commands as c

    with _bus(args) as bus:
        result = bus.dispatch(c.RecallTimeline(session_id=args.session, query=args.query, limit=args.limit))
    blocks = [f"{e['key']}  ({e['created_at'][:19]})\n{e['content']}" for e in result.entries]
    return _emit(args, result, "\n\n".join(blocks) if blocks else "no timeline entries")


def cmd_verify(args: argparse.Namespace) -> int:
    from .progress import Progress
    from .verify import verify

    with _bus(args) as bus, Progress("verify", enabled=not args.json) as progress:
        report = verify(bus.services.extra["app"], bus.services.read_model, on_progress=progress.update)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(_shown(report.text()))
    return EXIT_OK if report.ok else EXIT_DIFFERENT


def cmd_import_legacy(args: argparse.Namespace) -> int:
    from .legacy import import_legacy
    from .progress import Progress

    with _bus(args) as bus, Progress("import", enabled=not args.json) as progress:
        report = import_legacy(bus, Path(args.file), default_model=args.model, on_progress=progress.update)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(_shown(report.text()))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from .http import serve

    return serve(args, _settings(args))


# ------------------------------------------------------------------- parser
def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxc",
        description="Event-sourced LLM session history and context compaction.",
        epilog="Exit codes: 0 ok, 1 command failed (error code printed), 2 usage, "
               "3 verify found a difference or a damaged event, 4 internal error.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="SQLite file or database URL (default: $CTXC_DATABASE_URL or ./ctxc.db)")
    common.add_argument("--config", help="JSON settings file")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    common.add_argument("--log-json", action="store_true", help="log as JSON lines on stderr")
    common.add_argument("-v", "--verbose", action="store_true", help="log at INFO level on stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Any, help_text: str, session: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        if session:
            p.add_argument("session", help="session id")
        p.set_defaults(func=func)
        return p

    p = add("demo", cmd_demo, "run the offline demo session (no network, no API key)")
    p.add_argument("--workdir", default="ctxc-demo", help="folder for the demo database (recreated)")
    p.add_argument("--turns", type=int, default=12, help="turns in the scripted session")
    add("dispatch", cmd_dispatch, "JSON commands on stdin, one envelope per line on stdout")
    p = add("sessions", cmd_sessions, "list sessions")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--offset", type=int, default=0)
    p = add("history", cmd_history, "the raw message log of a session", session=True)
    p.add_argument("--all", action="store_true", help="include invalidated (hidden) messages")
    p = add("info", cmd_info, "context usage of a session (/info)", session=True)
    p.add_argument("--model", help="budget for this model instead of the session's")
    p.add_argument("--system-prompt", help="count this system prompt too")
    p.add_argument("--system-prompt-file", help="count the system prompt in this file too")
    p = add("compact", cmd_compact, "compact a session now (manual /compact)", session=True)
    p.add_argument("--model", help="summarize with this model instead of the session's")
    add("checkpoints", cmd_checkpoints, "the checkpoints of a session", session=True)
    p = add("projection", cmd_projection, "the history part of the next request", session=True)
    p.add_argument("--model", help="project for this model (provider-private state replay)")
    p = add("replay", cmd_replay, "state and projection of a session as of a past version", session=True)
    p.add_argument("--at-version", type=int, required=True, help="aggregate version to replay to")
    p = add("timeline", cmd_timeline, "Timeline entries (checkpoint summaries) of a session", session=True)
    p.add_argument("query", nargs="?", help="text to look for")
    p.add_argument("--limit", type=int, default=20)
    add("verify", cmd_verify, "rebuild the read model from the events in a scratch database and compare")
    p = add("import-legacy", cmd_import_legacy, "import sessions from a legacy PicoBot SQLite file")
    p.add_argument("file", help="the legacy SQLite file")
    p.add_argument("--model", default="gpt-4o", help="model for sessions whose row names none")
    p = add("serve", cmd_serve, "HTTP endpoint POST /v1/commands (needs the [http] extra)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--token", help="bearer token (default: $CTXC_HTTP_TOKEN)")
    p.add_argument("--insecure-local", action="store_true", help="allow no token when bound to loopback")
    p.add_argument("--max-body-bytes", type=int, default=None, help="request size limit (default: settings)")
    p.add_argument("--max-connections", type=_positive_int, default=256,
                   help="open connections at most; the longest-waiting idle one is closed for a new one")
    p.add_argument("--request-timeout", type=_positive_float, default=10.0,
                   help="seconds for a request (headers and body) to arrive")
    p.add_argument("--idle-timeout", type=_positive_int, default=5,
                   help="seconds an idle keep-alive connection stays open")
    p.add_argument("--public-docs", action="store_true",
                   help="serve /docs and /openapi.json without the token")
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    from context_compaction.domain.errors import ContextCompactionError

    try:
        return int(args.func(args))
    except ContextCompactionError as exc:
        if args.json:
            print(json.dumps({"ok": False, "error": exc.to_dict()}))
        print(_shown(f"error: {exc.code}: {exc.message}"), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - one line for an operator, details with -v
        print(f"error: internal_error: unexpected {type(exc).__name__}", file=sys.stderr)
        if getattr(args, "verbose", False):
            raise
        return EXIT_INTERNAL


def run() -> None:
    """The ``ctxc`` console script: ``main``, then exit without interpreter teardown.

    By the time ``main`` returns every command has closed its bus (and so its database
    connections) and no thread of ours runs; tearing down the modules pydantic and
    eventsourcing loaded would only add ~0.1 s to every command (ADR 0016).
    """
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
