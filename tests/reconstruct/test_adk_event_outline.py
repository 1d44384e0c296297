"""The event outline of a rebuilt ADK invocation gives back ADK's own ``InvocationEvents`` (what ADK's multi-turn
evaluators read tool calls from): every scenario, both telemetry schemas, compared with what
``EvaluationGenerator.convert_events_to_eval_invocations`` builds from the session events; and the dialogue ADK's
``rubric_based_multi_turn_trajectory_quality_v1`` assembles from them is the same text."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation import eval_case as adk_eval_case
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.evaluation.rubric_based_multi_turn_trajectory_evaluator import RubricBasedMultiTurnTrajectoryEvaluator

from otel_eval.metrics._multi_turn import dialogue
from otel_eval.model import invocation_events
from tests.reconstruct.adk_agents import SCENARIOS, adk_telemetry, run_turns
from tests.reconstruct.test_adk_parity import SCHEMAS, rebuilt

pytestmark = pytest.mark.usefixtures("quiet_adk")


def shape(events: Any) -> list[tuple[str, Any]]:
    """Authors and parts (texts, calls by name and args, responses by name and response), ids left out."""
    shaped = []
    for event in events.invocation_events:
        parts = None
        if event.content is not None:
            parts = [
                (p.text, p.function_call and (p.function_call.name, p.function_call.args))
                if p.function_response is None
                else ("response", p.function_response.name, p.function_response.response)
                for p in event.content.parts or []
                if p.text or p.function_call or p.function_response
            ]
        shaped.append((event.author, parts))
    return shaped


def adk_dialogue(invocations: list[Any]) -> str:
    criterion = BaseCriterion.model_validate({"threshold": 0.5})
    evaluator = RubricBasedMultiTurnTrajectoryEvaluator(
        EvalMetric(metric_name="rubric_based_multi_turn_trajectory_quality_v1", criterion=criterion)
    )
    evaluator._assemble_dialogue_history(invocations)
    return str(evaluator._formatted_dialogue)


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_outline_gives_back_adks_events(name: str, schema: int) -> None:
    with adk_telemetry(schema=schema, capture_content=True):
        run = await run_turns(SCENARIOS[name]())
    expected = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
    actual = rebuilt(run, SCHEMAS[schema])
    assert len(actual) == len(expected)
    for traced, adk in zip(actual, expected, strict=True):
        assert traced.event_outline is not None
        events = invocation_events(traced)
        assert events is not None
        assert isinstance(adk.intermediate_data, adk_eval_case.InvocationEvents)
        assert shape(events) == shape(adk.intermediate_data), name
    assert dialogue(actual) == adk_dialogue(expected)
