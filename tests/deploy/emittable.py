"""The label values otel-eval can set, enumerated from the code (registry, status mapping, constants), never typed.

A shipped rule, alert or dashboard query that matches a label against any other value can never match: that is
how the hallucination alert once stayed silent (it matched ``label="fail"`` while the code wrote ``hallucinated``).
"""

from __future__ import annotations

import re

from otel_eval import semconv
from otel_eval.emit.attributes import score_label
from otel_eval.judge import retry
from otel_eval.judge.telemetry import OUTCOME_CACHED, OUTCOME_ERROR, OUTCOME_OK
from otel_eval.metrics import NO_REFERENCE, default_registry
from otel_eval.metrics._llm_judge import INVALID_INPUT
from otel_eval.metrics._reference import CONTENT_NOT_CAPTURED
from otel_eval.model import EvalStatus
from tests.deploy.prometheus_names import prometheus_label_name
from tests.deploy.promql import matched_values, selectors

_CLASS_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


class ErrorTypes(frozenset[str]):
    """``error.type`` values: the named ones (snake_case constants, enumerated) or an exception's class name (open:
    a metric that raises reports its exception's class). A snake_case value that is not named is never set."""

    def __contains__(self, value: object) -> bool:
        return super().__contains__(value) or (isinstance(value, str) and _CLASS_NAME.fullmatch(value) is not None)


def emittable_error_types() -> ErrorTypes:
    """The named ``error.type`` values: the judge's failures, the honest-context refusals, the budget's refusal."""
    named = {
        value
        for key, value in vars(retry).items()
        if key.isupper() and isinstance(value, str) and key.startswith(("JUDGE_", "INCOMPLETE_", "CONTEXT_"))
    }
    named |= {value for key, value in vars(semconv).items() if key.startswith("ERROR_TYPE_") and isinstance(value, str)}
    named |= {NO_REFERENCE, INVALID_INPUT, CONTENT_NOT_CAPTURED}
    return ErrorTypes(named)


def emittable_label_values() -> dict[str, set[str]]:
    """Prometheus label name -> every value the code can give it (labels with open values are not listed)."""
    return {
        prometheus_label_name(semconv.GEN_AI_EVALUATION_NAME): set(default_registry().names()),
        prometheus_label_name(semconv.GEN_AI_EVALUATION_SCORE_LABEL): {score_label(status) for status in EvalStatus},
        prometheus_label_name(semconv.OTEL_EVAL_OUTCOME): {OUTCOME_OK, OUTCOME_CACHED, OUTCOME_ERROR},
        prometheus_label_name(semconv.ERROR_TYPE): emittable_error_types(),
        prometheus_label_name(semconv.OTEL_EVAL_PRIORITY_REASON): {
            "",  # absent: a result of an invocation in the sample
            *(value for key, value in vars(semconv).items() if key.startswith("PRIORITY_REASON_")),
        },
        prometheus_label_name(semconv.OTEL_EVAL_DROP_REASON): {
            value for key, value in vars(semconv).items() if key.startswith("DROP_") and isinstance(value, str)
        },
    }


EMITTABLE_LABEL_VALUES = emittable_label_values()


def check_label_values(expr: str, where: str) -> None:
    """Fails when ``expr`` matches a label against a value otel-eval never sets (a typo that silences a rule)."""
    for matcher in selectors(expr).matchers:
        known = EMITTABLE_LABEL_VALUES.get(matcher.label)
        if known is None:
            continue
        for value in matched_values(matcher):
            if not value.startswith("var_"):
                assert value in known, f"{where}: {matcher.label}{matcher.op}{matcher.value!r}: {value!r} is never set"
