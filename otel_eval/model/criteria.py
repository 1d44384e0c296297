"""Metric criteria and the eval config, wire-compatible with ADK 2.13's ``eval_metrics`` / ``eval_config``.

Every criterion accepts snake_case and camelCase keys. ``BaseCriterion`` keeps unknown keys (as ADK does), and
each metric re-validates the criterion into its own type with :meth:`BaseCriterion.as_type`.
"""

from __future__ import annotations

import difflib
from enum import Enum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, alias_generators, field_validator, model_validator

from otel_eval.model import genai as genai_types
from otel_eval.model._base import EvalBaseModel
from otel_eval.model.eval_case import Rubric, repeated_rubric_ids, repeated_rubric_ids_error
from otel_eval.model.simulator_config import LiveModelConfig, UserSimulatorConfig, with_default_simulator_type

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"

CriterionT = TypeVar("CriterionT", bound="BaseCriterion")


class JudgeModelOptions(EvalBaseModel):
    """Which judge model to use and how often to sample it."""

    judge_model: str = Field(default=DEFAULT_JUDGE_MODEL, description="The judge model name.")
    judge_model_config: genai_types.GenerateContentConfig | None = Field(
        default=None, description="Generation config for the judge model."
    )
    num_samples: int = Field(default=5, ge=1, description="Samples per invocation, aggregated by the metric's vote.")
    parallelism_limit: int = Field(default=1, ge=1, description="ADK's per-metric parallelism (accepted, unused).")

    @field_validator("judge_model")
    @classmethod
    def _names_a_model(cls, value: str) -> str:
        # ADK's model registry resolves no blank name ("Model  not found"): refused when the criterion is read.
        if not value.strip():
            raise ValueError("judge_model must name a model (ADK's model registry resolves no empty name)")
        return value


class BaseCriterion(BaseModel):
    """A threshold plus metric-specific options; unknown keys are kept for the metric to read."""

    model_config = ConfigDict(
        alias_generator=alias_generators.to_camel, populate_by_name=True, extra="allow", loc_by_alias=False
    )

    threshold: float = Field(description="Scores at or above this pass.")
    include_intermediate_responses_in_final: bool = Field(
        default=False, description="Judge intermediate texts together with the final response."
    )

    def misspelled_options(self) -> dict[str, str]:
        """Each key this criterion keeps as unknown that is close to one of its options (``match_typ``: ``match_type``),
        with that option. ADK keeps such a key and ignores it, leaving the option meant at its default: refused where
        a metric takes its criterion (stricter than ADK 2.13)."""
        options = [key for name, field in type(self).model_fields.items() for key in (name, field.alias) if key]
        found = {}
        for key in self.model_extra or {}:
            close = difflib.get_close_matches(key, options, n=1, cutoff=0.85)
            if close:
                found[key] = close[0]
        return found

    def as_type(self, criterion_type: type[CriterionT]) -> CriterionT:
        """Re-validates this criterion (with its extra keys) as ``criterion_type``, as ADK's evaluators do."""
        if isinstance(self, criterion_type):
            return self
        # Only what was given: a default of this type stays a default (not "set") in the other.
        return criterion_type.model_validate(self.model_dump(exclude_unset=True))


class LlmAsAJudgeCriterion(BaseCriterion):
    """Criterion of an LLM-judged metric."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsBasedCriterion(BaseCriterion):
    """Criterion of a rubric-based metric."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    rubrics: list[Rubric] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rubric_ids_unique(self) -> RubricsBasedCriterion:
        # Stricter than ADK 2.13, which takes such a criterion and fails on each invocation it evaluates.
        found = repeated_rubric_ids(self.rubrics, ("rubrics",))
        if found:
            raise repeated_rubric_ids_error(type(self).__name__, found)
        return self


class EvalServiceCriterion(BaseCriterion):
    """Criterion of a metric ADK 2.13 scores with Vertex AI's evaluation service (``safety_v1``,
    ``response_evaluation_score``, the ``multi_turn_*`` metrics).

    ADK's criterion for these is a plain ``BaseCriterion``: ``judge_model_options`` is an extra field it ignores, so
    any value is accepted. Here valid judge options choose the judge (the Gemini judge scores them when Vertex AI is
    not configured); any other value is kept as given, unused, and the judge's defaults apply.
    """

    judge_model_options: JudgeModelOptions | Any = Field(default_factory=JudgeModelOptions, union_mode="left_to_right")


