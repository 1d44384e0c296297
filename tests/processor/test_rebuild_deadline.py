"""A trace that is pathologically slow to rebuild is dropped and counted (``rebuild_timeout``) on the processor's
background thread, and the traces behind it are still evaluated.

The pathological trace is valid but huge (a 60,000-span chain of agent spans) and the rebuild deadline
(:data:`otel_eval.processor._assembler.DEFAULT_REBUILD_TIMEOUT`) is set small, so the test holds however fast
reconstruction gets.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from otel_eval.processor import _assembler as assembler
from tests.processor.telemetry import Telemetry, hex_id

CHAIN = 60_000


def test_a_trace_past_its_rebuild_deadline_is_dropped_and_the_traces_behind_it_are_evaluated(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assembler, "DEFAULT_REBUILD_TIMEOUT", 0.1)  # small: the chain takes seconds to rebuild
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        sinks=[records.extend],
        settings=ProcessorSettings(max_spans_per_trace=CHAIN + 1, max_pending_spans=CHAIN + 1_000),
        **telemetry.providers(),
    )
    telemetry.tracer_provider.add_span_processor(processor)
    tracer = telemetry.tracer_provider.get_tracer("poison")
    chain = [tracer.start_span("invoke_agent poison", attributes={semconv.GEN_AI_OPERATION_NAME: "invoke_agent"})]
    for index in range(1, CHAIN):
        operation = "invoke_agent" if index % 2 == 0 else "execute_tool"
        chain.append(
            tracer.start_span(
                f"{operation} poison",
                context=trace.set_span_in_context(chain[-1]),
                attributes={semconv.GEN_AI_OPERATION_NAME: operation},
            )
        )
    for span in reversed(chain):  # the root ends last: the whole chain is handed on at once
        span.end()
    poison_trace = hex_id(chain[0].get_span_context().trace_id, 32)
    agent = TravelAgent(telemetry.tracer_provider)
    for index, scenario in enumerate(SCENARIOS[:3]):
        agent.run(scenario, conversation_id=f"behind-{index}")
    assert processor.force_flush(60_000)

    stats = processor.stats()
    assert stats[f"invocations.dropped.{semconv.DROP_REBUILD_TIMEOUT}"] == 1
    assert stats[f"spans.dropped.{semconv.DROP_REBUILD_TIMEOUT}"] == CHAIN
    assert poison_trace not in {r.trace_id for r in records}
    assert len({r.trace_id for r in records}) == 3  # the three traces behind it
    assert {r.metric_name for r in records} == set(EFFICIENCY_METRICS)
    processor.shutdown()
