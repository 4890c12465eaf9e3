"""Telemetry around each command (issue 15; a wrapper of the bus since issue 38)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from context_compaction.domain.errors import ContextCompactionError

from . import telemetry as tel

log = logging.getLogger("context_compaction.bus")


class Observed:
    """A wrapper of the bus: a span, metrics and one log line per command."""

    def __init__(self, services: Any) -> None:
        self.services = services  # (its telemetry read per command: a host may swap it)

    def around(self, command: Any, call: Callable[[Any], Any]) -> Any:
        """The handler in a ``ctxc.command`` span, its metrics and a completion log line
        with its duration (issue 15): ids, codes and figures only, never content."""
        telemetry = self.services.telemetry
        kind, session_id = str(command.type), getattr(command, "session_id", None)
        started = time.perf_counter()
        result, code, outcome = None, None, None
        try:
            with telemetry.span("ctxc.command", {"ctxc.command": kind}) as span:
                try:
                    result = call(command)
                except ContextCompactionError as exc:
                    code = exc.code
                    raise
                except Exception:
                    code = "internal_error"
                    raise
                finally:
                    # A session id that names no session may be any text a caller sent
                    # (content, even): it is reported only when the session exists.
                    if not tel.names_no_session(code) and isinstance(session_id, str):
                        span.set("ctxc.session_id", session_id)
                        tel.genai_attributes(span, kind, session_id, result)
                outcome = tel.outcome_of(result)
                span.set("ctxc.outcome", outcome)
        finally:
            log.info("command completed" if code is None else "command failed", extra={
                "command": kind, "outcome": (outcome or tel.outcome_of(result)) if code is None else None,
                "session_id": None if tel.names_no_session(code) else session_id, "error_code": code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            })
            tel.count_command(telemetry, kind, result, code)
        return result
