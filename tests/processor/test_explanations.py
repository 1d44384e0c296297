"""``OTEL_EVAL_EXPLANATIONS=false``: the judge's rationale (which quotes the agent's answer) and a deterministic
metric's (which quotes tool calls and their arguments) go on no result event, evaluation span, span status, sink or
console line; the score, label and verdict stay. The travel agent's real spans, the loopback judge, the real SDK."""

from __future__ import annotations

import json

import pytest

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval import environment_variables as env
from otel_eval.demo import SCENARIOS, TravelAgent, golden_eval_set
from otel_eval.model.messages import EvaluationRecord
from tests.judge.fake_gemini import FakeGemini
from tests.processor.telemetry import Telemetry

HALLUCINATION = next(s for s in SCENARIOS if s.key == "hallucination")
WRONG_TOOL = next(s for s in SCENARIOS if s.key == "wrong_tool")
METRICS = "hallucinations_v1,tool_trajectory_avg_score"


def _evaluated(
    telemetry: Telemetry, environ: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> list[EvaluationRecord]:
    golden = tmp_path_factory.mktemp("golden") / "eval_set.json"
    golden.write_text(golden_eval_set().model_dump_json(), encoding="utf-8")
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor.from_env(
        {env.OTEL_EVAL_METRICS: METRICS, env.OTEL_EVAL_EVAL_SET: str(golden), **environ},
        sinks=[records.extend],
        **telemetry.providers(),
    )
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    agent = TravelAgent(telemetry.tracer_provider)
    agent.run(HALLUCINATION)
    agent.run(WRONG_TOOL)
    assert processor.force_flush(30_000)
    processor.shutdown()
    return records


def _failed(records: list[EvaluationRecord]) -> dict[str, EvaluationRecord]:
    return {r.metric_name: r for r in records if r.label == semconv.LABEL_FAIL}


def _everything_emitted(telemetry: Telemetry, records: list[EvaluationRecord]) -> str:
    spans = [
        {**dict(span.attributes or {}), "status": span.status.description or ""}
        for span in telemetry.evaluation_spans()
    ]
    events = [dict(event.log_record.attributes or {}) for event in telemetry.result_events()]
    return json.dumps([spans, events, [r.model_dump(mode="json") for r in records]], ensure_ascii=False)


def test_by_default_the_explanations_quote_the_agents_text(
    telemetry: Telemetry, gemini_credentials: FakeGemini, tmp_path_factory: pytest.TempPathFactory
) -> None:
    records = _evaluated(telemetry, {}, tmp_path_factory)
    failed = _failed(records)
    assert set(failed) == {"hallucinations_v1", "tool_trajectory_avg_score"}
    emitted = _everything_emitted(telemetry, records)
    assert "completely dry in Tokyo" in emitted  # the agent's answer, quoted by the judge's rationale
    assert 'get_weather({\\"city\\": \\"London\\"})' in emitted  # the tool call, quoted by the trajectory's
    attributes = [dict(e.log_record.attributes or {}) for e in telemetry.result_events()]
    assert any(semconv.GEN_AI_EVALUATION_EXPLANATION in a for a in attributes)
    assert any(semconv.GEN_AI_EVALUATION_EXPLANATION in (s.attributes or {}) for s in telemetry.evaluation_spans())


def test_with_explanations_off_no_result_carries_the_agents_text(
    telemetry: Telemetry,
    gemini_credentials: FakeGemini,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = _evaluated(
        telemetry, {env.OTEL_EVAL_EXPLANATIONS: "false", env.OTEL_EVAL_CONSOLE: "true"}, tmp_path_factory
    )
    failed = _failed(records)
    assert set(failed) == {"hallucinations_v1", "tool_trajectory_avg_score"}  # still scored, still failed
    assert failed["hallucinations_v1"].verdict == "hallucinated"
    assert all(record.explanation is None for record in records)
    emitted = _everything_emitted(telemetry, records) + capsys.readouterr().out
    assert "completely dry in Tokyo" not in emitted
    assert "London" not in emitted
    for event in telemetry.result_events():
        assert semconv.GEN_AI_EVALUATION_EXPLANATION not in (event.log_record.attributes or {})
        assert event.log_record.attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL]
    assert telemetry.evaluation_spans()
    for span in telemetry.evaluation_spans():
        assert semconv.GEN_AI_EVALUATION_EXPLANATION not in (span.attributes or {})


def test_a_value_that_is_not_a_boolean_fails_at_start_up_naming_the_variable() -> None:
    from otel_eval.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"OTEL_EVAL_EXPLANATIONS='nope'.*expected true or false"):
        EvaluationSpanProcessor.from_env({env.OTEL_EVAL_EXPLANATIONS: "nope"})
