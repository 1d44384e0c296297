"""The evaluation core's records as telemetry: each metric's ``evaluate {metric}`` span, the records handed to the
emitters and sinks, and the pipeline counters (evaluated, errored).

:class:`~otel_eval.evaluation.core.EvaluationCore` scores; :class:`RecordEmission` emits what it scores, the same way
whether a metric ran inline on the caller's thread (its span made once it is scored) or on the event loop (the metric
runs inside its span, which carries the judge's spans as children).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from time import time_ns

from otel_eval.emit import Emitters
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.emit.spans import EvaluationSpan, EvaluationSpanEmitter
from otel_eval.evaluation.plan import PlannedMetric
from otel_eval.evaluation.records import RecordContext, RecordedInvocation
from otel_eval.evaluation.scoring import calls_judge
from otel_eval.model import EvaluationResult
from otel_eval.model.messages import EvaluationRecord

logger = logging.getLogger("otel_eval.evaluation.core")
"""The evaluation core's logger: its emission is the core's."""


@dataclass(slots=True)
class RecordEmission:
    """Emits a request's records through ``emitters`` and counts them in ``pipeline`` (None: not counted)."""

    emitters: Emitters
    pipeline: PipelineMetrics | None

    def scored_inline(
        self,
        context: RecordContext,
        metrics: list[PlannedMetric],
        score: Callable[[PlannedMetric], EvaluationResult],
    ) -> list[EvaluationRecord]:
        """Each of ``metrics`` scored inline by ``score``, its records made and emitted (with their spans)."""
        records = []
        spans, emit, pipeline = self.emitters.spans, self.emitters.emit, self.pipeline
        for metric in metrics:
            # Inline: no judge, nothing the metric's run needs its span for; the span is made once it is scored.
            started_at = time_ns() if spans is not None else 0
            recorded = context.records(metric, score(metric))
            if spans is not None:
                _finished_span(spans, context, recorded, started_at)
                self._other_spans(context, recorded)
            for record in recorded:  # as emit, its spans made above
                emit(record)
                if record.error_type and pipeline is not None:
                    pipeline.errored(record.metric_name, record.error_type)
            records += recorded
        return records

    def metric_span(
        self, metric: PlannedMetric, context: RecordContext
    ) -> AbstractContextManager[EvaluationSpan | None]:
        """The ``evaluate {metric}`` span the metric runs in (none without a span emitter)."""
        spans = self.emitters.spans
        if spans is None:
            return nullcontext()
        parent, links = context.span_parent()
        return spans.evaluation_span(metric.name, parent.trace_id, parent.span_id, links, judged=calls_judge(metric))

    @staticmethod
    def recorded(
        metric: PlannedMetric, context: RecordContext, span: EvaluationSpan | None, result: EvaluationResult
    ) -> list[EvaluationRecord]:
        """The metric's records; the evaluation span (before it ends) carries the first invocation's."""
        records = context.records(metric, result)
        if span is not None:
            _finish(span, context.span_record(records))
        return records

    def emit(self, context: RecordContext, records: list[EvaluationRecord]) -> None:
        """Emits a metric's records scored in its span (:meth:`metric_span`), with the other invocations' spans."""
        self._other_spans(context, records)
        for record in records:
            self.emitters.emit(record)
            if record.error_type and self.pipeline is not None:
                self.pipeline.errored(record.metric_name, record.error_type)

    def delivered(self, context: RecordContext, records: list[EvaluationRecord]) -> list[EvaluationRecord]:
        """``records`` (a request's, all emitted) handed to the sinks, its invocations counted as evaluated."""
        self.emitters.deliver(records)
        if self.pipeline is not None and context.window is None:  # a window's turns were counted on arrival
            self.pipeline.evaluated(len(context.invocations))
        return records

    def _other_spans(self, context: RecordContext, records: list[EvaluationRecord]) -> None:
        """A span for each record but the first (a request's other invocations); a session window has its one."""
        spans = self.emitters.spans
        if spans is not None and context.window is None:
            for record in records[1:]:
                spans.emit(record)


def _finished_span(
    spans: EvaluationSpanEmitter, context: RecordContext, records: list[EvaluationRecord], start: int
) -> None:
    """The evaluation span of a metric scored inline (the first invocation's record, as :meth:`RecordEmission.recorded`)."""
    parent: RecordedInvocation = context.span_parent()[0]
    try:
        spans.finished(context.span_record(records), parent.trace_id, parent.span_id, start)
    except Exception:  # a span attribute problem must not lose the result
        logger.exception("cannot set the evaluation span's attributes")


def _finish(span: EvaluationSpan, record: EvaluationRecord) -> None:
    try:
        span.finish(record)
    except Exception:  # a span attribute problem must not lose the result
        logger.exception("cannot set the evaluation span's attributes")
