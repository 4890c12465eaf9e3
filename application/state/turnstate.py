"""In-memory state of the turn lifecycle (spec §7.2: no table; a restart estimates afresh).

Prepared requests (for ``record_usage`` / ``recover_overflow``), the measured-usage
calibration per session, the one summary attempt and the one overflow recovery per
turn, and the running turns. (A window learned from an overflow is history, not
memory: ``Session.WindowLearned``.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from context_compaction.domain.errors import TurnInProgress, UnknownRequest

from .background import BackgroundSummaries
from .calibration import CalibrationKey, Calibrations
from .drafts import TurnInputs

MAX_REMEMBERED_REQUESTS = 10_000
#: How many recent provider usages per session the prompt-cache share is taken over.
RECENT_USAGES = 8


@dataclass
class IssuedRequest:
    request_id: str
    session_id: str
    model: str
    inputs: TurnInputs
    key: CalibrationKey
    history_count: int
    history_digest: str | None
    """None when the request was trimmed request-locally: it cannot calibrate."""
    estimate: int
    """Our local estimate of the request (``draft.total``)."""
    turn_key: int
    phase: str = "start"
    """``start`` or ``continuation`` (tools already ran in the turn, spec §11.4)."""
    retry_of: str | None = None
    recovered: bool = False


@dataclass
class TurnMemory:
    """The in-memory state of the turn lifecycle for one process."""

    requests: OrderedDict[str, IssuedRequest] = field(default_factory=OrderedDict)
    calibrations: Calibrations = field(default_factory=Calibrations)
    summary_attempted: dict[str, int] = field(default_factory=dict)
    """session → turn key of the turn whose one summary attempt has been used."""
    overflow_recovered: dict[str, int] = field(default_factory=dict)
    """session → turn key of the turn whose one overflow recovery has been used."""
    active_turns: dict[str, int] = field(default_factory=dict)
    usages: dict[str, deque[tuple[int, int, int]]] = field(default_factory=dict)
    """session → (prompt, cached, cache creation) tokens of its recent requests."""
    breaker_logged: set[tuple[str, int]] = field(default_factory=set)
    """(session, failures in a row) whose pause was logged: once per pause."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    background: BackgroundSummaries = field(default_factory=BackgroundSummaries)
    """The background summaries running in this process (issue 17, ADR 0038)."""

    def record_cache_usage(self, session_id: str, prompt: int, cached: int, created: int) -> None:
        with self.lock:
            self.usages.setdefault(session_id, deque(maxlen=RECENT_USAGES)).append(
                (prompt, cached, created)
            )

    def cache_usage(self, session_id: str) -> tuple[int, int, int, int] | None:
        """(requests, prompt, cached, cache creation) over the recent usages, or None."""
        with self.lock:
            recent = list(self.usages.get(session_id) or ())
        if not recent:
            return None
        return (len(recent), *(sum(u[i] for u in recent) for i in range(3)))  # type: ignore[return-value]

    def remember(self, request: IssuedRequest) -> None:
        with self.lock:
            self.requests[request.request_id] = request
            while len(self.requests) > MAX_REMEMBERED_REQUESTS:
                self.requests.popitem(last=False)

    def request(self, session_id: str, request_id: str) -> IssuedRequest:
        with self.lock:
            found = self.requests.get(request_id)
        if found is None or found.session_id != session_id:
            raise UnknownRequest(
                f"request {request_id!r} is not known for session {session_id!r} "
                "(requests are remembered in memory by the process that prepared them)"
            )
        return found

    def claim_summary_attempt(self, session_id: str, turn_key: int) -> bool:
        """At most one summary attempt per turn (spec §11.2, §11.3)."""
        with self.lock:
            if self.summary_attempted.get(session_id) == turn_key:
                return False
            self.summary_attempted[session_id] = turn_key
            return True

    def release_summary_attempt(self, session_id: str, turn_key: int) -> None:
        """No summary was asked for after all ("nothing to compact", spec §11.3 step 3)."""
        with self.lock:
            if self.summary_attempted.get(session_id) == turn_key:
                del self.summary_attempted[session_id]

    def claim_overflow_recovery(self, request: IssuedRequest) -> bool:
        """One overflow recovery per turn, not per request: a request prepared again for
        the same turn, or the rebuilt one, gets no second (spec §5.12, §11.3)."""
        with self.lock:
            if (
                request.recovered
                or request.retry_of is not None
                or self.overflow_recovered.get(request.session_id) == request.turn_key
            ):
                return False
            request.recovered = True
            self.overflow_recovered[request.session_id] = request.turn_key
            self.calibrations.forget(request.session_id)
            return True

    def turn_started(self, session_id: str) -> None:
        with self.lock:
            self.active_turns[session_id] = self.active_turns.get(session_id, 0) + 1

    def turn_finished(self, session_id: str) -> None:
        with self.lock:
            left = self.active_turns.get(session_id, 1) - 1
            if left:
                self.active_turns[session_id] = left
            else:
                self.active_turns.pop(session_id, None)

    def refuse_while_turn_runs(self, session_id: str) -> None:
        """Spec §11.1: /compact during a running turn never cancels it; it is refused."""
        if self.active_turns.get(session_id):
            raise TurnInProgress(
                f"a turn is running in session {session_id!r}; /compact will not interrupt it. "
                "Run it again when the turn has finished.",
                details={"session_id": session_id},
            )
