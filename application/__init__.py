"""The application floor, in rooms by job (issue 38, ADR 0078; docs/architecture.md).

``commands`` and ``results`` stay importable from here as before the rooms
(``from context_compaction.application import commands``); new code imports
``context_compaction`` (the facade) or the room's module.
"""

from .contracts import commands, results

__all__ = ["commands", "results"]
