"""``ctxc fork`` and ``ctxc sessions --tree`` (issue 42): their options and what they
run; cli.py and cli_parser.py only register them."""

from __future__ import annotations

import argparse
from typing import Any

from .cli_common import emit, open_bus


def add_parsers(add: Any) -> None:
    p = add("fork", "fork a session: a new session born as this one is now, at a version or right "
                    "after a seq; its history is read from the parent (nothing is copied)",
            session=True, read_only=True)
    p.add_argument("new_session", help="the new session's id")
    at = p.add_mutually_exclusive_group()
    at.add_argument("--at-version", type=int, metavar="VERSION", help="the parent's version to fork at")
    at.add_argument("--at-seq", type=int, metavar="SEQ", help="fork right after this seq was appended")


def cmd_fork(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.ForkSession(session_id=args.session, new_session_id=args.new_session,
                                            at_version=args.at_version, at_seq=args.at_seq))
    text = (f"{result.session_id}: forked from {result.parent_session_id} at version {result.fork_version} "
            f"(seq {result.fork_seq}); checkpoint {result.active_checkpoint_id or '-'}, next seq {result.next_seq}")
    return emit(args, result, text)


def cmd_sessions_tree(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.ListSessions(limit=args.limit, offset=args.offset, tree=True))
    lines: list[str] = []

    def walk(nodes: Any, depth: int) -> None:
        for node in nodes:
            s = node.session
            lines.append(f"{'  ' * depth}{'└ ' if depth else ''}{s.session_id}  {s.model}  "
                         f"{s.message_count} messages  gen {s.context_generation}"
                         f"{'  deleted' if s.deleted else ''}")
            walk(node.children, depth + 1)

    walk(result.tree or [], 0)
    return emit(args, result, "\n".join(lines) if lines else "no sessions")
