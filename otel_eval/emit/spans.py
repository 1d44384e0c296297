"""Evaluation spans: ``evaluate {metric}``, a child of the evaluated invocation's span, in the agent's trace, typed
as an evaluator for the LLM-observability backends (OpenInference's ``openinference.span.kind=EVALUATOR``, MLflow's
``mlflow.spanType``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import TracebackType

from opentelemetry import trace
from opentelemetry.context import attach, detach
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

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
        attributes = record_attributes(record)
        self.span.set_attributes(attributes)
        if record.error_type:
            self.span.set_status(_error_status(attributes))


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

    def evaluation_span(
        self,
        metric_name: str,
        trace_id: str,
        span_id: str,
        links: Sequence[tuple[str, str]] = (),
        *,
        judged: bool = True,
    ) -> AbstractContextManager[EvaluationSpan]:
        """An ``evaluate {metric}`` span, current for the ``with`` body, ended on exit; ``links`` are the (trace id,
        span id) of other spans it evaluated (a session's turns). ``judged=False``: the metric calls no judge, so no
        judge trace is prepared for it (:func:`~otel_eval.judge.tracing.evaluation_tracer`).

        When the ids do not parse, the span is a new root (the result is still visible, just not in the trace). An
        exception out of the body is recorded on the span, which gets an ERROR status, as the SDK's
        ``start_as_current_span`` does.
        """
        return _CurrentEvaluationSpan(self._tracer, metric_name, trace_id, span_id, links, judged)

    def finished(
        self,
        record: EvaluationRecord,
        trace_id: str,
        span_id: str,
        start_time: int,
    ) -> None:
        """The ``evaluate {metric}`` span of a metric scored on this thread since ``start_time`` (``time.time_ns()``)
        without a judge and without its span as the current one, parented to ``trace_id``/``span_id``: started
        and ended here with every attribute at once (one SDK call where :meth:`evaluation_span` and
        :meth:`EvaluationSpan.finish` make three, and no context attached); the span exported is the one those
        make, attributes in the same order."""
        attributes = record_attributes(record)
        # The start's attributes first, but the metric's name, which the result sets again: last, where a set moves
        # it in the SDK (the others are not among a result's attributes).
        ordered = dict(_START_ONLY_ATTRIBUTES)
        ordered.update(attributes)
        span = self._tracer.start_span(
            evaluation_span_name(record.metric_name),
            context=invocation_context(trace_id, span_id),
            kind=_INTERNAL,
            links=[],
            attributes=ordered,
            start_time=start_time,
        )
        if record.error_type:
            span.set_status(_error_status(attributes))
        span.end()

    def emit(self, record: EvaluationRecord) -> None:
        """A finished evaluation span for a result computed elsewhere (e.g. read from the results topic)."""
        with self.evaluation_span(record.metric_name, record.trace_id, record.span_id) as span:
            span.finish(record)


class _CurrentEvaluationSpan:
    """:meth:`EvaluationSpanEmitter.evaluation_span`: ``start_as_current_span`` spelled as one plain context manager
    (a metric's run is a few microseconds; the SDK's two generator-based context managers cost as much again)."""

    __slots__ = ("_judge", "_judged", "_links", "_name", "_span", "_span_id", "_token", "_trace_id", "_tracer")

    def __init__(
        self,
        tracer: Tracer,
        metric_name: str,
        trace_id: str,
        span_id: str,
        links: Sequence[tuple[str, str]],
        judged: bool,
    ) -> None:
        self._tracer, self._name, self._judged = tracer, metric_name, judged
        self._trace_id, self._span_id, self._links = trace_id, span_id, links

    def __enter__(self) -> EvaluationSpan:
        metric_name = self._name
        span = self._tracer.start_span(
            evaluation_span_name(metric_name),
            context=invocation_context(self._trace_id, self._span_id),
            kind=SpanKind.INTERNAL,
            links=[Link(c) for t, s in self._links if (c := invocation_span_context(t, s)) is not None],
            attributes=_start_attributes(metric_name),
        )
        self._span = span
        self._token = attach(trace.set_span_in_context(span))
        self._judge: AbstractContextManager[None] | None = None
        if self._judged:
            self._judge = evaluation_tracer(self._tracer, span, metric_name)
            self._judge.__enter__()
        return EvaluationSpan(span)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        span = self._span
        try:
            if self._judge is not None:
                self._judge.__exit__(kind, error, traceback)  # closes the judge trace before the span ends
        finally:
            detach(self._token)
            if isinstance(error, Exception) and span.is_recording():
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            span.end()


def _error_status(attributes: dict[str, AttributeValue]) -> Status:
    """The ERROR status of a result that could not be evaluated: its explanation, else its error type, as
    :func:`record_attributes` gives them (a lone surrogate as U+FFFD)."""
    description = attributes.get(semconv.GEN_AI_EVALUATION_EXPLANATION) or attributes.get(semconv.ERROR_TYPE)
    return Status(StatusCode.ERROR, str(description))


def _start_attributes(metric_name: str) -> dict[str, AttributeValue]:
    """What an evaluation span carries from its start: the operation, the metric and the evaluator kind."""
    return {
        semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_EVALUATION,
        semconv.GEN_AI_EVALUATION_NAME: metric_name,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_SPAN_KIND_EVALUATOR,
        semconv.MLFLOW_SPAN_TYPE: semconv.MLFLOW_SPAN_TYPE_EVALUATOR,
    }


_INTERNAL = SpanKind.INTERNAL
"""Read once (an enum member read off its class is a call in Python 3.11), not per span."""

_START_ONLY_ATTRIBUTES: dict[str, AttributeValue] = {
    key: value for key, value in _start_attributes("").items() if key != semconv.GEN_AI_EVALUATION_NAME
}
"""The start's attributes a result does not set (:func:`record_attributes` sets the metric's name, none of these)."""
