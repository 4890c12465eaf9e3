"""A small progress bar on stderr for commands that can take more than a second.

Drawn only on a terminal, and only once the work has taken longer than a second.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled and sys.stderr.isatty()
        self.started = time.monotonic()
        self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._clear()

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        self._draw()

    def advance(self, step: int = 1) -> None:
        self.update(self.done + step)

    def print(self, line: str) -> None:
        """Print a line of output without tearing the bar."""
        self._clear()
        print(line, flush=True)
        self._draw()

    def _draw(self) -> None:
        if not self.enabled or time.monotonic() - self.started < 1.0:
            return
        if self.total:
            share = min(self.done / self.total, 1.0)
            bar = "#" * int(share * 30)
            text = f"\r[{bar:<30}] {self.label} {share:4.0%} ({self.done:,}/{self.total:,})"
        else:
            text = f"\r{self.label}: {self.done:,}"
        sys.stderr.write(text)
        sys.stderr.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            sys.stderr.write("\r" + " " * 72 + "\r")
            sys.stderr.flush()
            self._drawn = False
