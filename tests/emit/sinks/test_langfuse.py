"""The ``langfuse`` sink against a loopback server speaking Langfuse's documented public API (``loopback_langfuse``):
no Langfuse server can run here, so this checks the requests it makes, not Langfuse's handling of them."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.emit.sinks import BatchingSink
from otel_eval.emit.sinks.langfuse import LangfuseBackend
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker.service import build_core
from tests.emit.sinks import recipe
from tests.emit.sinks.agent import run_evaluated_agent
from tests.emit.sinks.loopback_langfuse import PUBLIC_KEY, SECRET_KEY, LoopbackLangfuse
from tests.waiting import wait_until
from tests.worker._core_helpers import request, traced
from tests.worker._harness import MemoryTelemetry, worker_settings

pytestmark = pytest.mark.usefixtures("clean_genai_env")


@pytest.fixture
def langfuse() -> LoopbackLangfuse:
    with LoopbackLangfuse() as server:
        yield server


def _scored(records: list[EvaluationRecord]) -> list[EvaluationRecord]:
    return [r for r in records if r.label != "informational"]


def test_every_result_of_a_live_agent_is_one_score_on_its_trace_and_observation(
    langfuse: LoopbackLangfuse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EVAL_SINKS", "langfuse")
    monkeypatch.setenv("LANGFUSE_BASE_URL", langfuse.base_url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    records = _scored(run_evaluated_agent(None))
    scores = list(langfuse.scores.values())
    assert len(scores) == len(records)
    by_key = {(s["traceId"], s["observationId"], s["name"]): s for s in scores}
    for record in records:
        score = by_key[(record.trace_id, record.span_id, record.metric_name)]
        if record.score is None:
            assert score["dataType"] == "CATEGORICAL" and score["value"] == (record.verdict or record.label)
        else:
            assert score["dataType"] == "NUMERIC" and score["value"] == record.score
        assert score["metadata"]["otel_eval.result.id"] == record.result_id
        assert score.get("comment") == (record.explanation or record.error_type)
    assert {s["metadata"]["otel_eval.evaluator.type"] for s in scores} == {"llm_judge", "deterministic"}


def test_a_re_evaluation_replaces_the_score_instead_of_adding_one(langfuse: LoopbackLangfuse) -> None:
    records = _scored(run_evaluated_agent(None))
    first = BatchingSink(LangfuseBackend(langfuse.base_url, PUBLIC_KEY, SECRET_KEY))
    first(records)
    assert first.force_flush(10_000)
    again = [
        r.model_copy(update={"score": 0.5, "result_id": r.result_id[::-1]}) for r in records if r.score is not None
    ]
    second = BatchingSink(LangfuseBackend(langfuse.base_url, PUBLIC_KEY, SECRET_KEY))
    second(again)
    assert second.force_flush(10_000)
    assert len(langfuse.scores) == len(records)
    assert langfuse.posts == len(records) + len(again)
    assert {s["value"] for s in langfuse.scores.values() if s["dataType"] == "NUMERIC"} == {0.5}


def test_two_invocations_of_one_trace_keep_their_own_scores_and_a_changed_evaluator_replaces_its_own(
    langfuse: LoopbackLangfuse,
) -> None:
    record = _scored(run_evaluated_agent(None))[0]
    second = record.model_copy(update={"span_id": "f" * 16, "score": 0.125, "result_id": "second"})
    renewed = record.model_copy(
        update={"score": 0.25, "result_id": "renewed", "evaluator_id": "x/changed", "evaluator_version": "v-next"}
    )
    sink = BatchingSink(LangfuseBackend(langfuse.base_url, PUBLIC_KEY, SECRET_KEY))
    sink([record, second])
    assert sink.force_flush(10_000)
    sink([renewed])
    assert sink.force_flush(10_000)
    by_observation = {s["observationId"]: s for s in langfuse.scores.values()}
    assert len(langfuse.scores) == 2  # one per (trace, span, metric): the renewed score replaced the first
    assert by_observation[record.span_id]["value"] == 0.25
    assert by_observation["f" * 16]["value"] == 0.125


def test_a_backend_down_for_a_while_costs_two_log_lines_and_no_caller_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="otel_eval")
    records = _scored(run_evaluated_agent(None))
    server = LoopbackLangfuse().start()
    url = server.base_url
    server.stop()  # down: connections refused on its port
    sink = BatchingSink(LangfuseBackend(url, PUBLIC_KEY, SECRET_KEY), backoff=(0.05, 0.3))
    started = time.monotonic()
    for record in records:
        sink([record])
    assert time.monotonic() - started < 0.5, "queuing must not wait for the backend"
    assert wait_until(lambda: sink.stats().get("failed_attempts.unreachable", 0) >= 5, 10)
    back = LoopbackLangfuse(int(url.rsplit(":", 1)[1])).start()
    try:
        assert sink.force_flush(20_000)
        assert len(back.scores) == len(records)
    finally:
        back.stop()
    lines = [r for r in caplog.records if r.name.startswith("otel_eval.emit.sinks") and r.levelno >= logging.INFO]
    assert [r.levelname for r in lines] == ["WARNING", "INFO"], [r.getMessage() for r in lines]
    assert "unreachable" in lines[0].getMessage() and "reachable again" in lines[1].getMessage()
    assert sink.stats()["delivered"] == len(records)
    assert not any(key.startswith("dropped") for key in sink.stats())
    assert all(SECRET_KEY not in r.getMessage() for r in caplog.records)


def test_at_shutdown_the_scores_held_after_a_failed_attempt_are_tried_at_once_not_after_the_backoff(
    langfuse: LoopbackLangfuse,
) -> None:
    """A backend that failed a moment ago (Phoenix stalled past the read timeout, under load) and answers now: the
    exit's few seconds go to delivering, not to waiting out a backoff longer than they are."""
    langfuse.unavailable = True  # 503: the batch is held and the sink backs off for 30 s
    sink = BatchingSink(LangfuseBackend(langfuse.base_url, PUBLIC_KEY, SECRET_KEY), backoff=(30.0, 30.0))
    records = _scored(run_evaluated_agent(None))
    sink(records)
    assert wait_until(lambda: sink.stats().get("failed_attempts.unreachable", 0) >= 1, 10)
    langfuse.unavailable = False
    started = time.monotonic()
    sink.shutdown(5_000)
    assert len(langfuse.scores) == len(records)
    assert sink.stats()["delivered"] == len(records)
    assert not any(key.startswith("dropped") for key in sink.stats())
    assert time.monotonic() - started < 4.0  # delivered, not given up at the exit's deadline


