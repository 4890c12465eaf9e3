"""context-compaction: event-sourced LLM session history and deterministic context compaction.

    from context_compaction import Settings, bootstrap, commands

    bus = bootstrap(Settings(database_url="sqlite:///ctx.db"))
    bus.dispatch(commands.StartSession(session_id="s1", model="gpt-4o"))
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from context_compaction.application.contracts import commands, results
from context_compaction.application.runtime.bus import MessageBus
from context_compaction.application.agent.recall import RECALL_HISTORY_TOOL, run_recall
from context_compaction.application.contracts.settings import (
    CompactionConfig,
    ModelConfig,
    Settings,
    UnknownSettingWarning,
)
from context_compaction.domain.errors import ContextCompactionError, SessionExists
from context_compaction.infrastructure.bootstrap import bootstrap

if TYPE_CHECKING:
    from context_compaction.application.agent.runner import TurnRunner

logging.getLogger("context_compaction").addHandler(logging.NullHandler())

__all__ = [
    "RECALL_HISTORY_TOOL",
    "CompactionConfig",
    "ContextCompactionError",
    "MessageBus",
    "ModelConfig",
    "SessionExists",
    "Settings",
    "TurnRunner",
    "UnknownSettingWarning",
    "bootstrap",
    "commands",
    "results",
    "run_recall",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The runner loads the turn and compaction code: only a host that uses it pays
    # for that at import (ADR 0016). Its module path moved in issue 38 (ADR 0078);
    # ``context_compaction.TurnRunner`` is the name that stays.
    if name == "TurnRunner":
        from context_compaction.application.agent.runner import TurnRunner

        return TurnRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
