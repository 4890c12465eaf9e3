"""The handler registry: one dict, command type → handler (ADR 0024).

The raw-log commands and history queries are imported with the bus. Compaction, turn
and usage handlers are imported when they first run: `ctxc` commands that never
compact or build a turn start without that code (ADR 0016).
"""

from __future__ import annotations

import importlib
from typing import Any

from context_compaction.domain.errors import StorageError

from . import commands as c
from . import queries, sessions
from .bus import Handler
from .services import Services


def _on_first_use(module: str, name: str) -> Handler:
    """The handler ``context_compaction.application.<module>.<name>``, imported when it
    first runs."""
    target: Handler | None = None

    def handler(command: Any, services: Services) -> Any:
        nonlocal target
        if target is None:
            target = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return target(command, services)

    handler.__qualname__ = handler.__name__ = name
    return handler


HANDLERS: dict[type[c.Command[Any]], Handler] = {
    c.StartSession: sessions.start_session,
    c.ConfigureSession: sessions.configure_session,
    c.AppendMessages: sessions.append_messages,
    c.InvalidateHistory: sessions.invalidate_history,
    c.DeleteSession: sessions.delete_session,
    c.PurgeSession: sessions.purge_session,
    c.PinMessages: sessions.pin_messages,
    c.UnpinMessages: sessions.unpin_messages,
    c.RevertCheckpoint: sessions.revert_checkpoint,
    c.GetHistory: queries.get_history,
    c.GetProjection: queries.get_projection,
    c.SearchHistory: queries.search_history,
    c.ReplaySession: queries.replay_session,
    c.ReplayState: queries.replay_state,
    c.ListCheckpoints: queries.list_checkpoints,
    c.ListSessions: queries.list_sessions,
    c.Compact: _on_first_use("candidates", "compact"),
    c.CommitCandidate: _on_first_use("candidates", "commit_prepared"),
    c.GetSessionCost: _on_first_use("costs", "get_session_cost"),
    c.RecallTimeline: _on_first_use("compaction", "recall_timeline"),
    c.GetContextUsage: _on_first_use("usage", "get_context_usage"),
    c.PrepareTurn: _on_first_use("turns", "prepare_turn"),
    c.RecordUsage: _on_first_use("turns", "record_usage"),
    c.RecoverOverflow: _on_first_use("recovery", "recover_overflow"),
    c.ListCompactionAttempts: _on_first_use("attemptlog", "list_compaction_attempts"),
    c.Resummarize: _on_first_use("resummarize", "resummarize"),
    c.ReadEvents: _on_first_use("feed", "read_events"),
    c.ReadSessionEvents: _on_first_use("feed", "read_session_events"),
    c.ForkSession: _on_first_use("forks", "fork_session"),  # issue 42
    c.CompleteSubagent: _on_first_use("subagents", "complete_subagent"),  # issue 42
}


#: The commands that only read: a store opened by a role or file that cannot write
#: serves these and refuses the rest (issue 36, ADR 0071).
READS: frozenset[type[c.Command[Any]]] = frozenset({
    c.GetHistory, c.GetProjection, c.SearchHistory, c.ReplaySession, c.ListCheckpoints,
    c.ListSessions, c.RecallTimeline, c.GetContextUsage, c.ListCompactionAttempts, c.ReadEvents,
})


def read_only_handlers(reason: str) -> dict[type[c.Command[Any]], Handler]:
    """HANDLERS with every command that writes refused before it runs: a clear
    ``storage_error`` (``details.cause``: ``read_only``), not the driver's refusal."""

    def refuse(command: Any, services: Services) -> Any:
        raise StorageError(
            f"the database is open read-only ({reason}): {command.type} writes; only queries run",
            details={"cause": "read_only", "read_only": reason},
        )

    return {kind: handler if kind in READS else refuse for kind, handler in HANDLERS.items()}
