"""The label values otel-eval can set, enumerated from the code (registry, status mapping, constants), never typed.

A shipped rule, alert or dashboard query that matches a label against any other value can never match: that is
how the hallucination alert once stayed silent (it matched ``label="fail"`` while the code wrote ``hallucinated``).
"""

from __future__ import annotations

from otel_eval import semconv
from otel_eval.emit.attributes import score_label
from otel_eval.judge.telemetry import OUTCOME_CACHED, OUTCOME_ERROR, OUTCOME_OK
from otel_eval.metrics import default_registry
from otel_eval.model import EvalStatus
from tests.deploy.prometheus_names import prometheus_label_name


def emittable_label_values() -> dict[str, set[str]]:
    """Prometheus label name -> every value the code can give it (labels with open values are not listed)."""
    return {
        prometheus_label_name(semconv.GEN_AI_EVALUATION_NAME): set(default_registry().names()),
        prometheus_label_name(semconv.GEN_AI_EVALUATION_SCORE_LABEL): {score_label(status) for status in EvalStatus},
        prometheus_label_name(semconv.OTEL_EVAL_OUTCOME): {OUTCOME_OK, OUTCOME_CACHED, OUTCOME_ERROR},
        prometheus_label_name(semconv.OTEL_EVAL_DROP_REASON): {
            value for key, value in vars(semconv).items() if key.startswith("DROP_") and isinstance(value, str)
        },
    }
