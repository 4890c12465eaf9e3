"""``ctxc``'s reading subcommands: sessions, history, info, checkpoints, projection,
replay, timeline, resummarize (which stores nothing) and events; each shows a query's
answer as a table or text (``--json``: the answer itself)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .cli_common import EXIT_OK, chars, emit, open_bus, preview, table

READ_EVENTS_PAGE = 1000  # read_events' own bound


def cmd_sessions(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    if getattr(args, "tree", False):  # (issue 42)
        from .cli_tree import cmd_sessions_tree

        return cmd_sessions_tree(args)
    with open_bus(args) as bus:
        result = bus.dispatch(c.ListSessions(limit=args.limit, offset=args.offset))
    rows = [
        [s.session_id, s.model, s.message_count, s.invalidated_count, s.context_generation,
         s.active_checkpoint_id or "-", "deleted" if s.deleted else "", s.updated_at[:19]]
        for s in result.sessions
    ]
    text = table(rows, ["session", "model", "messages", "hidden", "gen", "checkpoint", "state", "updated"])
    return emit(args, result, text if rows else "no sessions")


def cmd_history(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.GetHistory(session_id=args.session, include_invalidated=args.all,
                                           include_deleted=args.include_deleted))
    rows = []
    for m in result.messages:
        calls = ",".join(call.function.name for call in m.tool_calls)
        rows.append([
            m.seq, m.role + (" (steer)" if m.steering else ""), m.turn_id or "",
            calls or (m.tool_call_id or ""), chars(m.content),
            "hidden" if m.invalidated else "", preview(m.content),
        ])
    text = table(rows, ["seq", "role", "turn", "tools", "chars", "state", "content"])
    return emit(args, result, text if rows else "no messages")


def cmd_info(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    system = Path(args.system_prompt_file).read_text(encoding="utf-8") if args.system_prompt_file else args.system_prompt
    with open_bus(args) as bus:
        result = bus.dispatch(c.GetContextUsage(session_id=args.session, system_prompt=system, model=args.model))
    return emit(args, result, f"{args.session} ({result.model})\n{result.text}")


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.ListCheckpoints(session_id=args.session,
                                                 include_deleted=args.include_deleted))
    rows = [
        [cp.generation, cp.checkpoint_id, cp.trigger_reason, cp.provider_kind,
         f"{cp.tokens_before:,} -> {cp.tokens_after:,}", cp.first_retained_seq,
         ", ".join(s for s, on in (("active", cp.active), ("degraded", cp.degraded)) if on), cp.created_at[:19]]
        for cp in result.checkpoints
    ]
    text = table(rows, ["gen", "checkpoint", "reason", "summarizer", "tokens", "first seq", "state", "created"])
    return emit(args, result, text if rows else "no checkpoints")


def _projection_text(projection: Any) -> str:
    rows = [[i, m["role"], chars(m.get("content")), ",".join(t["function"]["name"] for t in m.get("tool_calls") or []),
             preview(m.get("content"))] for i, m in enumerate(projection.messages)]
    head = (f"checkpoint {projection.checkpoint_id or '-'}, generation {projection.context_generation}, "
            f"raw seqs {projection.first_raw_seq or '-'}..{projection.max_raw_seq}, version {projection.version}")
    notes = "".join(f"\nnote: {d}" for d in projection.diagnostics)
    return head + notes + "\n" + table(rows, ["#", "role", "chars", "tool calls", "content"])


def cmd_projection(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.GetProjection(session_id=args.session, model=args.model))
    return emit(args, result, _projection_text(result))


def cmd_replay(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.ReplaySession(session_id=args.session, at_version=args.at_version,
                                              include_deleted=args.include_deleted))
    head = (f"{args.session} as of version {result.version}: model {result.model}, next seq {result.next_seq}"
            f"{', deleted' if result.deleted else ''}")
    return emit(args, result, head + "\n" + _projection_text(result.projection))


def cmd_timeline(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.RecallTimeline(session_id=args.session, query=args.query, limit=args.limit))
    blocks = [f"{e.key}  ({e.created_at[:19]})\n{e.content}" for e in result.entries]
    return emit(args, result, "\n\n".join(blocks) if blocks else "no timeline entries")


def cmd_resummarize(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
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
        f"{lg['restored']:,} restored, {lg['dropped']:,} dropped"
        + (f" ({lg['dropped_before']:,} of them listed by an earlier checkpoint)" if lg.get("dropped_before") else ""),
    ])
    return emit(args, result, text)


def cmd_events(args: argparse.Namespace) -> int:
    """The event feed as JSON lines; ``--follow`` polls for more until interrupted."""
    from context_compaction.application.contracts import commands as c

    after, left = args.after, args.limit  # --limit: events in all (None: every one)
    stop = _Interrupted()
    try:
        with open_bus(args) as bus, stop:
            while (left is None or left > 0) and not stop.asked:
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
    except KeyboardInterrupt:  # (before the handler is in place, or after it is gone)
        return EXIT_OK


class _Interrupted:
    """Ctrl-C asks a follower to stop between polls, within one interval: never inside a
    read, where a KeyboardInterrupt would break off a database call or a page half
    printed. (It once also left the bus counting a command that never ended, and its
    close waiting the summary timeout; ``Running.around`` now counts inside its ``try``.)"""

    def __init__(self) -> None:
        self.asked = False
        self._previous: Any = None

    def __enter__(self) -> _Interrupted:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._ask)
        return self

    def _ask(self, signum: int, frame: Any) -> None:
        self.asked = True

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            import signal

            signal.signal(signal.SIGINT, self._previous)
