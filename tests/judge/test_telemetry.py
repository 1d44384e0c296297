"""Judge telemetry: ``generate_content {model}`` CLIENT spans (in a judge trace of their own by default, see
``test_judge_trace``; under the evaluation span with ``own_trace=False``), and the judge's calls, tokens, cost and
latency instruments."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from otel_eval import semconv
from otel_eval.emit import EvaluationSpanEmitter
from otel_eval.errors import JudgeError
from otel_eval.judge.client import JudgeRequest
from tests.judge.fake_gemini import FakeGemini, error_reply, text_reply
from tests.judge.helpers import make_judge
from tests.processor.telemetry import Telemetry

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


async def test_without_an_own_trace_judge_calls_are_children_of_the_evaluation_span(
    telemetry: Telemetry, fake_gemini: FakeGemini
) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("valid", prompt_tokens=17))
    judge = make_judge(fake_gemini, own_trace=False)
    request = JudgeRequest(model="judge-m", prompt="Is it valid?")
    with EvaluationSpanEmitter(telemetry.tracer_provider).evaluation_span("final_response_match_v2", TRACE_ID, SPAN_ID):
        await judge.generate(request, metric="final_response_match_v2")
        await judge.generate(request, metric="final_response_match_v2")  # identical: served from the cache
    spans = telemetry.finished_spans()
    [evaluation] = [s for s in spans if s.name == "evaluate final_response_match_v2"]
    calls = [s for s in spans if s.name == "generate_content judge-m"]
    assert [c.attributes[semconv.OTEL_EVAL_OUTCOME] for c in calls] == ["ok", "cached"]
    for call in calls:
        assert call.kind is SpanKind.CLIENT
        assert call.parent is not None and call.parent.span_id == evaluation.context.span_id
        assert format(call.context.trace_id, "032x") == TRACE_ID
        assert call.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE
        assert call.attributes[semconv.GEN_AI_REQUEST_MODEL] == "judge-m"
    assert calls[0].attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 17  # the usage the server reported
    assert len(fake_gemini.generate_requests()) == 1
    assert not [s for s in spans if s.name.startswith("judge ")]  # no judge trace
    assert not evaluation.links and semconv.OTEL_EVAL_JUDGE_TRACE_ID not in (evaluation.attributes or {})


async def test_a_failed_judge_call_span_carries_error_type(telemetry: Telemetry, fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: error_reply(500))
    judge = make_judge(fake_gemini, max_attempts=2)
    emitter = EvaluationSpanEmitter(telemetry.tracer_provider)
    with emitter.evaluation_span("safety_v1", TRACE_ID, SPAN_ID), pytest.raises(JudgeError) as raised:
        await judge.generate(JudgeRequest(model="judge-m", prompt="safe?"), metric="safety_v1")
    [call] = [s for s in telemetry.finished_spans() if s.name == "generate_content judge-m"]
    assert call.status.status_code is StatusCode.ERROR
    assert call.attributes[semconv.ERROR_TYPE] == raised.value.error_type
    assert call.attributes[semconv.OTEL_EVAL_OUTCOME] == "error"


async def test_outside_an_evaluation_span_no_span_is_made(telemetry: Telemetry, fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("ok"))
    await make_judge(fake_gemini).generate(JudgeRequest(model="judge-m", prompt="x"), metric="m")
    assert telemetry.finished_spans() == []


async def test_judge_instruments_count_calls_tokens_cost_and_latency(
    telemetry: Telemetry, fake_gemini: FakeGemini
) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("valid"))
    judge = make_judge(fake_gemini)
    judge.use_meter_provider(telemetry.meter_provider)
    priced = JudgeRequest(model="gemini-2.5-flash", prompt="Is it valid?")
    await judge.generate(priced, metric="final_response_match_v2")
    await judge.generate(priced, metric="final_response_match_v2")  # cached
    fake_gemini.set_responder(lambda model, body: error_reply(500))
    with pytest.raises(JudgeError):
        await judge.generate(JudgeRequest(model="gemini-2.5-flash", prompt="other"), metric="safety_v1")

    calls = {
        (p.attributes[semconv.GEN_AI_EVALUATION_NAME], p.attributes[semconv.OTEL_EVAL_OUTCOME]): p.value
        for p in telemetry.metric_points(semconv.METRIC_JUDGE_CALLS)
    }
    assert calls == {
        ("final_response_match_v2", "ok"): 1,
        ("final_response_match_v2", "cached"): 1,
        ("safety_v1", "error"): 1,
    }
    points = telemetry.metric_points(semconv.METRIC_JUDGE_CALLS)
    assert {p.attributes[semconv.OTEL_EVAL_JUDGE_MODEL] for p in points} == {"gemini-2.5-flash"}
    usage = judge.accounting.by_metric()["final_response_match_v2"]
    tokens = {
        p.attributes[semconv.OTEL_EVAL_TOKEN_TYPE]: p.value
        for p in telemetry.metric_points(semconv.METRIC_JUDGE_TOKENS)
    }
    assert tokens == {"input": usage.input_tokens, "output": usage.output_tokens}  # the cached call adds none
    [cost] = telemetry.metric_points(semconv.METRIC_JUDGE_COST)
    assert cost.value == pytest.approx(usage.cost_usd) and cost.value > 0
    durations = {
        p.attributes[semconv.OTEL_EVAL_OUTCOME]: p.count for p in telemetry.metric_points(semconv.METRIC_JUDGE_DURATION)
    }
    assert durations == {"ok": 1, "error": 1}
