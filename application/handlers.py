"""The handler registry: one dict, command type → handler (ADR 0024).

Derived from the commands' declarations (``handled_by``, issue 38). Every handler is
imported when its command first runs: `ctxc` commands that never compact or build a
turn start without that code (ADR 0016).
"""

from __future__ import annotations

import importlib
from typing import Any

from context_compaction.domain.errors import StorageError

from .contracts import commands as c
from .runtime.bus import Handler
from .runtime.services import Services


def _on_first_use(module: str, name: str) -> Handler:
    """The handler ``context_compaction.application.<room>.<module>.<name>``, imported when it
    first runs."""
    target: Handler | None = None

    def handler(command: Any, services: Services) -> Any:
        nonlocal target
        if target is None:
            target = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return target(command, services)

    handler.__qualname__ = handler.__name__ = name
    return handler


#: Command type → handler, from the commands' own declarations (``handled_by`` in
#: ``contracts/commands/``, issue 38): each handler's module is imported when the
#: command first runs, so a ``ctxc`` command loads only its own code (ADR 0016).
HANDLERS: dict[type[c.Command[Any]], Handler] = {
    kind: _on_first_use(route.module, route.function) for kind, route in c.ROUTES.items()
}


#: The commands that only read: a store opened by a role or file that cannot write
#: serves these and refuses the rest (issue 36, ADR 0071).
READS: frozenset[type[c.Command[Any]]] = frozenset(
    kind for kind, route in c.ROUTES.items() if route.reads
)


def read_only_handlers(reason: str) -> dict[type[c.Command[Any]], Handler]:
    """HANDLERS with every command that writes refused before it runs: a clear
    ``storage_error`` (``details.cause``: ``read_only``), not the driver's refusal."""

    def refuse(command: Any, services: Services) -> Any:
        raise StorageError(
            f"the database is open read-only ({reason}): {command.type} writes; only queries run",
            details={"cause": "read_only", "read_only": reason},
        )

    return {kind: handler if kind in READS else refuse for kind, handler in HANDLERS.items()}
