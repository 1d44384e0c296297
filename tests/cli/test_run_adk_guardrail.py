"""``otel-eval run`` on a real ADK session whose first turn a ``before_model_callback`` guardrail answered: under ADK
2.13's default telemetry that turn's user message is on no span, and the session still pairs with its eval case (by
the first user message the spans hold), so its later turns are scored against their reference as ADK scores them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from google.adk.evaluation.eval_case import EvalCase
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.cli.conftest import CliResult
from tests.reconstruct.adk_agents import adk_telemetry, run_turns
from tests.reconstruct.adk_workflows import guardrail_scenario

pytestmark = pytest.mark.usefixtures("quiet_adk")


def test_a_session_opened_by_a_guardrail_turn_pairs_by_its_first_known_user_message(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    with adk_telemetry(schema=2):
        golden_run = asyncio.run(run_turns(guardrail_scenario()))
        run = asyncio.run(run_turns(guardrail_scenario()))
    golden = EvaluationGenerator.convert_events_to_eval_invocations(golden_run.session_events)
    golden[1].final_response.parts[0].text = "Paris is sunny today."
    eval_set = EvalSet(eval_set_id="guarded", eval_cases=[EvalCase(eval_id="refuse_then_help", conversation=golden)])
    (tmp_path / "eval_set.json").write_text(eval_set.model_dump_json())
    (tmp_path / "trace.json").write_text(json.dumps(MessageToDict(encode_spans(run.readable_spans))))
    (tmp_path / "config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))

    result = cli(
        "run",
        tmp_path / "trace.json",
        "--eval-set",
        tmp_path / "eval_set.json",
        "--config",
        tmp_path / "config.json",
        "--output",
        "json",
    )
    [conversation] = result.json()["results"]
    [metric] = [m for m in conversation["metrics"] if m["metric_name"] == "response_match_score"]
    actual = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
    adks = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.5)).evaluate_invocations(
        actual, golden
    )
    assert conversation["eval_id"] == "refuse_then_help"
    # The guarded turn's answer is on no span: not evaluated; the next turn's score is ADK's.
    assert metric["per_invocation_scores"][1] == adks.per_invocation_results[1].score
    assert metric["per_invocation_scores"][0] is None
