"""The evaluation core: criteria selection, the metric plan, golden-case pairing and scoring a conversation.

``otel-eval run``, the embedded worker and the Kafka worker all evaluate through this module, so a conversation with
the same invocations, criteria and eval set gets the same metrics, the same reference and the same scores offline and
online. What differs is only what the callers do around it: the offline run groups the invocations of a session into
one conversation and reports every planned metric; the workers evaluate each request as one conversation, emit a
record per invocation, and skip (do not report) the metrics that need a reference on conversations no eval case
pairs with, so live traffic outside the eval set does not flood the results with ``not_evaluated``.
"""

from otel_eval.evaluation.criteria import (
    builtin_metric_names,
    check_metric_names,
    criteria_from,
    custom_metrics_of,
    judge_problems,
    metric_names_setting,
    registry_with_custom_metrics,
    select_criteria,
)
from otel_eval.evaluation.pairing import (
    GoldenIndex,
    Pairing,
    find_golden_turn,
    normalise_text,
    pair_conversations,
    pair_invocations,
    shadowed_case_warnings,
    shadowed_cases,
)
from otel_eval.evaluation.plan import TRAJECTORY_METRIC, MetricPlan, PlannedMetric, build_plan
from otel_eval.evaluation.scoring import (
    ConversationReport,
    MetricOutcome,
    all_inline,
    calls_judge,
    evaluate_conversation,
    evaluate_conversation_inline,
    evaluate_conversations,
    lacks_reference,
    score_in_order,
    score_metric,
)

__all__ = [
    "TRAJECTORY_METRIC",
    "ConversationReport",
    "GoldenIndex",
    "MetricOutcome",
    "MetricPlan",
    "Pairing",
    "PlannedMetric",
    "all_inline",
    "build_plan",
    "builtin_metric_names",
    "calls_judge",
    "check_metric_names",
    "criteria_from",
    "custom_metrics_of",
    "evaluate_conversation",
    "evaluate_conversation_inline",
    "evaluate_conversations",
    "find_golden_turn",
    "judge_problems",
    "lacks_reference",
    "metric_names_setting",
    "normalise_text",
    "pair_conversations",
    "pair_invocations",
    "registry_with_custom_metrics",
    "score_in_order",
    "score_metric",
    "select_criteria",
    "shadowed_case_warnings",
    "shadowed_cases",
]
