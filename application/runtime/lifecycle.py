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
        self._running: set[object] = set()
        self._idle = threading.Condition()

    def around(self, command: Any, call: Callable[[Any], Any]) -> Any:
        """A wrapper of the bus: one command's run, refused once the bus is closed.

        A KeyboardInterrupt lands between any two bytecodes: a count raised before the
        ``try`` (or a flag set after it) leaves a window where the command stays counted
        and ``close`` waits the summary timeout for it. A token added and discarded in
        one C call each, both inside the ``try``, has none."""
        token = object()
        try:
            with self._idle:
                if self.closed:
                    raise InvalidCommand("the bus is closed")
                self._running.add(token)
            return call(command)
        finally:
            self._running.discard(token)  # (first: an interrupt in the lock finds it gone)
            with self._idle:
                self._idle.notify_all()

    def close(self, timeout: float, then: Callable[[], None] | None) -> None:
        """Refuse new commands, wait up to ``timeout`` for the running ones, then ``then``
        (once: a second close does nothing)."""
        with self._idle:
            if self.closed:
                return
            self.closed = True
            self._idle.wait_for(lambda: not self._running, timeout=timeout)
        if then is not None:
            then()
