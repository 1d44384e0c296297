"""What the hostile-trace tests share: every reader of a raw span list, and what a rebuild of a hostile document must
keep (the intact invocation beside it, no convention failed)."""

from __future__ import annotations

import json
from collections.abc import Callable

from otel_eval.model import content_text
from otel_eval.reconstruct import TraceInvocations
from otel_eval.traces import Span, read_trace_bytes, spans_from_readable
from tests.data.hostile import shapes
from tests.data.hostile.shapes import GOOD_TRACE, RawSpan


def _read_bytes(data: bytes) -> list[Span]:
    return read_trace_bytes(data, source="hostile").spans


READERS: dict[str, Callable[[list[RawSpan]], list[Span]]] = {
    "otlp_json": lambda raw: _read_bytes(json.dumps(shapes.otlp_json(raw)).encode()),
    "otlp_proto": lambda raw: _read_bytes(shapes.otlp_proto(raw)),
    "jaeger_json": lambda raw: _read_bytes(json.dumps(shapes.jaeger_json(raw)).encode()),
    "span_dicts": lambda raw: _read_bytes(json.dumps(shapes.span_dicts(raw)).encode()),
    "readable": lambda raw: spans_from_readable(shapes.readable_spans(raw)),
}


def by_trace(traces: list[TraceInvocations]) -> dict[str, TraceInvocations]:
    return {t.trace_id: t for t in traces}


def assert_good_invocation_rebuilt(traces: list[TraceInvocations], convention: str) -> None:
    good = by_trace(traces)[GOOD_TRACE]
    assert good.convention == convention, good.warnings
    [traced] = good.invocations
    data = traced.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_uses")
    assert content_text(traced.invocation.user_content) == shapes.USER_TEXT
    assert content_text(traced.invocation.final_response) == shapes.FINAL_TEXT
    assert [(c.name, c.args) for c in data.tool_uses] == [("get_weather", {"city": "Paris"})]
    assert [r.response for r in data.tool_responses] == [{"sky": "sunny"}]


def assert_no_convention_failed(traces: list[TraceInvocations]) -> None:
    for trace in traces:
        assert not [w for w in trace.warnings if "reconstruction failed" in w], trace.warnings
