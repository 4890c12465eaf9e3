"""The circuit breaker of automatic compaction (issue 17): a function of the attempt log.

After ``max_consecutive_failures`` failed automatic summary attempts in a row, automatic
summaries pause for ``breaker_pause_turns`` turns; the degraded trim still protects the
hard window, manual ``compact`` still runs, and any committed compaction closes the
breaker. It is read from the session's attempt log (issue 16), so every process serving
the session sees the same state; it is read only when the trigger fires, and by /info.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from context_compaction.domain.attempts import FAILURES, Breaker, breaker
from context_compaction.domain.errors import StorageError
from context_compaction.domain.messages import MessageRecord

from ..contracts.ports import AttemptLog
from ..runtime.services import Services

log = logging.getLogger("context_compaction.compaction")


def _streak(attempts: AttemptLog, session_id: str) -> tuple[int, int | None]:
    """(automatic failures since the last committed compaction, the newest one's seq).

    A log that keeps the count (ours: the aggregate's state) answers it in one read
    whatever the session's age; a host's own log is read attempt by attempt."""
    streak = getattr(attempts, "streak", None)
    if streak is not None:
        failures, seq = streak(session_id)
        return int(failures), seq
    failures, last_failure_seq = 0, None
    for attempt in attempts.attempts(session_id):  # newest first
        if attempt.outcome == "compacted":
            break
        if attempt.outcome in FAILURES and attempt.reason == "auto":
            failures += 1
            if last_failure_seq is None:
                last_failure_seq = attempt.at_seq
    return failures, last_failure_seq


def breaker_state(svc: Services, session_id: str, records: Sequence[MessageRecord]) -> Breaker:
    """The breaker of ``session_id`` now; ``records`` are the session's recent messages
    (turns since the last failure are counted over them)."""
    cc = svc.settings.context_compaction
    if svc.attempts is None or cc.max_consecutive_failures <= 0:
        return Breaker(False, 0)
    try:
        failures, last_failure_seq = _streak(svc.attempts, session_id)
    except StorageError as exc:  # the log is advice: an unreadable one pauses nothing
        log.warning("attempt log not read", extra={"session_id": session_id, "error_class": exc.code})
        return Breaker(False, 0)
    # The failed attempt ran at the start of its turn (``at_seq`` includes that turn's
    # first message): the turn that starts next is the pause's first.
    if failures < cc.max_consecutive_failures:  # closed: no need to count turns
        return Breaker(False, failures)
    turns = max(_turns_after(records, last_failure_seq or 0) - 1, 0)
    return breaker(
        failures, turns, max_failures=cc.max_consecutive_failures, pause_turns=cc.breaker_pause_turns
    )


def paused(svc: Services, session_id: str, records: Sequence[MessageRecord]) -> Breaker | None:
    """The open breaker that pauses automatic summaries now (logged once per pause), or None."""
    state = breaker_state(svc, session_id, records)
    if not state.open:
        return None
    key = (session_id, state.failures_in_a_row)
    with svc.turns.lock:
        first = key not in svc.turns.breaker_logged
        svc.turns.breaker_logged.add(key)
    if first:
        log.warning(
            "auto compaction paused after repeated failures",
            extra={"session_id": session_id, "failures_in_a_row": state.failures_in_a_row,
                   "turns_left": state.turns_left},
        )
    return state


def _turns_after(records: Sequence[MessageRecord], seq: int) -> int:
    """How many turns started after ``seq`` (a turn id's first message, or a user
    message that is not steering when messages carry no turn ids)."""
    seen: set[str] = set()
    turns = 0
    for m in reversed(records):  # newest first: only the messages after ``seq`` are read
        if m["seq"] <= seq:
            # The failed turn goes on after its attempt (its reply carries its turn id):
            # that turn started before ``seq``, so it is not one of the turns after it.
            if m.get("turn_id") in seen:
                turns -= 1
            break
        turn_id = m.get("turn_id")
        if turn_id:
            if turn_id not in seen:
                seen.add(turn_id)
                turns += 1
        elif m["role"] == "user" and not m.get("steering"):
            turns += 1
    return turns
