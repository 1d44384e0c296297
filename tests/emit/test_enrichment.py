"""Root-span enrichment: the processor wraps the user's exporting processor and exports each invocation's root span
with ``gen_ai.evaluation.<metric>.score`` and ``.label`` attributes when the scores arrive in time, unchanged
otherwise."""

from __future__ import annotations

import re
import threading

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import AGENT_NAME, SCENARIOS, TravelAgent
from otel_eval.demo.golden import golden_eval_set
from otel_eval.emit.enrichment import label_attribute, score_attribute
from tests.judge.fake_gemini import FakeGemini, hang_reply
from tests.judge.helpers import make_judge
from tests.waiting import wait_until

ROOT = f"invoke_agent {AGENT_NAME}"


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials: judged default metrics are off."""


def _pipeline(**options: object) -> tuple[TracerProvider, InMemorySpanExporter, EvaluationSpanProcessor]:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    processor = EvaluationSpanProcessor(enrich=SimpleSpanProcessor(exported), tracer_provider=provider, **options)
    provider.add_span_processor(processor)  # the only processor: it feeds the user's one
    return provider, exported, processor


def _roots(exported: InMemorySpanExporter) -> list:
    return [s for s in exported.get_finished_spans() if s.name == ROOT]


def test_the_root_span_is_exported_with_its_scores() -> None:
    provider, exported, processor = _pipeline(
        criteria={"tool_trajectory_avg_score": 1.0},
        # Held past any pause of a loaded machine: released unscored, the root would be exported before the flush.
        settings=ProcessorSettings(eval_set=None),
        enrichment_wait_seconds=60.0,
    )
    TravelAgent(provider).run(SCENARIOS[0])
    assert [s for s in exported.get_finished_spans() if s.name.startswith("execute_tool")]  # children pass at once
    assert _roots(exported) == []  # the root waits for its scores
    assert processor.force_flush(60_000)
    (root,) = _roots(exported)
    assert root.attributes[score_attribute("tool_call_count_v1")] == 1.0
    assert root.attributes[score_attribute("inference_call_count_v1")] == 2.0
    assert root.attributes[score_attribute("token_usage_v1")] == 300.0
    assert root.attributes["gen_ai.evaluation.tool_call_count_v1.label"] == "informational"
    assert root.attributes["gen_ai.agent.name"] == AGENT_NAME  # the original attributes are kept
    evaluation_spans = [s for s in exported.get_finished_spans() if s.name.startswith("evaluate ")]
    assert evaluation_spans and all(s.parent.span_id == root.context.span_id for s in evaluation_spans)
    provider.shutdown()


def test_the_label_beside_the_score_tells_pass_from_fail_without_the_threshold() -> None:
    provider, exported, processor = _pipeline(
        criteria={"tool_trajectory_avg_score": 1.0}, settings=ProcessorSettings(eval_set=golden_eval_set())
    )
    agent = TravelAgent(provider)
    for scenario in SCENARIOS:
        agent.run(scenario)
    assert processor.force_flush(10_000)
    labels = {
        (
            root.attributes[score_attribute("tool_trajectory_avg_score")],
            root.attributes[label_attribute("tool_trajectory_avg_score")],
        )
        for root in _roots(exported)
        if score_attribute("tool_trajectory_avg_score") in root.attributes
    }
    assert labels == {(1.0, "pass"), (0.0, "fail")}
    provider.shutdown()


def test_scores_arrive_without_a_flush_within_the_wait() -> None:
    provider, exported, _processor = _pipeline(enrichment_wait_seconds=30)
    TravelAgent(provider).run(SCENARIOS[1])
    assert wait_until(lambda: len(_roots(exported)) == 1, timeout=20)
    assert score_attribute("tool_call_count_v1") in _roots(exported)[0].attributes
    provider.shutdown()


def test_the_root_is_exported_unchanged_when_the_scores_are_late() -> None:
    with FakeGemini(lambda model, body: hang_reply()) as server:
        judge = make_judge(server, timeout_seconds=300, max_total_seconds=600, max_attempts=1)
        provider, exported, processor = _pipeline(
            criteria={"hallucinations_v1": 0.8}, judge=judge, enrichment_wait_seconds=0.3
        )
        TravelAgent(provider).run(SCENARIOS[0])
        assert wait_until(lambda: len(_roots(exported)) == 1, timeout=20)
        (root,) = _roots(exported)
        assert not any(key.startswith("gen_ai.evaluation.") for key in root.attributes)
        processor.shutdown(timeout_millis=200)


def test_a_root_that_is_not_evaluated_passes_through_unchanged() -> None:
    provider, exported, _processor = _pipeline(
        settings=ProcessorSettings(agent_names=("another_agent",)), enrichment_wait_seconds=30
    )
    TravelAgent(provider).run(SCENARIOS[0])
    assert wait_until(lambda: len(_roots(exported)) == 1, timeout=20)  # long before the 30 s wait
    assert not any(key.startswith("gen_ai.evaluation.") for key in _roots(exported)[0].attributes)
    provider.shutdown()


def test_unsampled_traces_are_not_held() -> None:
    provider, exported, _processor = _pipeline(settings=ProcessorSettings(sample_rate=0.0), enrichment_wait_seconds=30)
    TravelAgent(provider).run(SCENARIOS[0])
    assert len(_roots(exported)) == 1  # passed straight through in on_end
    provider.shutdown()


def test_a_root_that_priority_sampling_rescues_is_held_for_its_scores() -> None:
    provider, exported, processor = _pipeline(settings=ProcessorSettings(sample_rate=0.0), enrichment_wait_seconds=30)
    with provider.get_tracer("web.server").start_as_current_span("POST /chat") as request:
        TravelAgent(provider).run(SCENARIOS[0])
        request.set_attribute("user.feedback", "thumbs_down")
    assert not [s for s in exported.get_finished_spans() if s.name == "POST /chat"]  # held: its scores will come
    assert processor.force_flush(10_000)
    (root,) = [s for s in exported.get_finished_spans() if s.name == "POST /chat"]
    assert root.attributes[score_attribute("tool_call_count_v1")] == 1.0
    provider.shutdown()


class _HangingShutdown(SimpleSpanProcessor):
    """An exporting processor whose shutdown waits until released (a collector that does not answer)."""

    def __init__(self) -> None:
        super().__init__(InMemorySpanExporter())
        self.release = threading.Event()

    def shutdown(self) -> None:
        self.release.wait(30)
        super().shutdown()


def test_shutdown_waits_for_the_wrapped_processor_only_within_its_budget() -> None:
    wrapped = _HangingShutdown()
    provider = TracerProvider()
    processor = EvaluationSpanProcessor(enrich=wrapped, tracer_provider=provider)
    provider.add_span_processor(processor)
    processor.shutdown(timeout_millis=100)  # returns though the wrapped shutdown still waits
    (waiting,) = [t for t in threading.enumerate() if t.name == "OtelEvalEnricherShutdown"]
    assert waiting.is_alive() and not wrapped.release.is_set()
    wrapped.release.set()
    waiting.join(10)
    assert not waiting.is_alive()


def test_every_thread_the_evaluation_starts_is_named_otel_eval_role() -> None:
    before = set(threading.enumerate())
    provider, exported, processor = _pipeline(criteria={"tool_trajectory_avg_score": 1.0})
    TravelAgent(provider).run(SCENARIOS[0])
    assert processor.force_flush(10_000) and _roots(exported)
    started = {t.name for t in set(threading.enumerate()) - before}
    assert {"OtelEvalSpanProcessor", "OtelEvalEmbeddedWorker"} <= started
    assert all(re.fullmatch(r"OtelEval[A-Z][A-Za-z]*(?:[-_]\d+)?", name) for name in started), started
    provider.shutdown()
