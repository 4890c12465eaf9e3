"""Progress on stderr for commands that take a while: rich's progress display (a spinner,
the elapsed time, and a bar where the amount of work is known). Drawn only on a terminal:
rich leaves a pipe or a file alone and honours NO_COLOR and TERM=dumb; transient, so
nothing of it stays on the screen. Drawn only where stderr really is a terminal:
rich's own test also takes ``FORCE_COLOR``/``TTY_COMPATIBLE`` (set in many CI jobs)
for one, which would draw the spinner into a pipe or a log file."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as _Display


class Progress:
    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True, counts: bool = True) -> None:
        console = Console(stderr=True)
        isatty = getattr(sys.stderr, "isatty", None)
        self.enabled = enabled and bool(isatty and isatty()) and console.is_interactive
        # markup=False: the label holds stored text (a session id "a[/b]" would be
        # rich markup, and a MarkupError on a terminal)
        columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}", markup=False)]
        if counts:
            columns += [BarColumn(), MofNCompleteColumn()]
        self._display = _Display(*columns, TimeElapsedColumn(), console=console, transient=True,
                                 disable=not self.enabled)
        self._task = self._display.add_task(label, total=total)
        self.done = 0

    def __enter__(self) -> Progress:
        self._display.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._display.stop()

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        self._display.update(self._task, completed=done, total=total)  # (None: unchanged)

    def advance(self, step: int = 1) -> None:
        self.update(self.done + step)

    def print(self, line: str) -> None:
        """A line of output (stdout) above the display, which rich redraws below it."""
        print(line, flush=True)