class HallucinationsCriterion(BaseCriterion):
    """Criterion of ``hallucinations_v1``."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    evaluate_intermediate_nl_responses: bool = Field(
        default=False, description="Also check texts the agent sent before its final response."
    )


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    """Criterion of ``per_turn_user_simulator_quality_v1``."""

    stop_signal: str = Field(default="</finished>", description="The simulator's end-of-conversation signal.")


class ToolTrajectoryCriterion(BaseCriterion):
    """Criterion of ``tool_trajectory_avg_score``."""

    class MatchType(Enum):
        """How actual tool calls must match the expected ones."""

        EXACT = 0
        IN_ORDER = 1
        ANY_ORDER = 2

    match_type: MatchType = Field(default=MatchType.EXACT)
    ignore_args: bool = Field(default=False, description="Compare tool names only.")

    @field_validator("match_type", mode="before")
    @classmethod
    def _coerce_match_type(cls, value: object) -> object:
        if isinstance(value, str):
            normalized = value.strip().upper().replace("-", "_").replace(" ", "_")
            if normalized in cls.MatchType.__members__:
                return cls.MatchType[normalized]
        return value


MatchMode = Literal["name_only", "name_and_args", "name_and_required_args"]
ArgumentStrategy = Literal["exact", "casefold_exact", "numeric", "contains"]


class ToolParameterMatchCriterion(BaseCriterion):
    """Criterion of ``tool_parameter_match`` (ADK feature request #5643)."""

    match_mode: MatchMode = Field(default="name_and_required_args", description="How calls are aligned.")
    default_strategy: ArgumentStrategy = Field(default="exact", description="How an argument value is compared.")
    per_arg_strategies: dict[str, ArgumentStrategy] | None = Field(default=None, description="Per-argument override.")
    numeric_tolerance: float = Field(default=0.0, ge=0.0, description="Absolute tolerance of the numeric strategy.")
    ordered: bool = Field(default=True, description="Align calls in order (else any order).")


class ToolTrajectoryF1Criterion(BaseCriterion):
    """Criterion of ``tool_trajectory_f1`` (ADK proposal #5306)."""

    match_mode: MatchMode = Field(default="name_and_args", description="What makes two calls match.")
    ordered: bool = Field(default=False, description="Monotonic (in-order) alignment instead of any-order.")
    required_args: dict[str, list[str]] | None = Field(
        default=None, description="Tool -> argument keys compared under name_and_required_args (default: all)."
    )


class CodeConfig(BaseModel):
    """Where code lives: ``name`` is the fully qualified name of a function (``package.module.function``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Fully qualified name of the function, e.g. ``mypkg.metrics.my_metric``.")


class Interval(EvalBaseModel):
    """A range of values, e.g. ``[0, 1]``."""

    min_value: float = Field(description="The smaller end of the interval.")
    open_at_min: bool = Field(default=False, description="Whether ``min_value`` itself is excluded.")
    max_value: float = Field(description="The larger end of the interval.")
    open_at_max: bool = Field(default=False, description="Whether ``max_value`` itself is excluded.")


class MetricValueInfo(EvalBaseModel):
    """The kind of values a metric produces."""

    interval: Interval | None = Field(default=None, description="The metric's values lie in this interval.")


class CustomMetricInfo(EvalBaseModel):
    """ADK's ``MetricInfo`` of a custom metric: its description and value range."""

    metric_name: str = Field(description="Required by ADK; replaced by the metric's key in ``custom_metrics``.")
    description: str | None = Field(default=None, description="A 2 to 3 line description of the metric.")
    metric_value_info: MetricValueInfo = Field(description="The values the metric produces.")
    requires_threshold: bool = Field(default=True, description="Whether a threshold gives the metric a verdict.")


class CustomMetricConfig(BaseModel):
    """ADK's ``CustomMetricConfig``: the function that computes a custom metric, and what it is.

    Only data: nothing is imported when a config is read. The evaluation engine imports ``code_config.name`` only
    for the process's own configuration (see :mod:`otel_eval.metrics.custom_metric`).
    """

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True)

    code_config: CodeConfig = Field(description="Locates the custom metric function.")
    metric_info: CustomMetricInfo | None = Field(default=None, description="Range and description of the metric.")
    description: str = Field(default="", description="Description used when ``metric_info`` is not given.")


class EvalConfig(BaseModel):
    """Which metrics to run and their criteria: ``{"criteria": {"metric": 0.8 | {...}}}``."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True, loc_by_alias=False)

    criteria: dict[str, float | SerializeAsAny[BaseCriterion]] = Field(default_factory=dict)
    custom_metrics: dict[str, CustomMetricConfig] | None = Field(
        default=None,
        description="Metric name -> the function computing it (ADK's custom metrics); a name in ``criteria`` that is "
        "here runs that function.",
    )
    user_simulator_config: UserSimulatorConfig | None = Field(
        default=None, description="ADK's user simulator settings: checked as ADK checks them, otherwise unused."
    )
    live_model_config: LiveModelConfig | None = Field(
        default=None, description="ADK's live-model settings: checked as ADK checks them, otherwise unused."
    )

    @model_validator(mode="before")
    @classmethod
    def _default_simulator_type(cls, values: Any) -> Any:
        return with_default_simulator_type(values)

    def criterion_for(self, metric_name: str) -> BaseCriterion:
        """The criterion of ``metric_name`` as a :class:`BaseCriterion` (a bare number becomes its threshold)."""
        value = self.criteria[metric_name]
        if isinstance(value, BaseCriterion):
            return value
        return BaseCriterion(threshold=float(value))


DEFAULT_EVAL_CONFIG = EvalConfig(criteria={"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8})
"""ADK's default criteria when no config file is given at all (a config with empty ``criteria`` runs only the
informational efficiency metrics, as in ADK)."""
