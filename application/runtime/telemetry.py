"""The telemetry port: spans and metrics about commands, never about content (issue 15).

The application reports what happened — which command, which session, the outcome or
error code, token figures, durations — through this port; the infrastructure turns it
into OpenTelemetry spans and metrics when ``opentelemetry-api`` is installed, and into
nothing otherwise. No message text, summary, reasoning or payload is ever an attribute.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

Attributes = Mapping[str, str | int | float | bool]

#: Metric names (OpenTelemetry instrument names; units in the adapter).
COMPACTIONS = "ctxc.compactions"
TOKENS_BEFORE = "ctxc.compaction.tokens_before"
TOKENS_AFTER = "ctxc.compaction.tokens_after"
SUMMARY_DURATION = "ctxc.summary.duration"
TURNS = "ctxc.turns"
OVERFLOW_RECOVERIES = "ctxc.overflow.recoveries"
STORAGE_RETRIES = "ctxc.storage.retries"

# OpenTelemetry GenAI semantic conventions (issue 43), set beside our own ``ctxc.*``
# names: https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/ and
# .../gen-ai-metrics/ (``gen_ai.client.token.usage``, tokens by ``gen_ai.token.type``).
GENAI_CONVERSATION_ID = "gen_ai.conversation.id"
GENAI_CONVERSATION_COMPACTED = "gen_ai.conversation.compacted"
GENAI_REQUEST_MODEL = "gen_ai.request.model"
GENAI_OPERATION_NAME = "gen_ai.operation.name"
GENAI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GENAI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GENAI_TOKEN_TYPE = "gen_ai.token.type"
GENAI_TOKEN_USAGE = "gen_ai.client.token.usage"
#: Commands whose result may be a committed compaction.
_COMPACTING = frozenset({"compact", "commit_candidate", "prepare_turn", "recover_overflow"})


class Span(Protocol):
    def set(self, key: str, value: str | int | float | bool) -> None: ...

    def failed(self, code: str) -> None: ...


class Telemetry(Protocol):
    """What the application tells the outside about its work."""

    def span(self, name: str, attributes: Attributes) -> Any:
        """A context manager yielding a ``Span``; an exception leaving it marks it failed."""
        ...

    def add(self, metric: str, value: int, attributes: Attributes) -> None: ...

    def record(self, metric: str, value: float, attributes: Attributes) -> None: ...


class _NoSpan:
    def set(self, key: str, value: str | int | float | bool) -> None:
        pass

    def failed(self, code: str) -> None:
        pass


class NoTelemetry:
    """The default: costs one function call per report."""

    _span = _NoSpan()

    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Iterator[Span]:
        yield self._span

    def add(self, metric: str, value: int, attributes: Attributes) -> None:
        pass

    def record(self, metric: str, value: float, attributes: Attributes) -> None:
        pass


#: Error codes after which a command's session id may name no session at all.
_NO_SESSION = frozenset({"session_not_found", "invalid_command", "invalid_message", "internal_error"})


def names_no_session(error_code: str | None) -> bool:
    """Whether a command that ended with this code may carry a session id that is no
    session's (any text a caller sent): such an id is never reported."""
    return error_code in _NO_SESSION


def outcome_of(result: Any) -> str:
    """A result's outcome for the span: a compaction's status, else ``ok``."""
    # A result model's fields are in its ``__dict__``: asking pydantic for a field it
    # lacks raises and catches an AttributeError (~6 µs, twice a command; ADR 0056).
    fields = getattr(result, "__dict__", None)
    status = fields.get("status") if type(fields) is dict else getattr(result, "status", None)
    return status if isinstance(status, str) else "ok"


def count_command(telemetry: Telemetry, kind: str, result: Any, error_code: str | None) -> None:
    """The per-command metrics: prepared turns by usage source, overflow recoveries."""
    if kind == "prepare_turn" and error_code is None:
        usage = getattr(result, "usage", None)
        telemetry.add(TURNS, 1, {"usage_source": str(getattr(usage, "usage_source", "unknown"))})
    elif kind == "recover_overflow":
        telemetry.add(OVERFLOW_RECOVERIES, 1, {"outcome": error_code or "recovered"})


def genai_attributes(span: Span, kind: str, session_id: str | None, result: Any) -> None:
    """The GenAI convention's attributes of a command span, where they apply: the
    session is the conversation; a committed compaction marks it compacted; a prepared
    request names its model; a recorded usage carries its tokens (no content)."""
    if session_id is not None:
        span.set(GENAI_CONVERSATION_ID, session_id)
    if result is None:
        return
    if kind in _COMPACTING:
        compaction = result if kind in ("compact", "commit_candidate") else getattr(result, "compaction", None)
        span.set(GENAI_CONVERSATION_COMPACTED, getattr(compaction, "status", None) == "compacted")
    model = getattr(result, "model", None) if kind in ("prepare_turn", "recover_overflow") else None
    if isinstance(model, str):
        span.set(GENAI_REQUEST_MODEL, model)
    if kind == "record_usage":
        span.set(GENAI_INPUT_TOKENS, int(result.prompt_tokens))
        if result.completion_tokens is not None:
            span.set(GENAI_OUTPUT_TOKENS, int(result.completion_tokens))


def record_token_usage(telemetry: Telemetry, model: str, operation: str, usage: Mapping[str, Any] | None) -> None:
    """``gen_ai.client.token.usage``: a model call's input and output tokens."""
    if not usage:
        return
    for kind, key in (("input", "prompt_tokens"), ("output", "completion_tokens")):
        telemetry.record(GENAI_TOKEN_USAGE, int(usage.get(key) or 0), {
            GENAI_OPERATION_NAME: operation, GENAI_REQUEST_MODEL: model, GENAI_TOKEN_TYPE: kind})
