"""The judge's spans in a trace of their own (the default): a ``judge {metric}`` root holding the evaluation's
``generate_content`` calls, linked to the ``evaluate {metric}`` span and back, so the agent's trace carries no judge
token usage. Real SDK, in-memory exporter, the real judge client over HTTP to the loopback Gemini server."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_eval import semconv
from otel_eval.emit import EvaluationSpanEmitter
from otel_eval.errors import ConfigurationError
from otel_eval.judge import JudgeSettings
from otel_eval.judge.client import JudgeRequest
from tests.judge.fake_gemini import FakeGemini, text_reply
from tests.judge.helpers import make_judge
from tests.processor.telemetry import Telemetry

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
USAGE = (semconv.GEN_AI_USAGE_INPUT_TOKENS, semconv.GEN_AI_USAGE_OUTPUT_TOKENS)


def _hex(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


async def test_judge_calls_go_into_a_trace_of_their_own_linked_both_ways(
    telemetry: Telemetry, fake_gemini: FakeGemini
) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("valid", prompt_tokens=120, output_tokens=30))
    judge = make_judge(fake_gemini)
    emitter = EvaluationSpanEmitter(telemetry.tracer_provider)
    with emitter.evaluation_span("final_response_match_v2", TRACE_ID, SPAN_ID):
        await judge.generate(JudgeRequest(model="judge-m", prompt="first?"), metric="final_response_match_v2")
        await judge.generate(JudgeRequest(model="judge-m", prompt="second?"), metric="final_response_match_v2")
    spans = telemetry.finished_spans()
    [evaluation] = [s for s in spans if s.name == "evaluate final_response_match_v2"]
    [root] = [s for s in spans if s.name == "judge final_response_match_v2"]
    calls = [s for s in spans if s.name == "generate_content judge-m"]
    assert len(calls) == 2

    judge_trace, root_id = _hex(root)
    assert judge_trace != TRACE_ID and root.parent is None  # a trace of its own
    assert all(_hex(call)[0] == judge_trace for call in calls)
    assert all(call.parent is not None and format(call.parent.span_id, "016x") == root_id for call in calls)
    assert sum(int(call.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS]) for call in calls) == 240

    # the agent's trace (here: the evaluate span under the invocation's ids) holds no judge token usage
    agent_trace = [s for s in spans if _hex(s)[0] == TRACE_ID]
    assert agent_trace == [evaluation]
    assert not any(key in (s.attributes or {}) for s in agent_trace for key in USAGE)

    # judge root -> evaluate span: a link given at its start, and the ids as attributes
    [to_evaluation] = root.links
    assert (format(to_evaluation.context.trace_id, "032x"), format(to_evaluation.context.span_id, "016x")) == _hex(
        evaluation
    )
    assert to_evaluation.attributes[semconv.OTEL_EVAL_LINK_TYPE] == semconv.LINK_TYPE_EVALUATION
    assert root.attributes[semconv.OTEL_EVAL_EVALUATION_TRACE_ID] == TRACE_ID
    assert root.attributes[semconv.OTEL_EVAL_EVALUATION_SPAN_ID] == _hex(evaluation)[1]
    assert root.attributes[semconv.GEN_AI_EVALUATION_NAME] == "final_response_match_v2"
    assert root.attributes[semconv.OPENINFERENCE_SPAN_KIND] == "EVALUATOR"  # Phoenix's kind column, MLflow's type
    assert root.attributes[semconv.MLFLOW_SPAN_TYPE] == semconv.MLFLOW_SPAN_TYPE_EVALUATOR
    # evaluate span -> judge root: a link added before it ended, and the judge trace's id
    [to_judge] = evaluation.links
    assert (format(to_judge.context.trace_id, "032x"), format(to_judge.context.span_id, "016x")) == (
        judge_trace,
        root_id,
    )
    assert to_judge.attributes[semconv.OTEL_EVAL_LINK_TYPE] == semconv.LINK_TYPE_JUDGE
    assert evaluation.attributes[semconv.OTEL_EVAL_JUDGE_TRACE_ID] == judge_trace
    # the root spans the calls and ends with the evaluation
    assert root.start_time <= min(c.start_time for c in calls) and root.end_time >= max(c.end_time for c in calls)
    assert root.end_time <= evaluation.end_time


async def test_concurrent_calls_of_one_evaluation_share_one_judge_trace(
    telemetry: Telemetry, fake_gemini: FakeGemini
) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("ok"))
    judge = make_judge(fake_gemini)
    emitter = EvaluationSpanEmitter(telemetry.tracer_provider)
    with emitter.evaluation_span("safety_v1", TRACE_ID, SPAN_ID):
        await asyncio.gather(
            *(judge.generate(JudgeRequest(model="judge-m", prompt="x"), metric="safety_v1", sample=i) for i in range(4))
        )
    with emitter.evaluation_span("safety_v1", TRACE_ID, "00f067aa0ba902b8"):
        await judge.generate(JudgeRequest(model="judge-m", prompt="y"), metric="safety_v1")
    spans = telemetry.finished_spans()
    roots = [s for s in spans if s.name == "judge safety_v1"]
    assert len(roots) == 2  # one judge trace per evaluation
    calls_per_trace = sorted(
        sum(1 for c in spans if c.name.startswith("generate_content") and _hex(c)[0] == _hex(root)[0]) for root in roots
    )
    assert calls_per_trace == [1, 4]


def test_an_evaluation_without_judge_calls_makes_no_judge_trace(telemetry: Telemetry) -> None:
    with EvaluationSpanEmitter(telemetry.tracer_provider).evaluation_span("tool_call_count_v1", TRACE_ID, SPAN_ID):
        pass
    [evaluation] = telemetry.finished_spans()
    assert not evaluation.links and semconv.OTEL_EVAL_JUDGE_TRACE_ID not in (evaluation.attributes or {})


def test_the_option_is_read_from_the_environment() -> None:
    assert JudgeSettings.from_env({}).own_trace is True
    assert JudgeSettings.from_env({"OTEL_EVAL_JUDGE_OWN_TRACE": "false"}).own_trace is False
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_JUDGE_OWN_TRACE='sometimes'"):
        JudgeSettings.from_env({"OTEL_EVAL_JUDGE_OWN_TRACE": "sometimes"})
