"""An invocation that ended in error (the client went away mid-stream, a timeout) gave the application an exception,
not the text its last model call had streamed so far: the judged metrics report NOT_EVALUATED saying so, never a
score of the half answer; the deterministic metrics still run. Real SDK spans, the loopback judge, both isolations."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.judge.retry import INCOMPLETE_CONTEXT
from otel_eval.model.messages import EvaluationRecord
from tests.judge.fake_gemini import FakeGemini

QUESTION = "What's the weather like in Paris today?"
HALF_ANSWER = "It is sunny and"


def _message(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _cancelled_mid_stream(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("travel.agent")
    root_attributes = {
        semconv.GEN_AI_OPERATION_NAME: "invoke_agent",
        semconv.GEN_AI_AGENT_NAME: "travel_assistant",
        semconv.GEN_AI_INPUT_MESSAGES: _message("user", QUESTION),
    }
    chat_attributes = {
        semconv.GEN_AI_OPERATION_NAME: "chat",
        semconv.GEN_AI_INPUT_MESSAGES: _message("user", QUESTION),
    }
    with (
        pytest.raises(ConnectionResetError),
        tracer.start_as_current_span("invoke_agent travel_assistant", attributes=root_attributes),
        tracer.start_as_current_span("chat gemini-2.5-flash", attributes=chat_attributes) as chat,
    ):
        chat.set_attribute(semconv.GEN_AI_OUTPUT_MESSAGES, _message("assistant", HALF_ANSWER))
        raise ConnectionResetError("the client went away")


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_the_judged_metrics_do_not_judge_the_half_answer_of_an_invocation_that_ended_in_error(
    gemini_credentials: FakeGemini, isolation: str
) -> None:
    records: list[EvaluationRecord] = []
    settings = ProcessorSettings(isolation=isolation, metrics=("hallucinations_v1", "safety_v1", "tool_call_count_v1"))
    processor = EvaluationSpanProcessor(settings=settings, sinks=[records.extend])
    provider = TracerProvider()
    provider.add_span_processor(processor)
    try:
        _cancelled_mid_stream(provider)
        assert processor.force_flush(60_000)
        by_metric = {record.metric_name: record for record in records}
        assert set(by_metric) == {"hallucinations_v1", "safety_v1", "tool_call_count_v1"}
        for metric in ("hallucinations_v1", "safety_v1"):
            judged = by_metric[metric]
            assert judged.label == semconv.LABEL_NOT_EVALUATED
            assert judged.error_type == INCOMPLETE_CONTEXT
            assert judged.explanation is not None and "ended in error" in judged.explanation
        assert by_metric["tool_call_count_v1"].score == 0
        assert not gemini_credentials.generate_requests()  # the judge was not asked about the half answer
    finally:
        provider.shutdown()
