"""``ctxc``: the command-line interface.

Imports are lazy so that commands which never call a model start fast (no litellm).
Exit codes: 0 success, 1 a command failed (its error code is printed), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def _database_url(value: str | None) -> str:
    value = value or os.environ.get("CTXC_DATABASE_URL") or "ctxc.db"
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).resolve()}"


def _settings(args: argparse.Namespace) -> Any:
    from context_compaction.application.settings import Settings

    overrides = {"database_url": _database_url(args.db)}
    if getattr(args, "config", None):
        return Settings.from_file(args.config, **overrides)
    return Settings(**overrides)


def cmd_dispatch(args: argparse.Namespace) -> int:
    """JSON lines in (stdin), one envelope per line out (stdout)."""
    from .bootstrap import bootstrap

    bus = bootstrap(_settings(args))
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            envelope = bus.dispatch_json(line)
            sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    finally:
        bus.close()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(Path(args.workdir), turns=args.turns)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxc",
        description="Event-sourced LLM session history and context compaction.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        help="SQLite file or database URL (default: $CTXC_DATABASE_URL or ./ctxc.db)",
    )
    common.add_argument("--config", help="JSON settings file (see README, Configuration)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("dispatch", parents=[common], help="JSON commands on stdin, envelopes on stdout")
    p.set_defaults(func=cmd_dispatch)

    p = sub.add_parser("demo", parents=[common], help="run the offline demo session")
    p.add_argument("--workdir", default="ctxc-demo", help="folder for the demo database (recreated)")
    p.add_argument("--turns", type=int, default=12, help="turns in the scripted session")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
