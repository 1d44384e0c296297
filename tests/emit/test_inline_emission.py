"""A request scored inline (:meth:`EvaluationCore.start`, where a record's attributes are made once for its evaluation
span and its result event) exports exactly the telemetry the event loop's path (:meth:`EvaluationCore.evaluate`,
where the span and the event each make their own) exports: same spans, events and metric points, attributes in the
same order, on every recorded trace."""

from __future__ import annotations

import asyncio
from typing import Any

from otel_eval import semconv
from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRequest
from tests.evaluation.test_inline import _recorded_invocations
from tests.processor.telemetry import Telemetry


def _invocations() -> list[TracedInvocation]:
    """Every invocation of the recorded framework, ADK, hostile traces and of the demo agent's scenarios."""
    return _recorded_invocations()


def _requests() -> list[EvaluationRequest]:
    invocations = _invocations()
    # one invocation a request, and requests of several (the first record's attributes are shared, the others not)
    return [EvaluationRequest(invocations=[i]) for i in invocations] + [
        EvaluationRequest(invocations=invocations[start : start + 3]) for start in range(0, len(invocations), 3)
    ]


def _exported(telemetry: Telemetry) -> dict[str, Any]:
    spans = [
        (
            s.name,
            s.kind,
            s.parent,
            [(link.context.trace_id, link.context.span_id) for link in s.links],
            list((s.attributes or {}).items()),
            s.status.status_code,
            s.status.description,
            s.instrumentation_scope,
        )
        for s in telemetry.evaluation_spans()
    ]
    events = [
        (
            e.log_record.trace_id,
            e.log_record.span_id,
            e.log_record.trace_flags,
            e.log_record.severity_number,
            e.log_record.severity_text,
            e.log_record.event_name,
            e.log_record.body,
            list((e.log_record.attributes or {}).items()),
            e.instrumentation_scope,
        )
        for e in telemetry.result_events()
    ]
    histogram = sorted(
        (sorted(p.attributes.items()), p.count, p.sum, p.min, p.max, list(p.bucket_counts))
        for p in telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE)
    )
    counter = sorted(
        (sorted(p.attributes.items()), p.value) for p in telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
    )
    return {"spans": spans, "events": events, "histogram": histogram, "counter": counter}


def test_inline_scoring_exports_what_the_event_loop_path_exports_on_recorded_traces() -> None:
    requests = _requests()
    inline, on_loop = Telemetry(), Telemetry()
    inline.add_exporting_processor()
    on_loop.add_exporting_processor()
    try:
        core = EvaluationCore(judge_configured=False, emitters=Emitters.create(**inline.providers()))
        for request in requests:
            started = core.start(request)
            assert started.on_loop is None and started.records  # every metric ran inline
        core = EvaluationCore(judge_configured=False, emitters=Emitters.create(**on_loop.providers()))
        for request in requests:
            asyncio.run(core.evaluate(request))
        got, wanted = _exported(inline), _exported(on_loop)
        results = len(EFFICIENCY_METRICS) * 2 * len(_invocations())
        assert len(got["events"]) == results and len(got["spans"]) == results
        assert got["histogram"] and got["counter"]
        assert got == wanted
    finally:
        inline.shutdown()
        on_loop.shutdown()
