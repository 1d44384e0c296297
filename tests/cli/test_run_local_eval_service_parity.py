"""``otel-eval run`` on the traces of ADK's own eval runs equals ADK 2.13's ``LocalEvalService`` (what ``adk eval``
and ``AgentEvaluator`` run) case by case: a real ADK agent (a model answering by the user's text) runs an eval set
twice through ``LocalEvalService``, with its spans recorded; ``run --output json --results-dir`` on those spans, against
the same eval set and config, gives for each ADK session the same eval case, overall and per-invocation scores and
statuses, and final status as ADK's ``EvalCaseResult`` of that session; its result file, written beside the one ADK's
``LocalEvalSetResultsManager`` saves for the runs, is loaded by that manager with the same criteria (as the config
writes them: ``"match_type": "IN_ORDER"``) and user ids as ADK's.

The cases: a multi-turn one, a tool call with arguments, a trajectory that does not match, a case with a
``session_input`` and ``creation_timestamp``, and one whose answer changes between the two runs (passing once, failing
once: each run is its own case result, as ``adk eval`` counts them; ``AgentEvaluator`` averages the runs instead).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
)
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.cli.conftest import CliResult
from tests.reconstruct.adk_agents import adk_telemetry, call, get_time, get_weather, reply, span_exporter

pytestmark = pytest.mark.usefixtures("quiet_adk")

APP = "walk"
ANSWERS: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]] = {
    "what is the weather in paris?": ([("get_weather", {"city": "Paris"})], "It is sunny in Paris, 21 C."),
    "weather in rome?": ([("get_weather", {"city": "Rome"})], "It rains in Rome."),
    "and the time there?": ([("get_time", {"city": "Rome"})], "It is 10:30 in Rome."),
    "what time is it in oslo?": ([("get_weather", {"city": "Oslo"})], "Oslo has rain."),
    "hi there": ([], "Hello! How can I help?"),
}
SECOND_GREETING = "Hello there, what do you need?"


class AnsweringLlm(BaseLlm):
    """Calls the tools :data:`ANSWERS` lists for the user's text, then answers; the second greeting differs."""

    model: str = "answering-model"
    greetings: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        user = next(
            c for c in reversed(llm_request.contents) if c.role == "user" and any(p.text for p in c.parts or [])
        )
        calls, final = ANSWERS[" ".join(p.text or "" for p in user.parts or []).strip().lower()]
        if any(p.function_response for p in last.parts or []) or not calls:
            if not calls:
                self.greetings += 1
                final = final if self.greetings == 1 else SECOND_GREETING
            yield reply(final)
        else:
            yield call(*calls)


def _turn(text: str, answer: str, *tools: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": name, "args": args} for name, args in tools]},
    }


EVAL_SET = {
    "eval_set_id": "walk",
    "eval_cases": [
        {
            "eval_id": "paris",
            "conversation": [
                _turn("What is the weather in Paris?", "Sunny in Paris, 21 C.", ("get_weather", {"city": "Paris"}))
            ],
        },
        {
            "eval_id": "rome_two_turns",
            "conversation": [
                _turn("Weather in Rome?", "It rains in Rome today.", ("get_weather", {"city": "Rome"})),
                _turn("And the time there?", "10:30 in Rome.", ("get_time", {"city": "Rome"})),
            ],
        },
        {
            "eval_id": "oslo_wrong_tool",
            "conversation": [_turn("What time is it in Oslo?", "It is 10:30 in Oslo.", ("get_time", {"city": "Oslo"}))],
        },
        {
            "eval_id": "greeting",
            "session_input": {"app_name": APP, "user_id": "u1", "state": {"tier": "gold"}},
            "creation_timestamp": 1700000000.0,
            "conversation": [_turn("Hi there", "Hello! How can I help you?")],
        },
    ],
}
CONFIG = {
    "criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"}, "response_match_score": 0.6}
}


