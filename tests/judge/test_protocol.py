"""The Judge protocol: the client implements it, a metric uses whatever judge it is given (never silently the
default one), and an object that is not a judge is refused when the metric is created."""

from __future__ import annotations

from typing import Any

import pytest

from otel_eval.judge import Judge, JudgeClient, JudgeSettings
from otel_eval.metrics import default_registry
from otel_eval.metrics._llm_judge import LlmJudgeEvaluator
from otel_eval.model import JudgeModelOptions


class OtherJudge:
    """A judge that is not a JudgeClient (e.g. a user's own gateway client)."""

    not_configured_reason: str | None = None
    configured = True
    uses_vertex = False

    def model_for(self, options: JudgeModelOptions | None) -> str:
        return "in-house-judge"

    def input_token_limit(self, model: str) -> int:
        return 32_000

    def num_samples_for(self, options: JudgeModelOptions | None, *, default: int | None = None) -> int:
        return 1

    def use_meter_provider(self, meter_provider: Any) -> None:
        return None

    def admit(self, metric: str, calls: Any, *, priority: bool = False) -> None:
        return None  # no budget: every evaluation is admitted

    async def generate(self, request: Any, *, metric: str, sample: int = 0) -> Any:
        raise NotImplementedError

    async def evaluate_instances(self, body: dict[str, Any], *, metric: str) -> dict[str, Any]:
        raise NotImplementedError

    def summary_line(self) -> str:
        return ""


def test_the_client_is_a_judge() -> None:
    assert isinstance(JudgeClient(JudgeSettings(api_key="k")), Judge)


def test_a_metric_uses_the_judge_it_is_given_whatever_its_class() -> None:
    evaluator = default_registry().create("hallucinations_v1", None, judge=OtherJudge())
    assert isinstance(evaluator, LlmJudgeEvaluator)
    assert evaluator.judge_model == "in-house-judge"  # not the default judge's model


def test_an_object_that_is_not_a_judge_is_refused() -> None:
    with pytest.raises(TypeError, match=r"must implement otel_eval\.judge\.Judge, got object"):
        default_registry().create("hallucinations_v1", None, judge=object())  # type: ignore[arg-type]
