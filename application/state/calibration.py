"""Measured usage (spec §7.2): the one place that keeps a provider's prompt count.

After a provider call the host records the prompt size it was charged for a request
(``record_usage``). The next request of the session reuses it, plus our estimate of
what was added since, when its ``CalibrationKey`` is the same and what was sent is an
exact prefix of what will be sent. In memory only: a restart estimates afresh.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class CalibrationKey:
    """What must be equal for a measured prompt size to be reused (spec §7.2)."""

    provider: str
    model: str
    generation: int
    checkpoint_id: str | None
    fixed_digest: str
    pinned: tuple[int, ...] = ()
    """Pinned seqs shown after the summary: a pin changes the request, not the generation."""


@dataclass(frozen=True)
class Calibration:
    """The prompt size a provider measured for a request with ``key``, whose history
    was its first ``history_count`` messages (chained digest ``history_digest``)."""

    key: CalibrationKey
    history_count: int
    history_digest: str
    prompt_tokens: int


class Calibrations:
    """Session → its latest measured request; thread-safe."""

    def __init__(self) -> None:
        self._by_session: dict[str, Calibration] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> Calibration | None:
        return self._by_session.get(session_id)

    def record(self, session_id: str, calibration: Calibration) -> None:
        with self._lock:
            self._by_session[session_id] = calibration

    def forget(self, session_id: str) -> None:
        """An overflow proved the measurement wrong for this session."""
        with self._lock:
            self._by_session.pop(session_id, None)