def test_scores_the_backend_never_takes_are_dropped_and_counted_after_the_retry_window(
    langfuse: LoopbackLangfuse, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="otel_eval")
    langfuse.unavailable = True  # 503 to everything
    sink = BatchingSink(
        LangfuseBackend(langfuse.base_url, PUBLIC_KEY, SECRET_KEY), retry_seconds=1.0, backoff=(0.05, 0.2)
    )
    records = _scored(run_evaluated_agent(None))
    sink(records)
    assert wait_until(lambda: sink.stats().get("dropped.unreachable", 0) == len(records), 10)
    assert sink.force_flush(1_000)
    lines = [r for r in caplog.records if r.name.startswith("otel_eval.emit.sinks")]
    assert len(lines) == 1 and "HTTP 503" in lines[0].getMessage()


def test_wrong_keys_are_refused_once_in_the_log_without_the_secret(
    langfuse: LoopbackLangfuse, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="otel_eval")
    wrong_secret = "sk-lf-wrong-secret-never-logged"
    sink = BatchingSink(LangfuseBackend(langfuse.base_url, PUBLIC_KEY, wrong_secret), linger=0)
    records = _scored(run_evaluated_agent(None))
    for record in records:
        sink([record])
    assert sink.force_flush(10_000)
    assert sink.stats()["dropped.rejected"] == len(records)
    assert not langfuse.scores
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("otel_eval.emit.sinks")]
    assert len(lines) == 1 and "HTTP 401" in lines[0]
    assert all(wrong_secret not in line and SECRET_KEY not in line for line in lines)


