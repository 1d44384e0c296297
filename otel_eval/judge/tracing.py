"""Spans for judge calls: ``generate_content {model}`` children of the evaluation span being run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer

from otel_eval import semconv

GEMINI_PROVIDER = "gcp.gemini"
VERTEX_PROVIDER = "gcp.vertex_ai"

_evaluation_tracer: ContextVar[Tracer | None] = ContextVar("otel_eval_evaluation_tracer", default=None)


@contextmanager
def evaluation_tracer(tracer: Tracer) -> Iterator[None]:
    """Makes ``tracer`` (the one evaluation spans are made with) current for the body, so the judge's spans are made on
    the same provider as the evaluation span they are children of (the emitter of evaluation spans sets it)."""
    token = _evaluation_tracer.set(tracer)
    try:
        yield
    finally:
        _evaluation_tracer.reset(token)


def current_evaluation_tracer() -> Tracer | None:
    """The tracer of the evaluation span being run, or None outside one."""
    return _evaluation_tracer.get()


@contextmanager
def judge_call_span(model: str, *, vertex: bool, metric: str) -> Iterator[Span | None]:
    """A CLIENT span for one judge call (with its retries), made on the evaluation span's tracer; None outside one."""
    tracer = current_evaluation_tracer()
    if tracer is None:
        yield None
        return
    attributes = {
        semconv.GEN_AI_OPERATION_NAME: "generate_content",
        semconv.GEN_AI_PROVIDER_NAME: VERTEX_PROVIDER if vertex else GEMINI_PROVIDER,
        semconv.GEN_AI_REQUEST_MODEL: model,
        semconv.GEN_AI_EVALUATION_NAME: metric,
    }
    with tracer.start_as_current_span(
        f"generate_content {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield span


def finish_judge_call_span(
    span: Span | None, *, outcome: str, input_tokens: int | None = None, output_tokens: int | None = None,
    error_type: str | None = None,
) -> None:  # fmt: skip
    """Records a judge call's outcome (ok, cached or error), its token usage and its ``error.type``."""
    if span is None:
        return
    span.set_attribute(semconv.OTEL_EVAL_OUTCOME, outcome)
    if input_tokens is not None:
        span.set_attribute(semconv.GEN_AI_USAGE_INPUT_TOKENS, input_tokens)
    if output_tokens is not None:
        span.set_attribute(semconv.GEN_AI_USAGE_OUTPUT_TOKENS, output_tokens)
    if error_type is not None:
        span.set_attribute(semconv.ERROR_TYPE, error_type)
        span.set_status(StatusCode.ERROR, error_type)
