"""Real recorded ADK traces (tests/data/traces): agentevals' kagent agents on ADK 1.22.1 (Jaeger and Tempo exports,
with HTTP/a2a noise and OpenLLMetry ``openai.chat`` children) and strands-evals' ADK 2.5.0 capture.

Each file's user text, tool calls (name + args), tool responses and final text are asserted, plus the published
outcomes of the agentevals project computed with ADK's own ``TrajectoryEvaluator``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.adk.evaluation import eval_case as adk_eval_case
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluator import EvalStatus as AdkEvalStatus
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from otel_eval.model import IntermediateData, TracedInvocation, content_text
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
AGENTEVALS = DATA / "agentevals"
STRANDS = DATA / "strands-evals"


def only_invocation(path: Path, convention: str = "adk") -> TracedInvocation:
    traces = rebuild_traces(read_trace_file(path).spans)
    assert len(traces) == 1
    [trace] = traces
    assert trace.convention == convention
    assert trace.warnings == []
    [invocation] = trace.invocations
    assert invocation.warnings == []
    assert invocation.content_captured is True
    return invocation


def data(traced: TracedInvocation) -> IntermediateData:
    intermediate = traced.invocation.intermediate_data
    assert isinstance(intermediate, IntermediateData)
    return intermediate


def calls(traced: TracedInvocation) -> list[tuple[str | None, dict[str, object] | None]]:
    return [(c.name, c.args) for c in data(traced).tool_uses]


def final_text(traced: TracedInvocation) -> str:
    return content_text(traced.invocation.final_response)


def mcp_text(traced: TracedInvocation, position: int = 0) -> str:
    """The text of an MCP tool result (``{"content": [{"type": "text", "text": ...}], "isError": false}``)."""
    response = data(traced).tool_responses[position].response
    assert response is not None and response["isError"] is False
    [item] = response["content"]
    assert item["type"] == "text"
    text = item["text"]
    assert isinstance(text, str)
    return text


def test_helm_one_invocation_listing_releases() -> None:
    traced = only_invocation(AGENTEVALS / "helm.json")
    invocation = traced.invocation

    assert content_text(invocation.user_content) == "list all Helm releases"
    assert calls(traced) == [("helm_list_releases", {})]
    assert [r.name for r in data(traced).tool_responses] == ["helm_list_releases"]
    assert "kagent-crds\tkagent   \t1" in mcp_text(traced)
    assert final_text(traced).startswith("There are two Helm releases installed in the cluster:")
    assert final_text(traced).endswith("want to perform any actions on these releases.")
    assert data(traced).intermediate_responses == []
    # Ids and metadata straight from the spans.
    assert invocation.invocation_id == "e-a2daf27e-1b11-43b9-ac66-527df687a5fd"
    assert data(traced).tool_uses[0].id == data(traced).tool_responses[0].id == "call_P09kjRKHTTJA02oB9HIe4u5t"
    assert traced.session_id == "ctx-7ed9780f-3688-4fc0-b10b-2e4df2f83cf0"
    assert traced.span_id == "fd2888bee9aed2db"  # the `invocation` span, below the a2a/HTTP spans
    assert traced.trace_id == "3e289017fe03ffd7c4145316d2eb3d0d"
    assert (traced.agent_name, traced.model, traced.model_call_count) == ("helm_agent", "gpt-4.1-mini", 2)
    assert (traced.token_usage.input_tokens, traced.token_usage.output_tokens) == (1820 + 1956, 13 + 117)
    assert invocation.app_details is not None
    helm_agent = invocation.app_details.agent_details["helm_agent"]
    assert helm_agent.instructions.startswith("# Helm AI Agent System Prompt")
    declared = [d["name"] for t in helm_agent.tool_declarations for d in t["function_declarations"]]
    assert "helm_list_releases" in declared and "helm_upgrade" in declared
    # OpenLLMetry's openai.chat child times the model, not call_llm (which stays open around the tool on ADK 1.x).
    assert traced.tool_seconds is not None and traced.tool_seconds > 0.05
    assert invocation.duration == round((traced.end_time_ns - traced.start_time_ns) / 1e9, 3)


def test_helm_2_asks_back_without_tools() -> None:
    traced = only_invocation(AGENTEVALS / "helm_2.json")
    assert content_text(traced.invocation.user_content) == "get me all the Helm releases"
    assert calls(traced) == []
    assert data(traced).tool_responses == []
    assert final_text(traced).startswith("To help you effectively, could you please specify the namespace")


def test_helm_3_lists_all_namespaces_as_json() -> None:
    traced = only_invocation(AGENTEVALS / "helm_3.json")
    assert content_text(traced.invocation.user_content) == "I need all the Helm releases right now!!"
    assert calls(traced) == [("helm_list_releases", {"all_namespaces": "true", "output": "json"})]
    assert mcp_text(traced).startswith('[{"name":"jaeger","namespace":"jaeger"')
    assert final_text(traced).startswith("Got it — I listed all releases across all namespaces.")
    assert traced.model == "gpt-5-mini"


def test_helm_3_matches_the_eval_set_recorded_from_the_same_run() -> None:
    traced = only_invocation(AGENTEVALS / "helm_3.json")
    eval_set = AdkEvalSet.model_validate_json((AGENTEVALS / "evalset_helm_3_2026-02-23.json").read_text())
    [expected] = eval_set.eval_cases[0].conversation or []
    actual = adk_eval_case.Invocation.model_validate(traced.invocation.model_dump(mode="json"))

    assert actual.user_content == expected.user_content
    assert actual.final_response == expected.final_response
    assert adk_eval_case.get_all_tool_calls(actual.intermediate_data) == adk_eval_case.get_all_tool_calls(
        expected.intermediate_data
    )


def test_k8s_answers_without_a_tool() -> None:
    traced = only_invocation(AGENTEVALS / "k8s.json")
    assert content_text(traced.invocation.user_content) == "list all Helm releases"
    assert calls(traced) == []
    assert data(traced).tool_responses == []
    assert final_text(traced).startswith("To list all Helm releases, I would typically use Helm CLI commands")
    assert traced.agent_name == "k8s_agent"


def test_tempo_export_with_a_foreign_invoke_agent_root() -> None:
    # kagent's Go controller wraps the run in its own unnamed `invoke_agent` span above HTTP; ADK's `invocation` span
    # is still the invocation's root.
    traced = only_invocation(AGENTEVALS / "tempo_export_with_batches.json")
    assert content_text(traced.invocation.user_content) == "list all helm releases\n"
    assert calls(traced) == [("helm_list_releases", {})]
    assert "kagent-crds" in mcp_text(traced)
    assert final_text(traced).startswith("There are two Helm releases currently deployed:")
    assert traced.span_id == "a888122261574777"
    assert traced.agent_name == "helm_agent"


def test_adk_2_5_live_spans_calculator() -> None:
    traced = only_invocation(STRANDS / "adk_live_spans.json")
    assert content_text(traced.invocation.user_content) == "What is 15 multiplied by 37?"
    assert calls(traced) == [("calculator", {"expression": "15 * 37"})]
    assert [(r.id, r.name, r.response) for r in data(traced).tool_responses] == [
        ("uwpsprd2", "calculator", {"result": "555"})
    ]
    assert final_text(traced) == "15 multiplied by 37 is 555."
    assert (traced.agent_name, traced.model) == ("math_agent", "gemini-3.5-flash")
    assert traced.token_usage.reasoning_tokens == 32 + 20
    assert traced.invocation.invocation_id == "e-5742fbee-9bb9-4445-b224-7ae0041d6631"


@pytest.mark.parametrize(
    ("trace_file", "score", "status"),
    [("helm.json", 1.0, AdkEvalStatus.PASSED), ("k8s.json", 0.0, AdkEvalStatus.FAILED)],
)
def test_published_trajectory_outcomes_with_adks_evaluator(trace_file: str, score: float, status: int) -> None:
    """agentevals publishes helm.json + eval_set_helm.json -> 1.0 PASSED and k8s.json -> 0.0 FAILED."""
    traced = only_invocation(AGENTEVALS / trace_file)
    eval_set = AdkEvalSet.model_validate_json((AGENTEVALS / "eval_set_helm.json").read_text())
    expected = eval_set.eval_cases[0].conversation or []
    actual = [adk_eval_case.Invocation.model_validate(traced.invocation.model_dump(mode="json"))]

    result = TrajectoryEvaluator(threshold=1.0).evaluate_invocations(actual, expected)

    assert result.overall_score == score
    assert result.overall_eval_status == status
