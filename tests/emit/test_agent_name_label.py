"""The agent name is a metric label read from untrusted spans: past ``OTEL_EVAL_METRIC_AGENT_NAMES`` distinct values
later ones are counted as ``other``, so spans cannot create series without end."""

from __future__ import annotations

import pytest

from otel_eval import semconv
from otel_eval.emit import ScoreMetricsEmitter
from otel_eval.emit.attributes import BoundedLabel
from otel_eval.errors import ConfigurationError
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord, result_id
from tests.processor.telemetry import Telemetry

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


def _record(agent_name: str) -> EvaluationRecord:
    return EvaluationRecord(
        result_id=result_id(TRACE_ID, SPAN_ID, "tool_call_count_v1", "1"),
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        metric_name="tool_call_count_v1",
        score=1.0,
        eval_status=EvalStatus.INFORMATIONAL,
        label=semconv.LABEL_INFORMATIONAL,
        agent_name=agent_name,
    )


def _series(telemetry: Telemetry) -> dict[str, int]:
    points = telemetry.metric_points(semconv.METRIC_EVALUATION_RESULTS)
    return {str(p.attributes[semconv.GEN_AI_AGENT_NAME]): int(p.value) for p in points}


def test_agent_names_past_the_bound_are_folded_to_other(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EVAL_METRIC_AGENT_NAMES", "2")
    emitter = ScoreMetricsEmitter(telemetry.meter_provider)
    for name in ["planner", "booker", "forged-1", "planner", "forged-2", "booker", "forged-3"]:
        emitter.emit(_record(name))
    assert _series(telemetry) == {"planner": 2, "booker": 2, semconv.LABEL_VALUE_OTHER: 3}
    score_names = {
        p.attributes[semconv.GEN_AI_AGENT_NAME] for p in telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE)
    }
    assert score_names == {"planner", "booker", semconv.LABEL_VALUE_OTHER}


def test_the_default_bound_keeps_a_hundred_names_and_zero_folds_every_one(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EVAL_METRIC_AGENT_NAMES", raising=False)
    emitter = ScoreMetricsEmitter(telemetry.meter_provider)
    for n in range(150):
        emitter.emit(_record(f"agent-{n}"))
    series = _series(telemetry)
    assert len(series) == 101 and series[semconv.LABEL_VALUE_OTHER] == 50 and "agent-99" in series
    assert BoundedLabel(0)("planner") == semconv.LABEL_VALUE_OTHER  # OTEL_EVAL_METRIC_AGENT_NAMES=0: no agent label
    monkeypatch.setenv("OTEL_EVAL_METRIC_AGENT_NAMES", "many")
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_METRIC_AGENT_NAMES='many'"):
        ScoreMetricsEmitter(telemetry.meter_provider)
