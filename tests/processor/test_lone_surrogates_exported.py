"""A lone surrogate reaching a result (``json.loads`` makes one of a ``\\ud83d`` escape: an answer cut mid-emoji by a
UTF-16 agent, quoted by the judge's error answer) goes out as U+FFFD through the SDK's OTLP/HTTP exporters. Their protobuf encoder
refuses a lone surrogate: on an attribute it dropped the attribute (with an ERROR traceback each time); on the status
of an evaluation span that could not be evaluated it failed the whole span batch, the agent's own spans with it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.judge import set_default_judge
from tests.judge.fake_gemini import FakeGemini, Reply, error_reply
from tests.judge.helpers import TEST_KEY
from tests.worker._harness import OtlpSink

CUT_ANSWER = "Sunny, 21 degrees \\ud83d"
"""The agent's answer as its span's JSON holds it: ASCII, the emoji's second half cut off."""
QUOTED = "the answer ends in \ud83d"
"""What the judge's error answer says about it, once decoded from its JSON."""


def _judge(model: str, body: dict[str, Any]) -> Reply:
    prompt = json.dumps(body)
    if "Paris" in prompt:
        return Reply(text=json.dumps({"reasoning": "fine", "violated_policies": [], "safety_verdict": "safe"}))
    return error_reply(400, f"invalid argument: {QUOTED}")  # an error quoting it: a result not evaluated


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    with FakeGemini(_judge) as server:
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        set_default_judge(None)
        yield server
        set_default_judge(None)


def _attributes(item: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in item.attributes}


def test_a_lone_surrogate_in_a_result_is_exported_as_u_fffd_without_losing_the_batch(
    judge: FakeGemini, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = OtlpSink().start()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    try:
        processor = EvaluationSpanProcessor(
            {"safety_v1": 0.5}, tracer_provider=tracer_provider, logger_provider=logger_provider
        )
        tracer_provider.add_span_processor(processor)
        tracer_provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(f"{receiver.endpoint}/v1/traces"), schedule_delay_millis=60_000)
        )
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(f"{receiver.endpoint}/v1/logs"), schedule_delay_millis=60_000)
        )
        tracer = tracer_provider.get_tracer("weather-agent")
        for city in ("Paris", "Oslo"):
            question = [{"role": "user", "parts": [{"type": "text", "content": f"Weather in {city}?"}]}]
            answer = f'[{{"role":"assistant","parts":[{{"type":"text","content":"{CUT_ANSWER}"}}]}}]'
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather_agent",
                "gen_ai.input.messages": json.dumps(question),
                "gen_ai.output.messages": answer,
            }
            tracer.start_span("invoke_agent weather_agent", attributes=attributes).end()
        assert processor.force_flush(30_000)
        tracer_provider.force_flush(30_000)
        logger_provider.force_flush(30_000)
    finally:
        tracer_provider.shutdown()
        logger_provider.shutdown()
        receiver.stop()

    spans = [s for r in receiver.trace_requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    names = [s.name for s in spans]
    assert names.count("invoke_agent weather_agent") == 2 and names.count("evaluate safety_v1") == 2
    failed = [s.status.message for s in spans if s.name == "evaluate safety_v1" and s.status.message]
    assert len(failed) == 1 and "the answer ends in \ufffd (" in failed[0], failed
    events = [
        _attributes(record)
        for r in receiver.log_requests
        for rl in r.resource_logs
        for sl in rl.scope_logs
        for record in sl.log_records
        if record.event_name == semconv.EVALUATION_RESULT_EVENT
        and _attributes(record)[semconv.GEN_AI_EVALUATION_NAME] == "safety_v1"
    ]
    explanations = sorted(str(e.get(semconv.GEN_AI_EVALUATION_EXPLANATION)) for e in events)
    assert explanations == ["fine", failed[0]]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
