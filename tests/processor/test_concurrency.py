"""Multi-threaded and asyncio agents: invocations interleave, and spans of one trace end on different threads."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, defaultdict

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_eval import EvaluationSpanProcessor
from otel_eval.demo import AGENT_NAME, SCENARIOS, TravelAgent
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from tests.processor.telemetry import Telemetry, hex_id

THREADS = 4
RUNS_PER_THREAD = 6


class EndingThreads(SpanProcessor):
    """Records which thread ended each span, per trace."""

    def __init__(self) -> None:
        self.threads: dict[int, set[int]] = defaultdict(set)

    def on_end(self, span: ReadableSpan) -> None:
        self.threads[span.context.trace_id].add(threading.get_ident())


def _attach(telemetry: Telemetry) -> tuple[EvaluationSpanProcessor, list[EvaluationRecord]]:
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(sinks=[records.extend], **telemetry.providers())
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    return processor, records


def _check_every_invocation_scored(telemetry: Telemetry, records: list[EvaluationRecord], expected: int) -> None:
    invocations = [s for s in telemetry.finished_spans() if s.name == f"invoke_agent {AGENT_NAME}"]
    assert len(invocations) == expected
    per_invocation = Counter((r.trace_id, r.span_id) for r in records)
    assert set(per_invocation) == {(hex_id(s.context.trace_id, 32), hex_id(s.context.span_id, 16)) for s in invocations}
    assert set(per_invocation.values()) == {len(EFFICIENCY_METRICS)}
    tool_counts = {(r.trace_id, r.span_id): r.score for r in records if r.metric_name == "tool_call_count_v1"}
    expected_counts = sorted(len(s.tool_steps) for s in SCENARIOS) * (expected // len(SCENARIOS))
    assert sorted(tool_counts.values()) == sorted(float(c) for c in expected_counts)


def test_agents_on_several_threads_with_tools_on_a_thread_pool(telemetry: Telemetry) -> None:
    ending = EndingThreads()
    telemetry.tracer_provider.add_span_processor(ending)
    processor, records = _attach(telemetry)
    agent = TravelAgent(telemetry.tracer_provider, parallel_tools=True)  # tool spans end on pool threads
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for index in range(RUNS_PER_THREAD):
                agent.run(SCENARIOS[(offset + index) % len(SCENARIOS)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    agent.close()
    assert errors == []
    assert max(len(threads) for threads in ending.threads.values()) >= 2  # one trace, several ending threads
    assert processor.force_flush(30_000)
    _check_every_invocation_scored(telemetry, records, THREADS * RUNS_PER_THREAD)
    processor.shutdown()


async def test_interleaved_asyncio_agents(telemetry: Telemetry) -> None:
    processor, records = _attach(telemetry)
    agent = TravelAgent(telemetry.tracer_provider)
    runs = [agent.arun(SCENARIOS[index % len(SCENARIOS)]) for index in range(4 * len(SCENARIOS))]
    answers = await asyncio.gather(*runs)
    assert len(answers) == 4 * len(SCENARIOS)
    assert await asyncio.to_thread(processor.force_flush, 30_000)
    _check_every_invocation_scored(telemetry, records, 4 * len(SCENARIOS))
    processor.shutdown()