async def _adk_eval(tmp_path: Path) -> tuple[Path, list[AdkEvalCaseResult]]:
    """ADK's case results of two runs of the eval set, and the OTLP JSON file of the runs' spans."""
    eval_set = AdkEvalSet.model_validate(EVAL_SET)
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(APP, eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(APP, eval_set.eval_set_id, case)
    agent = LlmAgent(
        name="weather_agent", model=AnsweringLlm(), instruction="Answer briefly.", tools=[get_weather, get_time]
    )
    service = LocalEvalService(root_agent=agent, eval_sets_manager=manager)
    exporter = span_exporter()
    exporter.clear()
    inferences = []
    with adk_telemetry(schema=2, capture_content=True):
        for _ in range(2):
            request = InferenceRequest(app_name=APP, eval_set_id="walk", inference_config=InferenceConfig())
            inferences += [result async for result in service.perform_inference(inference_request=request)]
    metrics = get_eval_metrics_from_config(AdkEvalConfig.model_validate(CONFIG))
    request = EvaluateRequest(inference_results=inferences, evaluate_config=EvaluateConfig(eval_metrics=metrics))
    results = [result async for result in service.evaluate(evaluate_request=request)]
    trace_file = tmp_path / "eval_runs.otlp.json"
    trace_file.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    return trace_file, results


def _case(result: AdkEvalCaseResult) -> dict[str, Any]:
    """What must be equal of a case result: its eval case, final status, and per metric the overall score and status
    and the per-invocation scores and statuses."""
    per_invocation: dict[str, list[Any]] = {}
    for invocation in result.eval_metric_result_per_invocation:
        for metric in invocation.eval_metric_results:
            per_invocation.setdefault(metric.metric_name, []).append((metric.score, metric.eval_status.name))
    return {
        "eval_id": result.eval_id,
        "final_eval_status": result.final_eval_status.name,
        "metrics": {
            m.metric_name: (m.score, m.eval_status.name, m.threshold, per_invocation[m.metric_name])
            for m in result.overall_eval_metric_results
            if m.threshold is not None
        },
    }


def _as_written(result: AdkEvalCaseResult) -> dict[str, Any]:
    """What a results file holds of a case result besides its scores: the user id, and each metric result's
    criterion (overall, then per invocation)."""
    metrics = [*result.overall_eval_metric_results]
    for invocation in result.eval_metric_result_per_invocation:
        metrics += invocation.eval_metric_results
    return {
        "user_id": result.user_id,
        "criteria": [(m.metric_name, m.criterion.model_dump() if m.criterion else None) for m in metrics],
    }


def test_run_equals_local_eval_service_case_by_case(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    trace_file, adk_results = asyncio.run(_adk_eval(tmp_path))  # the command runs its own event loop
    eval_set = tmp_path / "walk.evalset.json"
    eval_set.write_text(json.dumps(EVAL_SET))
    (tmp_path / "test_config.json").write_text(json.dumps(CONFIG))  # found beside the eval set, as ADK finds it
    manager = LocalEvalSetResultsManager(str(tmp_path / "agents"))
    manager.save_eval_set_result(APP, "walk", adk_results)  # what adk eval saves for these runs
    (saved,) = manager.list_eval_set_results(APP)
    results_dir = tmp_path / "agents" / APP / ".adk" / "eval_history"
    result = cli("run", trace_file, "--eval-set", eval_set, "--output", "json", "--results-dir", results_dir)

    adks = {r.session_id: _case(r) for r in adk_results}
    assert len(adks) == 8
    (written,) = set(manager.list_eval_set_results(APP)) - {saved}
    loaded = manager.get_eval_set_result(APP, written).eval_case_results
    assert {r.session_id: _case(r) for r in loaded} == adks
    adk_saved = {r.session_id: _as_written(r) for r in manager.get_eval_set_result(APP, saved).eval_case_results}
    assert {r.session_id: _as_written(r) for r in loaded} == adk_saved
    criteria = dict(adk_saved[loaded[0].session_id]["criteria"])
    assert criteria["tool_trajectory_avg_score"]["match_type"] == "IN_ORDER"  # as the config writes it (ours said 1)
    assert {r.user_id for r in loaded} == {"test_user_id", "u1"}  # the greeting's session_input names u1
    printed = {
        case["session_id"]: {
            "eval_id": case["eval_id"],
            "final_eval_status": case["status"],
            "metrics": {
                m["metric_name"]: (
                    m["score"],
                    m["eval_status"],
                    m["threshold"],
                    list(zip(m["per_invocation_scores"], m["per_invocation_statuses"], strict=True)),
                )
                for m in case["metrics"]
                if m["threshold"] is not None
            },
        }
        for case in result.json()["results"]
    }
    assert printed == adks
    greetings = sorted(case["final_eval_status"] for case in adks.values() if case["eval_id"] == "greeting")
    assert greetings == ["FAILED", "PASSED"]  # one run passed, one failed: each run is its own case result
    assert result.exit_code == 1
