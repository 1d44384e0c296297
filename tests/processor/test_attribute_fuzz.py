"""Span attributes of every OpenTelemetry type (and oversized, ill-typed or not-JSON values) under the keys the ADK,
GenAI, OpenInference and OpenLLMetry conventions read, on a real agent's spans: ``span.end()`` never raises into the
agent, and every invocation is handed on (here: to an in-memory exporter) or counted as dropped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.model.messages import EvaluationRequest
from otel_eval.transport import InMemoryInvocationExporter
from otel_eval.worker.consumer import parse_request

KEYS = [
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.id",
    "gen_ai.conversation.id",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "traceloop.span.kind",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "tool.name",
    "tool.parameters",
    "tool.description",
    "session.id",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.tool_response",
    "gcp.vertex.agent.invocation_id",
    "otel_eval.priority.reason",
]
JSON_TEXTS = [
    '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]',
    '[{"role":"assistant","parts":[{"type":"tool_call","name":"t","arguments":5}]}]',
    '{"contents":[{"role":"user","parts":[{"text":"q"}]}]}',
    '{"content":{"parts":[{"function_call":{"name":"f","args":"x"}}]}}',
    '[{"role":"user","content":[{"type":"text","text":7}]}]',
    '{"a":',
    "null",
    "[]",
    '"s"',
]
SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from([*JSON_TEXTS, "invoke_agent", "execute_tool", "chat", "AGENT", "TOOL", "x" * 100_000, "\ud800"])
)
VALUES = SCALARS | st.lists(st.booleans(), max_size=3) | st.lists(st.integers(-5, 5), max_size=3)
VALUES |= st.lists(st.floats(), max_size=3) | st.lists(st.sampled_from(JSON_TEXTS), max_size=3)
ATTRIBUTES = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6)
SPAN = st.tuples(st.sampled_from(["execute_tool get_weather", "chat gemini", "call_llm", "tool"]), ATTRIBUTES)


@pytest.fixture(scope="module")
def pipeline() -> Iterator[tuple[TracerProvider, EvaluationSpanProcessor, InMemoryInvocationExporter]]:
    provider, exporter = TracerProvider(), InMemoryInvocationExporter()
    processor = EvaluationSpanProcessor(exporter=exporter, settings=ProcessorSettings(trace_idle_timeout=3600))
    provider.add_span_processor(processor)
    yield provider, processor, exporter
    provider.shutdown()


def _handed_on_or_counted(processor: EvaluationSpanProcessor, exporter: InMemoryInvocationExporter) -> int:
    dropped = sum(v for k, v in processor.stats().items() if k.startswith("invocations.dropped."))
    return len(exporter.get_finished_requests()) + dropped


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(root=ATTRIBUTES, children=st.lists(SPAN, max_size=4))
def test_any_attribute_values_never_raise_and_the_invocation_is_handed_on_or_counted(
    pipeline: tuple[TracerProvider, EvaluationSpanProcessor, InMemoryInvocationExporter],
    root: dict[str, Any],
    children: list[tuple[str, dict[str, Any]]],
) -> None:
    provider, processor, exporter = pipeline
    before = _handed_on_or_counted(processor, exporter)
    tracer = provider.get_tracer("fuzzed")
    root = root | {"gen_ai.operation.name": "invoke_agent"}
    root = {k: v for k, v in root.items() if not k.startswith(("gcp.vertex.agent.", "openinference.", "traceloop."))}
    with tracer.start_as_current_span("invoke_agent weather_agent", attributes=root) as span:  # an invocation
        trace_id = format(span.get_span_context().trace_id, "032x")
        for name, attributes in children:
            kind = {"gen_ai.operation.name": "chat"} if name.startswith("chat") else {}
            tracer.start_span(name, attributes=attributes | kind).end()
    assert processor.force_flush(30_000)
    assert _handed_on_or_counted(processor, exporter) >= before + 1  # ADK invocation ids may name more
    handed_on: list[EvaluationRequest] = exporter.get_finished_requests()
    if handed_on and handed_on[-1].trace_id == trace_id:  # as it travels on Kafka, it reads back as written
        written = handed_on[-1].to_wire()
        assert parse_request(written, "fuzzed").to_wire() == written
