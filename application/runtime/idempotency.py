"""One rule for every command a host makes idempotent with a ``command_id``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from context_compaction.domain.errors import InvalidCommand, SessionExists

log = logging.getLogger("context_compaction.sessions")
R = TypeVar("R")


def first_result(command_id: str | None, answered: Callable[[], R | None], run: Callable[[], R]) -> R:
    """The one rule for every command made idempotent by a host ``command_id`` (issue 36,
    ADR 0071): what the id already answered is the answer; else the command runs; and
    when it is refused (a retry released together with the first call loses the race,
    then finds the session already changed: a revert's checkpoint no longer active, a
    session already started), the id is asked again, so the first call's result wins
    over the refusal. ``answered`` raises ``IdempotencyConflict`` when the id was used
    for something else."""
    if command_id is None:
        return run()
    earlier = answered()
    if earlier is not None:
        return earlier
    try:
        return run()
    except (InvalidCommand, SessionExists):  # (refusals; a conflict or a storage error stands)
        earlier = answered()
        if earlier is None:
            raise
        log.info("a concurrent retry answered the first result", extra={"command_id": command_id})
        return earlier
