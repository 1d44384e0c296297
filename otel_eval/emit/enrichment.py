"""Optional enrichment: the invocation's root span exported with ``gen_ai.evaluation.<metric>.score`` and
``gen_ai.evaluation.<metric>.label`` attributes (the label: ``pass``, ``fail``, ``not_evaluated`` or
``informational``, so pass and fail are told apart without knowing the threshold).

OpenTelemetry spans are read-only once ended, so the only way to put a score *on the agent's own span* is to
export a copy of it. :class:`RootSpanEnricher` wraps the user's exporting processor: every span passes straight
through, except sampled local root spans, which are held until the scores of the invocations under them arrive
(embedded mode) or ``wait_seconds`` pass, then exported -- with the score attributes, or unchanged.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.util.types import AttributeValue

from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval.model.messages import EvaluationRecord
from otel_eval.model.utf8_json import utf8_text

logger = logging.getLogger(__name__)

DEFAULT_MAX_HELD_SPANS = 1024


@dataclass(slots=True)
class _Held:
    span: ReadableSpan
    deadline: float
    waiting_for: set[tuple[str, str]] | None = None
    """(trace id, span id) of invocations whose records are awaited; None until the processor says which."""
    scores: dict[str, AttributeValue] = field(default_factory=dict)


def score_attribute(metric_name: str) -> str:
    """``gen_ai.evaluation.<metric>.score``."""
    return semconv.OTEL_EVAL_SCORE_ATTRIBUTE_TEMPLATE.format(metric=metric_name)


def label_attribute(metric_name: str) -> str:
    """``gen_ai.evaluation.<metric>.label``."""
    return semconv.OTEL_EVAL_LABEL_ATTRIBUTE_TEMPLATE.format(metric=metric_name)


_ENRICHMENT_AFFIXES = tuple(
    template.partition("{metric}")[::2]
    for template in (semconv.OTEL_EVAL_SCORE_ATTRIBUTE_TEMPLATE, semconv.OTEL_EVAL_LABEL_ATTRIBUTE_TEMPLATE)
)


def is_enrichment_attribute(key: str) -> bool:
    """Whether ``key`` is one of the attributes enrichment adds (a metric's ``.score`` or ``.label``)."""
    return any(key.startswith(prefix) and key.endswith(suffix) for prefix, suffix in _ENRICHMENT_AFFIXES)


def enrichment_attributes(record: EvaluationRecord) -> dict[str, AttributeValue]:
    """What one record adds to its root span: the metric's label, and its score when it has one."""
    label, score = _attribute_names(record.metric_name)
    attributes: dict[str, AttributeValue] = {label: record.label}
    if record.score is not None:
        attributes[score] = record.score
    return attributes


@functools.lru_cache(maxsize=256)
def _attribute_names(metric_name: str) -> tuple[str, str]:
    """(:func:`label_attribute`, :func:`score_attribute`) of a metric: spelled once per metric, not per record."""
    name = utf8_text(metric_name)  # the OTLP encoder drops an attribute whose key holds a lone surrogate
    return label_attribute(name), score_attribute(name)


def with_attributes(span: ReadableSpan, extra: dict[str, AttributeValue]) -> ReadableSpan:
    """A copy of the ended ``span`` with ``extra`` attributes added."""
    attributes = dict(span.attributes or {})
    attributes.update(extra)
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class RootSpanEnricher:
    """Holds local root spans for the wrapped processor until their invocations' scores arrive.

    Args:
        wrapped: The user's exporting processor (e.g. a ``BatchSpanProcessor``); it gets every span.
        wait_seconds: How long a root span is held for its scores before it is exported unchanged.
        max_held: Root spans held at once; beyond that they pass through unchanged at once.
    """

    def __init__(self, wrapped: SpanProcessor, *, wait_seconds: float, max_held: int = DEFAULT_MAX_HELD_SPANS) -> None:
        if wait_seconds < 0:
            raise ValueError("wait_seconds must not be negative")
        self.wrapped = wrapped
        self.wait_seconds = wait_seconds
        self._max_held = max_held
        self._held: dict[tuple[int, int], _Held] = {}
        self._by_invocation: dict[tuple[str, str], tuple[int, int]] = {}
        self._lock = threading.Lock()
        reinit_after_fork(self._at_fork_reinit)

    def _at_fork_reinit(self) -> None:
        self._lock = threading.Lock()  # a fork while another thread held it would leave it held in the child

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Passes the start through."""
        self.wrapped.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan, *, hold: bool) -> None:
        """Holds ``span`` when asked to (a sampled local root) and there is room; else passes it through."""
        if hold and self.wait_seconds > 0 and span.context is not None:
            key = (span.context.trace_id, span.context.span_id)
            with self._lock:
                if len(self._held) < self._max_held:
                    self._held[key] = _Held(span, time.monotonic() + self.wait_seconds)
                    return
        self.wrapped.on_end(span)

    def expect(self, trace_id: int, root_span_id: int, invocations: Iterable[tuple[str, str]]) -> None:
        """The root's subtree was handed on with these invocations (hex trace id, span id); none: release now."""
        key = (trace_id, root_span_id)
        wanted = set(invocations)
        with self._lock:
            held = self._held.get(key)
            if held is None:
                return
            if wanted:
                held.waiting_for = wanted
                for invocation in wanted:
                    self._by_invocation[invocation] = key
                return
            del self._held[key]
        self.wrapped.on_end(held.span)

    def release(self, trace_id: int, root_span_id: int) -> None:
        """Exports a held root unchanged (its trace was filtered out, dropped or not handed on)."""
        with self._lock:
            held = self._held.pop((trace_id, root_span_id), None)
            if held is not None:
                self._forget(held)
        if held is not None:
            self.wrapped.on_end(held.span)

    def complete(self, trace_id: int, root_span_id: int, attributes: dict[str, AttributeValue]) -> None:
        """Exports a held root with ``attributes`` (its scores, worked out elsewhere: by the enricher of the
        evaluation process with ``isolation="process"``); unchanged when they are empty."""
        with self._lock:
            held = self._held.pop((trace_id, root_span_id), None)
            if held is not None:
                self._forget(held)
        if held is not None:
            held.scores.update(attributes)
            self._export(held)

    def on_records(self, records: Sequence[EvaluationRecord]) -> None:
        """A request's records (a sink of the worker core): adds their scores; exports the root when complete."""
        ready: list[_Held] = []
        with self._lock:
            for record in records:
                invocation = (record.trace_id, record.span_id)
                key = self._by_invocation.get(invocation)
                held = self._held.get(key) if key is not None else None
                if held is None or held.waiting_for is None:
                    continue
                held.scores.update(enrichment_attributes(record))
            for invocation in {(r.trace_id, r.span_id) for r in records}:
                key = self._by_invocation.pop(invocation, None)
                held = self._held.get(key) if key is not None else None
                if held is None or held.waiting_for is None:
                    continue
                held.waiting_for.discard(invocation)
                if not held.waiting_for and key is not None:
                    ready.append(self._held.pop(key))
        for held in ready:
            self._export(held)

    def release_expired(self, now: float | None = None) -> int:
        """Exports (unchanged, or with the scores that did arrive) every root whose wait passed. Returns how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            expired = [key for key, held in self._held.items() if held.deadline <= now]
            released = [self._held.pop(key) for key in expired]
            for held in released:
                self._forget(held)
        for held in released:
            self._export(held)
        return len(released)

    @property
    def held_count(self) -> int:
        """Root spans currently held."""
        return len(self._held)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Exports every held root now (scores so far), then flushes the wrapped processor."""
        self.release_expired(float("inf"))
        return self.wrapped.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Exports every held root, then shuts the wrapped processor down, waiting for it at most ``timeout_millis``.

        The wrapped processor's own shutdown takes no timeout (an unreachable collector can hold it for its export
        timeout), so it runs on a daemon thread (``OtelEvalEnricherShutdown``) that is left to finish past that.
        """
        self.release_expired(float("inf"))
        thread = threading.Thread(target=self.wrapped.shutdown, name="OtelEvalEnricherShutdown", daemon=True)
        thread.start()
        thread.join(max(0, timeout_millis) / 1000)

    def _forget(self, held: _Held) -> None:
        for invocation in held.waiting_for or ():
            self._by_invocation.pop(invocation, None)

    def _export(self, held: _Held) -> None:
        span = with_attributes(held.span, held.scores) if held.scores else held.span
        try:
            self.wrapped.on_end(span)
        except Exception:  # the wrapped processor is the user's: its failure must not stop ours
            logger.exception("the wrapped span processor failed on an enriched root span")
