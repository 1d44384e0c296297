"""Building traces with the real OpenTelemetry SDK (TracerProvider + InMemorySpanExporter) for reconstruction tests.

Times are explicit and increase by 1 ms per call to :meth:`TraceRecorder.tick`, so span order is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.model import TracedInvocation, content_text
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import Span, spans_from_readable


def as_json(value: Any) -> str:
    """A JSON string attribute value."""
    return json.dumps(value)


class TraceRecorder:
    """Records spans through a real SDK pipeline and hands them back in the internal span form."""

    def __init__(self, scope: str = "test-agent-app") -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(scope)
        self.clock = 1_700_000_000_000_000_000

    def tick(self) -> int:
        self.clock += 1_000_000
        return self.clock

    @contextmanager
    def span(
        self,
        name: str,
        attributes: Mapping[str, Any] | None = None,
        *,
        parent: trace.Span | None = None,
        new_trace: bool = False,
    ) -> Iterator[trace.Span]:
        """A span started now and ended when the block exits. Without ``parent`` it is a child of the current span."""
        if new_trace:
            context = trace.set_span_in_context(trace.INVALID_SPAN)
        elif parent is not None:
            context = trace.set_span_in_context(parent)
        else:
            context = None
        span = self.tracer.start_span(name, context=context, attributes=dict(attributes or {}), start_time=self.tick())
        with trace.use_span(span, end_on_exit=False):
            yield span
        span.end(end_time=self.tick())

    def event(self, span: trace.Span, name: str, attributes: Mapping[str, Any]) -> None:
        """An event on ``span`` at the next tick."""
        span.add_event(name, attributes=dict(attributes), timestamp=self.tick())

    def spans(self, *, drop: set[str] | None = None) -> list[Span]:
        """The finished spans in the internal form; spans named in ``drop`` are left out (to lose a parent)."""
        finished = [s for s in self.exporter.get_finished_spans() if s.name not in (drop or set())]
        return spans_from_readable(finished)


def rebuilt_invocations(spans: list[Span], convention: str) -> list[TracedInvocation]:
    """The invocations of a one-trace recording, asserting the convention it was read as."""
    traces = rebuild_traces(spans)
    assert [t.convention for t in traces] == [convention]
    return traces[0].invocations


def only_invocation(spans: list[Span], convention: str) -> TracedInvocation:
    """The single invocation of a one-trace recording (see :func:`rebuilt_invocations`)."""
    invocations = rebuilt_invocations(spans, convention)
    assert len(invocations) == 1, invocations
    return invocations[0]


def trajectory(inv: TracedInvocation) -> dict[str, Any]:
    """What the convention tests compare: user text, tool calls and responses, intermediate and final texts."""
    data = inv.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_uses")
    return {
        "user": content_text(inv.invocation.user_content),
        "calls": [(c.name, c.args, c.id) for c in data.tool_uses],
        "responses": [(r.name, r.response, r.id) for r in data.tool_responses],
        "intermediate": [(a, [p.text for p in parts]) for a, parts in data.intermediate_responses],
        "final": content_text(inv.invocation.final_response),
    }
