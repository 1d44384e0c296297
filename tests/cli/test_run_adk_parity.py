"""``otel-eval run --output json`` on live ADK traces equals google-adk 2.13's own evaluators on the same session.

Real ADK agents (scripted model, both telemetry schemas) run several scenarios; their spans are written to an OTLP
JSON file with the OTLP exporter's own encoder, as a Collector's file exporter would write them. The eval set holds
ADK's own invocations of each session (``EvaluationGenerator.convert_events_to_eval_invocations``), some perturbed
(a changed argument, reversed calls, a dropped call, an extra call, a changed answer). The CLI's scores, statuses and
per-invocation scores must equal what ADK's ``TrajectoryEvaluator`` and ``RougeEvaluator`` give for ADK's own actual
invocations against the same expected ones, for every match type.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.cli.conftest import CliResult
from tests.reconstruct.adk_agents import SCENARIOS, adk_telemetry, run_turns

Json = dict[str, Any]
ROUGE_THRESHOLD = 0.6


def _change_arg(case: Json) -> None:
    call = case["conversation"][0]["intermediate_data"]["tool_uses"][0]
    call["args"] = {**call["args"], "city": "Berlin"}


def _reverse_calls(case: Json) -> None:
    case["conversation"][0]["intermediate_data"]["tool_uses"].reverse()


def _drop_last_call(case: Json) -> None:
    case["conversation"][-1]["intermediate_data"]["tool_uses"].pop()


def _extra_call(case: Json) -> None:
    case["conversation"][0]["intermediate_data"]["tool_uses"].append({"name": "get_time", "args": {"city": "Lima"}})


def _change_answer(case: Json) -> None:
    case["conversation"][0]["final_response"]["parts"] = [{"text": "Sunny weather in Paris today, about 20 degrees."}]


PERTURBATIONS: dict[str, Callable[[Json], None] | None] = {
    "single_tool": _change_answer,
    "sequential_tools": _change_arg,
    "parallel_tools": _reverse_calls,
    "multi_turn": _drop_last_call,
    "no_tool": _extra_call,
    "agent_tool": None,
}


def _golden(invocation: AdkInvocation) -> Json:
    """An expected invocation as eval sets usually hold it: user content, final response, tool uses."""
    return {
        "invocation_id": invocation.invocation_id,
        "user_content": invocation.user_content.model_dump(mode="json", exclude_none=True),
        "final_response": invocation.final_response.model_dump(mode="json", exclude_none=True)
        if invocation.final_response
        else None,
        "intermediate_data": {
            "tool_uses": [
                call.model_dump(mode="json", exclude_none=True)
                for call in get_all_tool_calls(invocation.intermediate_data)
            ]
        },
    }


pytestmark = pytest.mark.usefixtures("quiet_adk")


async def _recorded(schema: int, tmp_path: Path) -> tuple[Path, Path, list[tuple[list[Any], list[Any]]]]:
    """The OTLP JSON trace file of every scenario, the eval set, and per scenario (ADK's actual, expected)."""
    spans, cases, pairs = [], [], []
    with adk_telemetry(schema=schema, capture_content=True):
        for name, perturb in PERTURBATIONS.items():
            run = await run_turns(SCENARIOS[name]())
            spans.extend(run.readable_spans)
            actual = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
            case = {"eval_id": name, "conversation": [_golden(invocation) for invocation in actual]}
            if perturb is not None:
                perturb(case)
            cases.append(case)
            pairs.append((actual, [AdkInvocation.model_validate(i) for i in case["conversation"]]))
    trace_file = tmp_path / f"adk_schema_{schema}.otlp.json"
    trace_file.write_text(json.dumps(MessageToDict(encode_spans(spans))))
    eval_set = tmp_path / "scenarios.evalset.json"
    eval_set.write_text(AdkEvalSet.model_validate({"eval_set_id": "scenarios", "eval_cases": cases}).model_dump_json())
    return trace_file, eval_set, pairs


def _adk_result(evaluator: Any, actual: list[Any], expected: list[Any]) -> Json:
    result = evaluator.evaluate_invocations(actual, expected)
    return {
        "score": result.overall_score,
        "eval_status": result.overall_eval_status.name,
        "per_invocation_scores": [r.score for r in result.per_invocation_results],
    }


@pytest.mark.parametrize("schema", [1, 2])
def test_run_json_equals_adks_evaluators_for_every_match_type(
    cli: Callable[..., CliResult], tmp_path: Path, schema: int
) -> None:
    # The command runs its own event loop, so the agents run in one first.
    trace_file, eval_set, pairs = asyncio.run(_recorded(schema, tmp_path))
    for match_type in ("EXACT", "IN_ORDER", "ANY_ORDER"):
        trajectory = {"threshold": 1.0, "match_type": match_type}
        config = tmp_path / f"{match_type}.json"
        config.write_text(
            json.dumps({"criteria": {"tool_trajectory_avg_score": trajectory, "response_match_score": ROUGE_THRESHOLD}})
        )
        result = cli("run", trace_file, "--eval-set", eval_set, "--config", config, "--output", "json")
        ours = {
            conversation["eval_id"]: {
                metric["metric_name"]: {key: metric[key] for key in ("score", "eval_status", "per_invocation_scores")}
                for metric in conversation["metrics"]
                if metric["threshold"] is not None
            }
            for conversation in result.json()["results"]
        }
        adks = {
            name: {
                "tool_trajectory_avg_score": _adk_result(
                    TrajectoryEvaluator(
                        eval_metric=EvalMetric(
                            metric_name="tool_trajectory_avg_score",
                            criterion=ToolTrajectoryCriterion.model_validate(trajectory),
                        )
                    ),
                    actual,
                    expected,
                ),
                "response_match_score": _adk_result(
                    RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=ROUGE_THRESHOLD)),
                    actual,
                    expected,
                ),
            }
            for name, (actual, expected) in zip(PERTURBATIONS, pairs, strict=True)
        }
        assert ours == adks, match_type
        failed = any(m["eval_status"] == "FAILED" for case in adks.values() for m in case.values())
        assert result.exit_code == (1 if failed else 0)
    statuses = {m["eval_status"] for case in adks.values() for m in case.values()}
    assert statuses == {"PASSED", "FAILED"}  # the perturbations make both outcomes occur
