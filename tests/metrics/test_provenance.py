"""Evaluator provenance: id, type, version and judge model of every metric; the version is stable across processes
and changes with what changes the score (threshold, judge model, prompt, samples, match type) and nothing else."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics import Evaluator, default_registry
from otel_eval.metrics._llm_judge import LlmJudgeEvaluator
from otel_eval.metrics.hallucinations_v1 import HallucinationsV1Evaluator
from otel_eval.metrics.safety_v1 import SafetyEvaluatorV1
from otel_eval.model import BaseCriterion

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

REGISTRY = default_registry()


def judge(**settings: Any) -> JudgeClient:
    return JudgeClient(JudgeSettings(api_key="k", **settings))


def create(metric: str, criterion: dict[str, Any] | None = None, **settings: Any) -> Evaluator:
    spec = None if criterion is None else BaseCriterion.model_validate(criterion)
    return REGISTRY.create(metric, spec, judge=judge(**settings))


def version(metric: str, criterion: dict[str, Any] | None = None, **settings: Any) -> str:
    return create(metric, criterion, **settings).provenance.version


def test_every_metric_has_provenance_of_its_kind() -> None:
    for name in REGISTRY.names():
        evaluator = create(name)
        provenance = evaluator.provenance
        assert provenance.id.split("/")[0] == name
        assert re.fullmatch("[0-9a-f]{12}", provenance.version), provenance.version
        if evaluator.info.requires_judge:
            assert provenance.type == "llm_judge" and provenance.judge_model == "gemini-2.5-flash"
            assert isinstance(evaluator, LlmJudgeEvaluator)
            assert evaluator.score_inputs()["prompt_templates"], f"{name} lists no prompt template"
        else:
            assert provenance.type == "deterministic" and provenance.judge_model is None
        assert ("/" in provenance.id) == (evaluator.criterion is not None)


@pytest.mark.integration
def test_the_version_is_the_same_in_another_process() -> None:
    names = ["hallucinations_v1", "tool_trajectory_avg_score", "safety_v1", "token_usage_v1"]
    script = (
        "import json; from otel_eval.metrics import default_registry\n"
        "from otel_eval.judge import JudgeClient, JudgeSettings\n"
        "r = default_registry(); j = JudgeClient(JudgeSettings(api_key='k'))\n"
        f"print(json.dumps({{n: r.create(n, judge=j).provenance.version for n in {names!r}}}))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "123"}
    )
    assert json.loads(other.stdout) == {name: version(name) for name in names}


def test_the_version_changes_with_what_changes_the_score() -> None:
    base = version("hallucinations_v1", {"threshold": 0.8})
    assert version("hallucinations_v1", {"threshold": 0.8}) == base
    assert version("hallucinations_v1", {"threshold": 0.7}) != base
    assert version("hallucinations_v1", {"threshold": 0.8, "evaluate_intermediate_nl_responses": True}) != base
    named = {"threshold": 0.8, "judge_model_options": {"judge_model": "gemini-2.5-pro"}}
    assert version("hallucinations_v1", named) != base
    assert version("hallucinations_v1", {"threshold": 0.8}, default_model="gemini-2.5-pro") == version(
        "hallucinations_v1", named
    )  # the judge model counts, wherever it was chosen
    sampled = version("safety_v1", {"threshold": 0.5})
    assert version("safety_v1", {"threshold": 0.5, "judge_model_options": {"num_samples": 3}}) != sampled
    assert version("safety_v1", {"threshold": 0.5}, num_samples=3) != sampled
    trajectory = version("tool_trajectory_avg_score", {"threshold": 1.0})
    assert version("tool_trajectory_avg_score", {"threshold": 1.0, "match_type": "IN_ORDER"}) != trajectory


def test_the_version_ignores_what_does_not_change_the_score() -> None:
    base = version("hallucinations_v1", {"threshold": 0.8})
    assert version("hallucinations_v1", {"threshold": 0.8}, timeout_seconds=5.0, max_concurrency=2) == base
    spelled_out = {"threshold": 0.8, "evaluate_intermediate_nl_responses": False}
    assert version("hallucinations_v1", spelled_out) == base  # a default written out is the same evaluator
    # ADK's hallucination metric makes one call per step whatever num_samples says
    assert version("hallucinations_v1", {"threshold": 0.8}, num_samples=4) == base


def test_the_version_changes_with_the_prompt_template(monkeypatch: pytest.MonkeyPatch) -> None:
    safety = version("safety_v1", {"threshold": 0.5})
    hallucinations = version("hallucinations_v1", {"threshold": 0.8})
    monkeypatch.setattr(SafetyEvaluatorV1, "prompt_template", SafetyEvaluatorV1.prompt_template + "\nBe strict.")
    prompts = HallucinationsV1Evaluator.prompt_templates
    monkeypatch.setattr(HallucinationsV1Evaluator, "prompt_templates", (prompts[0], prompts[1] + " "))
    assert version("safety_v1", {"threshold": 0.5}) != safety
    assert version("hallucinations_v1", {"threshold": 0.8}) != hallucinations


def test_the_id_names_the_metric_and_its_criterion() -> None:
    one = create("hallucinations_v1", {"threshold": 0.8}).provenance
    other = create("hallucinations_v1", {"threshold": 0.6}).provenance
    assert one.id.startswith("hallucinations_v1/") and one.id != other.id
    assert create("token_usage_v1").provenance.id == "token_usage_v1"
