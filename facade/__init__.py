"""context-compaction: event-sourced LLM session history and deterministic context compaction.

    from context_compaction import Settings, bootstrap, commands

    bus = bootstrap(Settings(database_url="sqlite:///ctx.db"))
    bus.dispatch(commands.StartSession(session_id="s1", model="gpt-4o"))
"""

from __future__ import annotations

import logging

from context_compaction.application.contracts import commands, results
from context_compaction.application.runtime.bus import MessageBus
from context_compaction.application.agent.recall import RECALL_HISTORY_TOOL, run_recall
from context_compaction.application.contracts.settings import CompactionConfig, ModelConfig, Settings
from context_compaction.domain.errors import ContextCompactionError, SessionExists
from context_compaction.infrastructure.bootstrap import bootstrap

logging.getLogger("context_compaction").addHandler(logging.NullHandler())

__all__ = [
    "RECALL_HISTORY_TOOL",
    "CompactionConfig",
    "ContextCompactionError",
    "MessageBus",
    "ModelConfig",
    "SessionExists",
    "Settings",
    "bootstrap",
    "commands",
    "results",
    "run_recall",
]
__version__ = "0.1.0"
