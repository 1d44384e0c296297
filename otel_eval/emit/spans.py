"""Evaluation spans: ``evaluate {metric}``, a child of the evaluated invocation's span, in the agent's trace, typed
as an evaluator for the LLM-observability backends (OpenInference's ``openinference.span.kind=EVALUATOR``, MLflow's
``mlflow.spanType``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider

from otel_eval import semconv
from otel_eval.emit._context import invocation_context, invocation_span_context
from otel_eval.emit.attributes import record_attributes
from otel_eval.judge.tracing import evaluation_tracer
from otel_eval.model.messages import EvaluationRecord
from otel_eval.version import __version__

logger = logging.getLogger(__name__)


def evaluation_span_name(metric_name: str) -> str:
    """``evaluate {metric}``."""
    return f"{semconv.EVALUATION_SPAN_NAME_PREFIX} {metric_name}"


class EvaluationSpan:
    """The open span of one metric's run; :meth:`finish` copies the result onto it before it ends."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def finish(self, record: EvaluationRecord) -> None:
        """Sets the result's attributes, and an ERROR status when the metric could not evaluate."""
        self.span.set_attributes(record_attributes(record))
        if record.error_type:
            self.span.set_status(Status(StatusCode.ERROR, record.explanation or record.error_type))


class EvaluationSpanEmitter:
    """Creates evaluation spans parented to the invocation span (a remote-parent context from the stored ids).

    While a metric runs inside :meth:`evaluation_span`, that span is the current span and the one the judge client's
    generate-content spans are made for: in a judge trace of their own linked to it, or as its children
    (:mod:`otel_eval.judge.tracing`).

    Args:
        tracer_provider: Provider to create spans with; the global one (resolved lazily) when None.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(semconv.INSTRUMENTATION_SCOPE, __version__, tracer_provider=tracer_provider)

    @contextmanager
    def evaluation_span(
        self,
        metric_name: str,
        trace_id: str,
        span_id: str,
        links: Sequence[tuple[str, str]] = (),
        *,
        judged: bool = True,
    ) -> Iterator[EvaluationSpan]:
        """An ``evaluate {metric}`` span, current for the ``with`` body, ended on exit; ``links`` are the (trace id,
        span id) of other spans it evaluated (a session's turns). ``judged=False``: the metric calls no judge, so no
        judge trace is prepared for it (:func:`~otel_eval.judge.tracing.evaluation_tracer`).

        When the ids do not parse, the span is a new root (the result is still visible, just not in the trace).
        """
        context = invocation_context(trace_id, span_id)
        span_links = [Link(c) for t, s in links if (c := invocation_span_context(t, s)) is not None]
        with self._tracer.start_as_current_span(
            evaluation_span_name(metric_name),
            context=context,
            kind=SpanKind.INTERNAL,
            links=span_links,
            attributes={
                semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_EVALUATION,
                semconv.GEN_AI_EVALUATION_NAME: metric_name,
                semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_SPAN_KIND_EVALUATOR,
                semconv.MLFLOW_SPAN_TYPE: semconv.MLFLOW_SPAN_TYPE_EVALUATOR,
            },
        ) as span:
            if not judged:
                yield EvaluationSpan(span)
                return
            with evaluation_tracer(self._tracer, span, metric_name):
                yield EvaluationSpan(span)

    def emit(self, record: EvaluationRecord) -> None:
        """A finished evaluation span for a result computed elsewhere (e.g. read from the results topic)."""
        with self.evaluation_span(record.metric_name, record.trace_id, record.span_id) as span:
            span.finish(record)
