"""The OpenTelemetry adapter: spans and metrics through the SDK's in-memory exporters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from context_compaction.application import telemetry as t
from context_compaction.application.telemetry import NoTelemetry
from context_compaction.domain.errors import SummaryFailed
from context_compaction.infrastructure.otel import OpenTelemetry, telemetry

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


@pytest.fixture(scope="module")
def sdk() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    # Global providers can be set once per process; every test of this module shares them.
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    yield _EXPORTER, _READER


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out.setdefault(m.name, []).extend(m.data.data_points)
    return out


def test_the_adapter_is_chosen_when_the_api_is_installed() -> None:
    assert isinstance(telemetry(), OpenTelemetry)


def test_a_span_carries_its_attributes_and_a_failure_its_error_code(sdk: Any) -> None:
    exporter, _ = sdk
    exporter.clear()
    tel = OpenTelemetry()
    with tel.span("ctxc.command", {"ctxc.session_id": "s1", "ctxc.command": "compact"}) as span:
        span.set("ctxc.outcome", "compacted")
    with pytest.raises(SummaryFailed):
        with tel.span("ctxc.command", {"ctxc.command": "compact"}):
            raise SummaryFailed("the summarizer returned an empty summary")
    ok, failed = exporter.get_finished_spans()
    assert ok.name == "ctxc.command" and dict(ok.attributes) == {
        "ctxc.session_id": "s1", "ctxc.command": "compact", "ctxc.outcome": "compacted"}
    assert ok.status.status_code == StatusCode.UNSET
    assert failed.attributes["error.type"] == "summary_failed"
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.events == ()  # no exception event: its message could quote content


def test_counters_and_histograms_reach_the_meter(sdk: Any) -> None:
    _, reader = sdk
    tel = OpenTelemetry()
    tel.add(t.COMPACTIONS, 1, {"reason": "auto", "outcome": "compacted"})
    tel.record(t.SUMMARY_DURATION, 12.5, {"summarizer": "extractive"})
    got = points(reader)
    assert any(p.value >= 1 and dict(p.attributes) == {"reason": "auto", "outcome": "compacted"}
               for p in got[t.COMPACTIONS])
    assert any(p.count >= 1 and p.sum >= 12.5 for p in got[t.SUMMARY_DURATION])


def test_the_no_op_reports_nothing_and_swallows_nothing(sdk: Any) -> None:
    exporter, _ = sdk
    exporter.clear()
    tel = NoTelemetry()
    with pytest.raises(SummaryFailed):
        with tel.span("x", {"a": 1}) as span:
            span.set("b", 2)
            raise SummaryFailed("boom")
    tel.add(t.TURNS, 1, {})
    tel.record(t.TOKENS_AFTER, 1.0, {})
    assert exporter.get_finished_spans() == ()
