"""Spans for judge calls: ``generate_content {model}`` CLIENT spans, one per call, made for the evaluation span being
run.

By default they go into a trace of their own (:data:`~otel_eval.judge.settings.JudgeSettings.own_trace`): a
``judge {metric}`` root span, started at the evaluation's first judge call and ended with the evaluation span, is
their parent. The root links to the ``evaluate {metric}`` span (a span link, given at its start) and carries its ids;
the evaluate span gets a link back to the root (added before it ends, as the SDK allows) and the judge trace's id.
So a backend that sums token usage or cost per trace shows the agent's trace with the agent's own usage, and the
judge's in a trace beside it. With ``own_trace=False`` the calls are children of the evaluate span, in the agent's
trace.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, StatusCode, Tracer

from otel_eval import semconv

GEMINI_PROVIDER = "gcp.gemini"
VERTEX_PROVIDER = "gcp.vertex_ai"


@dataclass
class _EvaluationScope:
    """The evaluation span being run, and the root of its judge trace once a judge call made one."""

    tracer: Tracer
    span: Span
    metric: str
    judge_root: Span | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def judge_root_span(self) -> Span:
        """The ``judge {metric}`` root of this evaluation's judge trace, started by its first call."""
        with self.lock:
            if self.judge_root is None:
                evaluated = self.span.get_span_context()
                attributes = {
                    semconv.GEN_AI_EVALUATION_NAME: self.metric,
                    semconv.OTEL_EVAL_EVALUATION_TRACE_ID: format(evaluated.trace_id, "032x"),
                    semconv.OTEL_EVAL_EVALUATION_SPAN_ID: format(evaluated.span_id, "016x"),
                    # typed as the evaluate span is, so a backend's trace list tells judge traces from the agent's
                    semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_SPAN_KIND_EVALUATOR,
                    semconv.MLFLOW_SPAN_TYPE: semconv.MLFLOW_SPAN_TYPE_EVALUATOR,
                }
                self.judge_root = self.tracer.start_span(
                    judge_span_name(self.metric),
                    # no parent span: a new trace (the rest of the context, e.g. suppressed instrumentation, kept)
                    context=trace.set_span_in_context(trace.INVALID_SPAN),
                    kind=SpanKind.INTERNAL,
                    attributes=attributes,
                    links=[Link(evaluated, {semconv.OTEL_EVAL_LINK_TYPE: semconv.LINK_TYPE_EVALUATION})],
                )
            return self.judge_root

    def close(self) -> None:
        """Links the evaluate span to the judge trace (before the evaluate span ends) and ends the judge root."""
        with self.lock:
            root, self.judge_root = self.judge_root, None
        if root is None:
            return
        judged = root.get_span_context()
        self.span.add_link(judged, {semconv.OTEL_EVAL_LINK_TYPE: semconv.LINK_TYPE_JUDGE})
        self.span.set_attribute(semconv.OTEL_EVAL_JUDGE_TRACE_ID, format(judged.trace_id, "032x"))
        root.end()


_evaluation_scope: ContextVar[_EvaluationScope | None] = ContextVar("otel_eval_evaluation_scope", default=None)


def judge_span_name(metric: str) -> str:
    """``judge {metric}``: the root span of an evaluation's judge trace."""
    return f"{semconv.JUDGE_SPAN_NAME_PREFIX} {metric}"


@contextmanager
def evaluation_tracer(tracer: Tracer, span: Span, metric: str) -> Iterator[None]:
    """Makes ``span`` (an evaluation span made with ``tracer``) the one judge calls in the body are traced for, on the
    same provider (the emitter of evaluation spans sets it). Exit before ``span`` ends: it closes the judge trace and
    links ``span`` to it."""
    scope = _EvaluationScope(tracer, span, metric)
    token = _evaluation_scope.set(scope)
    try:
        yield
    finally:
        _evaluation_scope.reset(token)
        scope.close()


def current_evaluation_tracer() -> Tracer | None:
    """The tracer of the evaluation span being run, or None outside one."""
    scope = _evaluation_scope.get()
    return scope.tracer if scope is not None else None


@contextmanager
def judge_call_span(
    model: str, *, provider: str | None = None, vertex: bool = False, metric: str, own_trace: bool = True
) -> Iterator[Span | None]:
    """A CLIENT span for one judge call (with its retries), made on the evaluation span's tracer; None outside one.

    ``provider`` is its ``gen_ai.provider.name`` (``openai``, ``anthropic``, ``gcp.gemini``, …; without it, Gemini's:
    ``gcp.vertex_ai`` when ``vertex``). With ``own_trace`` it is a child of the evaluation's judge trace root, else of
    the evaluation span (current).
    """
    scope = _evaluation_scope.get()
    if scope is None:
        yield None
        return
    attributes = {
        semconv.GEN_AI_OPERATION_NAME: "generate_content",
        semconv.GEN_AI_PROVIDER_NAME: provider or (VERTEX_PROVIDER if vertex else GEMINI_PROVIDER),
        semconv.GEN_AI_REQUEST_MODEL: model,
        semconv.GEN_AI_EVALUATION_NAME: metric,
    }
    parent = trace.set_span_in_context(scope.judge_root_span()) if own_trace else None
    with scope.tracer.start_as_current_span(
        f"generate_content {model}",
        context=parent,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield span


def finish_judge_call_span(
    span: Span | None, *, outcome: str, input_tokens: int | None = None, output_tokens: int | None = None,
    error_type: str | None = None, response_model: str | None = None,
) -> None:  # fmt: skip
    """Records a judge call's outcome (ok, cached or error), its token usage, the model that answered
    (``gen_ai.response.model``, as the server reports it) and its ``error.type``."""
    if span is None:
        return
    span.set_attribute(semconv.OTEL_EVAL_OUTCOME, outcome)
    if input_tokens is not None:
        span.set_attribute(semconv.GEN_AI_USAGE_INPUT_TOKENS, input_tokens)
    if output_tokens is not None:
        span.set_attribute(semconv.GEN_AI_USAGE_OUTPUT_TOKENS, output_tokens)
    if response_model:
        span.set_attribute(semconv.GEN_AI_RESPONSE_MODEL, response_model)
    if error_type is not None:
        span.set_attribute(semconv.ERROR_TYPE, error_type)
        span.set_status(StatusCode.ERROR, error_type)
