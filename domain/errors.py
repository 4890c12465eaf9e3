"""Named errors. Each carries the public error code of CONTRACT.md.

Domain rules raise these from public aggregate methods *before* any event is
triggered, so a failed command never emits an event.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ContextCompactionError(Exception):
    """Base of every error the library reports; ``code`` is the contract's error code."""

    code: ClassVar[str] = "storage_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}

    def explained(self) -> str:
        """The message, and ``details["cause"]`` when it says more (a provider's own,
        redacted words): for a caller that gets text only, a turn's warnings."""
        cause = self.details.get("cause")
        return self.message if not isinstance(cause, str) or cause in self.message else f"{self.message} (cause: {cause})"


class InvalidCommand(ContextCompactionError):
    code = "invalid_command"


class InvalidMessage(ContextCompactionError):
    code = "invalid_message"


class SessionNotFound(ContextCompactionError):
    code = "session_not_found"


class SessionExists(ContextCompactionError):
    code = "session_exists"


class SessionDeleted(ContextCompactionError):
    code = "session_deleted"


class _WithCause(ContextCompactionError):
    """An error whose ``details`` always say why (issue 35): ``cause`` is the message
    unless the raiser gave one (a provider's redacted message, a driver's cause)."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details)
        self.details.setdefault("cause", message)


class SummaryFailed(_WithCause):
    code = "summary_failed"


class StaleCandidate(ContextCompactionError):
    code = "stale_candidate"


class FixedContextExceedsBudget(ContextCompactionError):
    code = "fixed_context_exceeds_budget"


class OverflowRetryExhausted(ContextCompactionError):
    code = "overflow_retry_exhausted"


class OverflowNotRecoverable(ContextCompactionError):
    code = "overflow_not_recoverable"


class UnknownRequest(ContextCompactionError):
    code = "unknown_request"


class StorageError(_WithCause):
    code = "storage_error"


class IdempotencyConflict(ContextCompactionError):
    """A ``command_id`` that was already applied came back with a different payload."""

    code = "idempotency_conflict"


class CorruptEvent(ContextCompactionError):
    """A stored event cannot be decoded; ``details`` name the session and version."""

    code = "corrupt_event"


class TurnInProgress(ContextCompactionError):
    """A manual compaction was asked for while a turn is running (spec §11.1)."""

    code = "turn_in_progress"


class SessionHasChildren(ContextCompactionError):
    """Purging a session whose forks still read their inherited history from its events
    (issue 42, ADR 0081): purge the forks first."""

    code = "session_has_children"


ALL_ERRORS: tuple[type[ContextCompactionError], ...] = (
    InvalidCommand,
    InvalidMessage,
    SessionNotFound,
    SessionExists,
    SessionDeleted,
    SummaryFailed,
    StaleCandidate,
    FixedContextExceedsBudget,
    OverflowRetryExhausted,
    OverflowNotRecoverable,
    UnknownRequest,
    StorageError,
    TurnInProgress,
    IdempotencyConflict,
    CorruptEvent,
    SessionHasChildren,
)
