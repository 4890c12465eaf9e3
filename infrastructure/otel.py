"""OpenTelemetry adapter of the telemetry port (optional extra ``otel``).

Uses only ``opentelemetry-api``: without an SDK configured by the host, the API's own
no-op providers make every call free. Nothing is reported until the process has
imported ``opentelemetry`` itself (ADR 0036): a host that configures an SDK or an
exporter has, and before that no provider could be set, so the calls would be no-ops
anyway; a ``ctxc`` start thus never pays for the import. Attribute names follow the ``ctxc.*`` namespace; errors are
reported with the error code (``error.type`` in OpenTelemetry's conventions).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from context_compaction.application.runtime import telemetry as t
from context_compaction.application.runtime.telemetry import Attributes, NoTelemetry, Telemetry

_UNITS = {
    t.COMPACTIONS: ("{compaction}", "Compaction attempts by reason, outcome and stage"),
    t.TOKENS_BEFORE: ("{token}", "Context tokens before a compaction"),
    t.TOKENS_AFTER: ("{token}", "Context tokens after a compaction"),
    t.SUMMARY_DURATION: ("ms", "Duration of one summary call"),
    t.TURNS: ("{turn}", "Prepared turns by usage source"),
    t.OVERFLOW_RECOVERIES: ("{recovery}", "Overflow recoveries by outcome"),
    t.STORAGE_RETRIES: ("{retry}", "Storage retries after a lost race or a busy database"),
    t.GENAI_TOKEN_USAGE: ("{token}", "Measures number of input and output tokens used"),
}
_HISTOGRAMS = {t.TOKENS_BEFORE, t.TOKENS_AFTER, t.SUMMARY_DURATION, t.GENAI_TOKEN_USAGE}
_NOTHING = NoTelemetry()


@functools.cache
def available() -> bool:
    # Once per process: a spec search walks sys.path, a fixed cost of every bootstrap.
    return importlib.util.find_spec("opentelemetry") is not None


def telemetry() -> Telemetry:
    """The OpenTelemetry adapter when the API is installed, else the no-op."""
    return OpenTelemetry() if available() else NoTelemetry()


class _Span:
    def __init__(self, span: Any, status: Any) -> None:
        self._span = span
        self._status = status

    def set(self, key: str, value: str | int | float | bool) -> None:
        self._span.set_attribute(key, value)

    def failed(self, code: str) -> None:
        self._span.set_attribute("error.type", code)
        self._span.set_status(self._status(self._status_code.ERROR, code))

    @property
    def _status_code(self) -> Any:
        from opentelemetry.trace import StatusCode

        return StatusCode


class OpenTelemetry:
    """Spans through the global tracer provider, metrics through the global meter provider."""

    def __init__(self) -> None:
        self._tracer: Any = None
        self._instruments: dict[str, Any] = {}

    def _ready(self) -> bool:
        """Set up on the first report after the host imported ``opentelemetry``."""
        if self._tracer is None:
            if "opentelemetry" not in sys.modules:
                return False
            self._setup()
        return True

    def _setup(self) -> None:
        from opentelemetry import metrics, trace

        # (from the installed distribution: importing our package here would be a circle)
        version = importlib.metadata.version("context-compaction")
        self._tracer = trace.get_tracer("context_compaction", version)
        meter = metrics.get_meter("context_compaction", version)
        for name, (unit, description) in _UNITS.items():
            make = meter.create_histogram if name in _HISTOGRAMS else meter.create_counter
            self._instruments[name] = make(name, unit=unit, description=description)

    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Iterator[Any]:
        if not self._ready():
            with _NOTHING.span(name, attributes) as nothing:
                yield nothing
            return
        from opentelemetry.trace import Status

        with self._tracer.start_as_current_span(
            name, attributes=dict(attributes), record_exception=False, set_status_on_exception=False
        ) as span:
            handle = _Span(span, Status)
            try:
                yield handle
            except BaseException as exc:
                handle.failed(getattr(exc, "code", None) or type(exc).__name__)
                raise

    def add(self, metric: str, value: int, attributes: Attributes) -> None:
        if not self._ready():
            return
        self._instruments[metric].add(value, dict(attributes))

    def record(self, metric: str, value: float, attributes: Attributes) -> None:
        if not self._ready():
            return
        self._instruments[metric].record(value, dict(attributes))
