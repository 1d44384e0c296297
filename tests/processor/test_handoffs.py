"""How many threads an invocation crosses: without a judge, one (the agent's thread hands its spans to the
processor's thread, which rebuilds, scores and emits); with a judge, the judged request goes on to the embedded
worker's event loop."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from otel_eval import EvaluationSpanProcessor
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from tests.judge.fake_gemini import FakeGemini
from tests.processor.telemetry import Telemetry


class _ThreadRecorder:
    def __init__(self) -> None:
        self.records: list[EvaluationRecord] = []
        self.threads: set[str] = set()

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        self.records.extend(records)
        self.threads.add(threading.current_thread().name)


def _run(telemetry: Telemetry, sink: _ThreadRecorder, **options: object) -> EvaluationSpanProcessor:
    processor = EvaluationSpanProcessor(sinks=[sink], **telemetry.providers(), **options)  # type: ignore[arg-type]
    telemetry.tracer_provider.add_span_processor(processor)
    agent = TravelAgent(telemetry.tracer_provider)
    for scenario in SCENARIOS[:3]:
        agent.run(scenario)
    assert processor.force_flush(60_000)
    return processor


def test_without_a_judge_the_processor_thread_rebuilds_scores_and_emits(telemetry: Telemetry) -> None:
    sink = _ThreadRecorder()
    processor = _run(telemetry, sink)
    assert sink.threads == {"OtelEvalSpanProcessor"}
    assert len(sink.records) == 3 * len(EFFICIENCY_METRICS)
    assert len(telemetry.result_events()) == 3 * len(EFFICIENCY_METRICS)  # emitted there too
    processor.shutdown()


def test_a_judged_request_goes_on_to_the_embedded_workers_loop(
    telemetry: Telemetry, gemini_credentials: FakeGemini
) -> None:
    sink = _ThreadRecorder()
    processor = _run(telemetry, sink, criteria={"safety_v1": 0.5})
    assert sink.threads == {"OtelEvalEmbeddedWorker"}
    assert {r.metric_name for r in sink.records} == {"safety_v1", *EFFICIENCY_METRICS}
    processor.shutdown()