@pytest.mark.integration
def test_the_evaluation_process_sends_its_scores_through_the_sinks_the_environment_names(
    langfuse: LoopbackLangfuse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EVAL_SINKS", "langfuse")
    monkeypatch.setenv("OTEL_EVAL_SINKS_INFORMATIONAL", "true")  # no judge: the default metrics are informational
    monkeypatch.setenv("LANGFUSE_BASE_URL", langfuse.base_url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    provider = TracerProvider(shutdown_on_exit=False)
    processor = EvaluationSpanProcessor(settings=ProcessorSettings(isolation="process"))
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS[:3]:
        agent.run(scenario)
    assert processor.force_flush(60_000)  # waits for the child, whose flush waits for its sinks
    provider.shutdown()
    scores = list(langfuse.scores.values())
    assert len({s["traceId"] for s in scores}) == 3
    assert len(scores) == 3 * len(EFFICIENCY_METRICS) == langfuse.posts  # one process posted them
    assert {s["name"] for s in scores} == set(EFFICIENCY_METRICS)


async def test_the_kafka_workers_core_sends_its_scores_through_the_sinks_the_environment_names(
    langfuse: LoopbackLangfuse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EVAL_SINKS", "langfuse")
    monkeypatch.setenv("OTEL_EVAL_SINKS_INFORMATIONAL", "true")
    monkeypatch.setenv("LANGFUSE_BASE_URL", langfuse.base_url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    telemetry = MemoryTelemetry()
    core = build_core(worker_settings("127.0.0.1:1"), telemetry.providers)  # the broker is never contacted
    records = await core.evaluate(request(traced(index=1), traced(index=2)))
    core.shutdown(10_000)  # what the worker's shutdown does after flushing its telemetry
    telemetry.shutdown()
    assert records and len(langfuse.scores) == len(records)
    assert {(s["traceId"], s["name"]) for s in langfuse.scores.values()} == {
        (r.trace_id, r.metric_name) for r in records
    }


def test_a_backend_down_for_a_minute_costs_three_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="otel_eval")
    now = [1000.0]  # the sink's clock, moved by the test: a minute passes without waiting for it
    server = LoopbackLangfuse().start()
    url = server.base_url
    server.stop()
    sink = BatchingSink(LangfuseBackend(url, PUBLIC_KEY, SECRET_KEY), backoff=(1.0, 10.0), clock=lambda: now[0])
    records = _scored(run_evaluated_agent(None))
    sink(records)
    attempts = lambda: sink.stats().get("failed_attempts.unreachable", 0)  # noqa: E731
    for step, expected in ((0.0, 1), (30.0, 2), (31.0, 3)):  # the sink wakes within a second to look at its clock
        now[0] += step
        assert wait_until(lambda expected=expected: attempts() >= expected, 10)
    back = LoopbackLangfuse(int(url.rsplit(":", 1)[1])).start()
    try:
        now[0] += 10.0
        assert sink.force_flush(20_000)
    finally:
        back.stop()
    assert len(back.scores) == len(records)
    lines = [r for r in caplog.records if r.name.startswith("otel_eval.emit.sinks")]
    assert [r.levelname for r in lines] == ["WARNING", "WARNING", "INFO"], [r.getMessage() for r in lines]
    assert "still unreachable after 61 s" in lines[1].getMessage()  # the one summary, after 60 s
    assert "reachable again after 71" in lines[2].getMessage()


@pytest.mark.slow
def test_the_langfuse_recipe_gives_one_score_per_result_on_each_trace_and_root_observation(
    langfuse: LoopbackLangfuse,
) -> None:
    """docs/backends-sinks.md's Langfuse recipe, run as written against the loopback server: the agent's traces over
    OTLP with the documented basic-auth header, the scores through the public API."""
    replacements = {"http://localhost:3000": langfuse.base_url, "pk-lf-...": PUBLIC_KEY, "sk-lf-...": SECRET_KEY}
    with recipe.judge_server() as judge:
        process = recipe.run_recipe("langfuse", judge, replacements)
    assert recipe.export_errors(process) == []
    roots = {span.trace_id.hex(): span for span in langfuse.spans if span.name == "invoke_agent WeatherAssistant"}
    cities = {trace_id: _city(span) for trace_id, span in roots.items()}
    assert sorted(cities.values()) == sorted(recipe.CITIES)
    scores = list(langfuse.scores.values())
    assert len(scores) == recipe.SCORED_PER_INVOCATION * len(roots)
    for trace_id, root in roots.items():
        on_root = {
            s["name"]: s["value"]
            for s in scores
            if (s["traceId"], s["observationId"]) == (trace_id, root.span_id.hex())
        }
        failing = cities[trace_id] == recipe.FAILING_CITY
        assert on_root == {"hallucinations_v1": 1.0, "safety_v1": 1.0, "response_match_score": 0.0 if failing else 1.0}
    # the Traces table's score filter, response_match_score < 0.8
    assert [cities[s["traceId"]] for s in scores if s["name"] == "response_match_score" and s["value"] < 0.8] == [
        recipe.FAILING_CITY
    ]


def _city(span: Any) -> str:
    text = next(a.value.string_value for a in span.attributes if a.key == "gen_ai.input.messages")
    return next(city for city in recipe.CITIES if city in text)


def test_a_lone_surrogate_in_a_record_is_sent_as_u_fffd_and_its_batch_delivered(langfuse: LoopbackLangfuse) -> None:
    """A body holding a lone surrogate cannot be encoded as UTF-8: the batch's request raised before it was sent, and
    every record of the batch was dropped as ``rejected``."""
    good = EvaluationRecord(
        result_id="r-good", trace_id="1" * 32, span_id="2" * 16, metric_name="safety_v1", eval_status=EvalStatus.PASSED,
        label="pass", score=1.0, agent_name="weather_agent",
    )  # fmt: skip
    hostile = good.model_copy(
        update={
            "result_id": "r-hostile", "trace_id": "3" * 32, "agent_name": "weather\ud800agent",
            "session_id": "session-\udc00", "explanation": "the answer ends in \ud83d",
        }
    )  # fmt: skip
    sink = BatchingSink(LangfuseBackend(langfuse.base_url, PUBLIC_KEY, SECRET_KEY))
    sink([hostile, good])
    assert sink.force_flush(10_000)
    scores = {s["traceId"]: s for s in langfuse.scores.values()}
    assert set(scores) == {good.trace_id, hostile.trace_id} and sink.stats().get("dropped.rejected", 0) == 0
    assert scores[hostile.trace_id]["comment"] == "the answer ends in \ufffd"
    assert scores[hostile.trace_id]["metadata"]["gen_ai.agent.name"] == "weather\ufffdagent"
    assert hostile.agent_name == "weather\ud800agent"  # the caller's record is left as it was
