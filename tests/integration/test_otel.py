"""The OpenTelemetry adapter: spans and metrics through the SDK's in-memory exporters."""

from __future__ import annotations

import logging
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

from context_compaction.application.runtime import telemetry as t
from context_compaction.application.runtime.telemetry import NoTelemetry
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


# ------------------------------------------------------ wired through the bus (issue 15)
SECRET = "zebra-quartz-canary"  # in every message: no attribute may carry it


def _attribute_values(exporter: InMemorySpanExporter, reader_points: dict[str, list[Any]]) -> list[str]:
    values = [str(v) for s in exporter.get_finished_spans() for v in s.attributes.values()]
    values += [str(v) for pts in reader_points.values() for p in pts for v in p.attributes.values()]
    return values


def test_a_compaction_through_the_bus_reports_its_spans_and_metrics_and_no_content(
    sdk: Any, databases: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from helpers import assistant, err, ok, tool, user

    exporter, reader = sdk
    exporter.clear()
    caplog.set_level(logging.INFO, logger="context_compaction")
    h = databases.harness(context_compaction={"keep_recent_tokens": 10})
    assert isinstance(h.bus.services.telemetry, OpenTelemetry)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for n in range(4):
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
            user(f"{SECRET} step {n}", turn_id=f"t{n}"),
            assistant(f"{SECRET} reading", [(f"c{n}", "read_file", '{"path": "x.py"}')]),
            tool(f"c{n}", f"{SECRET} line {n}\n" * 100),
            assistant(f"{SECRET} done {n}"),
        ]}))
    outcome = ok(h.do({"type": "compact", "session_id": "s"}))
    assert outcome["status"] == "compacted"
    ok(h.do({"type": "prepare_turn", "session_id": "s"}))
    err(h.do({"type": "compact", "session_id": "nobody"}), "session_not_found")

    spans = exporter.get_finished_spans()
    commands = [s for s in spans if s.name == "ctxc.command"]
    by_type = {s.attributes["ctxc.command"]: s for s in commands}
    assert {"start_session", "append_messages", "compact", "prepare_turn"} <= by_type.keys()
    compact = next(s for s in commands if s.attributes["ctxc.command"] == "compact"
                   and s.attributes["ctxc.session_id"] == "s")
    assert compact.attributes["ctxc.outcome"] == "compacted"
    assert compact.status.status_code == StatusCode.UNSET
    failed = next(s for s in commands if s.attributes.get("error.type") == "session_not_found")
    assert failed.attributes["ctxc.command"] == "compact"
    assert "ctxc.session_id" not in failed.attributes  # (an id that names no session: any text)
    assert failed.status.status_code == StatusCode.ERROR
    # The summary call and the commit are children of the compact command's span.
    summary = next(s for s in spans if s.name == "ctxc.summary")
    commit = next(s for s in spans if s.name == "ctxc.commit")
    for child in (summary, commit):
        assert child.parent is not None and child.parent.span_id == compact.context.span_id
        assert child.attributes["ctxc.session_id"] == "s"
    assert summary.attributes["ctxc.summarizer"] == "extractive"
    # The GenAI semantic conventions beside ours (issue 43).
    assert compact.attributes[t.GENAI_CONVERSATION_ID] == "s"
    assert compact.attributes[t.GENAI_CONVERSATION_COMPACTED] is True
    assert summary.attributes[t.GENAI_CONVERSATION_ID] == "s"
    assert summary.attributes[t.GENAI_REQUEST_MODEL] == "gpt-4o"
    prepared = by_type["prepare_turn"]
    assert prepared.attributes[t.GENAI_REQUEST_MODEL] == "gpt-4o"
    assert prepared.attributes[t.GENAI_CONVERSATION_COMPACTED] is False
    assert t.GENAI_CONVERSATION_ID not in failed.attributes

    got = points(reader)
    manual = [p for p in got[t.COMPACTIONS] if dict(p.attributes).get("reason") == "manual"
              and dict(p.attributes).get("outcome") == "compacted"]
    assert manual and manual[0].value >= 1
    assert sum(p.count for p in got[t.TOKENS_BEFORE]) >= 1
    before = next(p for p in got[t.TOKENS_BEFORE] if dict(p.attributes)["reason"] == "manual")
    after = next(p for p in got[t.TOKENS_AFTER] if dict(p.attributes)["reason"] == "manual")
    assert before.max >= outcome["tokens_before"] and after.min <= outcome["tokens_after"]
    assert any(p.count >= 1 for p in got[t.SUMMARY_DURATION])
    assert any(dict(p.attributes).get("usage_source") == "estimated" for p in got[t.TURNS])
    assert all(SECRET not in value for value in _attribute_values(exporter, got))

    # Durations in the structured log lines; no content there either.
    done = [r for r in caplog.records if r.getMessage() == "command completed"]
    assert {getattr(r, "command", None) for r in done} >= {"compact", "prepare_turn"}
    assert all(isinstance(getattr(r, "duration_ms", None), float) for r in done)
    attempt = next(r for r in caplog.records if r.getMessage() == "compaction attempt finished")
    assert attempt.outcome == "compacted" and attempt.duration_ms >= 0  # type: ignore[attr-defined]
    assert any(r.getMessage() == "command failed" and r.error_code == "session_not_found"  # type: ignore[attr-defined]
               for r in caplog.records)
    assert all(SECRET not in str(vars(r)) for r in caplog.records)


def test_recorded_usage_carries_the_genai_token_attributes(sdk: Any, databases: Any) -> None:
    """``gen_ai.usage.*`` on the record_usage span and ``gen_ai.client.token.usage`` (issue 43)."""
    from helpers import assistant, ok, user

    exporter, reader = sdk
    exporter.clear()
    h = databases.harness()
    ok(h.do({"type": "start_session", "session_id": "u", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "u", "messages": [user("hi"), assistant("hello")]}))
    request = ok(h.do({"type": "prepare_turn", "session_id": "u"}))
    ok(h.do({"type": "record_usage", "session_id": "u", "request_id": request["request_id"],
             "prompt_tokens": 1234, "completion_tokens": 56}))
    span = next(s for s in exporter.get_finished_spans()
                if s.name == "ctxc.command" and s.attributes["ctxc.command"] == "record_usage")
    assert span.attributes[t.GENAI_CONVERSATION_ID] == "u"
    assert span.attributes[t.GENAI_INPUT_TOKENS] == 1234 and span.attributes[t.GENAI_OUTPUT_TOKENS] == 56
    usage = [p for p in points(reader)[t.GENAI_TOKEN_USAGE]
             if dict(p.attributes)[t.GENAI_REQUEST_MODEL] == "gpt-4o"]
    by_type = {dict(p.attributes)[t.GENAI_TOKEN_TYPE]: p for p in usage}
    assert by_type["input"].max >= 1234 and by_type["output"].max >= 56
