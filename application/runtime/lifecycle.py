"""The running commands of a bus (issue 38): ``close`` lets them finish first.

Commands run in any thread (``dispatch``, ``adispatch``'s command threads); closing the
bus refuses new ones and waits for the running ones before the store closes under them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from context_compaction.domain.errors import InvalidCommand


class Running:
    """How many commands run now, and whether the bus still takes new ones."""

    def __init__(self) -> None:
        self.closed = False
        self._count = 0
        self._idle = threading.Condition()

    def around(self, command: Any, call: Callable[[Any], Any]) -> Any:
        """A wrapper of the bus: one command's run, refused once the bus is closed."""
        with self._idle:
            if self.closed:
                raise InvalidCommand("the bus is closed")
            self._count += 1
        try:
            return call(command)
        finally:
            with self._idle:
                self._count -= 1
                self._idle.notify_all()

    def close(self, timeout: float, then: Callable[[], None] | None) -> None:
        """Refuse new commands, wait up to ``timeout`` for the running ones, then ``then``
        (once: a second close does nothing)."""
        with self._idle:
            if self.closed:
                return
            self.closed = True
            self._idle.wait_for(lambda: self._count == 0, timeout=timeout)
        if then is not None:
            then()
