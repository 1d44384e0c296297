"""Which criteria an evaluation request may carry: a request sets the judge's spend and tools, so the Kafka worker
honours its criteria only where its own configuration allows it.

A request from the requests topic is untrusted input: its ``criteria`` could name a judge model on the operator's
key, ask for millions of samples, or give the judge tools (``google_search``, ``code_execution``) and thinking. A
:class:`RequestCriteriaPolicy` checks them before anything is planned: off by default; when on, only allowlisted
metrics and judge models, ``num_samples`` within the cap, and a ``judge_model_config`` with only sampling settings
(``temperature``, ``top_p``, ``top_k``, ``seed`` and a capped ``max_output_tokens``). Refused criteria are not
applied: the request is scored with the worker's own criteria, and the refusal is counted by reason.

The process's own criteria (its configuration file, flags, environment, the embedded processor's arguments) are
trusted and never pass through here: they run as ADK runs them, whatever their ``num_samples``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from otel_eval.environment_variables import (
    DEFAULT_MAX_NUM_SAMPLES,
    DEFAULT_REQUEST_MAX_OUTPUT_TOKENS,
    names_setting,
)

logger = logging.getLogger(__name__)

ANY_METRIC: Final = "*"
"""In :attr:`RequestCriteriaPolicy.metrics`: any registered metric."""

JUDGE_CONFIG_ALLOWED: Final = frozenset({"temperature", "top_p", "top_k", "seed", "max_output_tokens"})
"""The ``judge_model_config`` fields a request may set (snake_case; camelCase spellings are accepted too)."""

REFUSED_NOT_ALLOWED: Final = "not_allowed"
"""Reason: the worker honours no request criteria."""
REFUSED_METRIC: Final = "metric"
"""Reason: a metric not on the allowlist."""
REFUSED_JUDGE_MODEL: Final = "judge_model"
"""Reason: a judge model not on the allowlist."""
REFUSED_NUM_SAMPLES: Final = "num_samples"
"""Reason: ``num_samples`` above the cap (or not a positive integer)."""
REFUSED_JUDGE_CONFIG: Final = "judge_model_config"
"""Reason: a ``judge_model_config`` field off the allowlist, or ``max_output_tokens`` above its cap."""
REFUSED_MALFORMED: Final = "malformed"
"""Reason: criteria that are not ADK's shape."""

_CONFIG_KEYS = frozenset({"criteria", "custom_metrics", "customMetrics"})


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request's criteria were refused: ``reason`` (one of the ``REFUSED_*`` values, a metric attribute) and a
    one-line ``detail`` naming the metric and the offending value (bounded: request text is cut)."""

    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class RequestCriteriaPolicy:
    """What a request's criteria may set.

    Args:
        honour: Whether request criteria are honoured at all (off: every request's criteria are refused).
        metrics: Metrics they may name (:data:`ANY_METRIC` for any).
        judge_models: Judge models they may name (a criterion naming none uses the worker's default judge).
        max_num_samples: The largest ``judge_model_options.num_samples``.
        max_output_tokens: The largest ``judge_model_config.max_output_tokens``.
    """

    honour: bool = False
    metrics: frozenset[str] = frozenset()
    judge_models: frozenset[str] = frozenset()
    max_num_samples: int = DEFAULT_MAX_NUM_SAMPLES
    max_output_tokens: int = DEFAULT_REQUEST_MAX_OUTPUT_TOKENS

    @classmethod
    def create(
        cls,
        *,
        honour: bool = False,
        metrics: Iterable[str] | str = (),
        judge_models: Iterable[str] | str = (),
        max_num_samples: int = DEFAULT_MAX_NUM_SAMPLES,
        max_output_tokens: int = DEFAULT_REQUEST_MAX_OUTPUT_TOKENS,
    ) -> RequestCriteriaPolicy:
        """A policy from settings: the allowlists as iterables or comma-separated text."""
        return cls(honour, _names(metrics), _names(judge_models), max_num_samples, max_output_tokens)

    def refusal(self, criteria: Any) -> Refusal | None:
        """Why ``criteria`` (a request's, as it arrived) may not be applied, or None when they may."""
        if not self.honour:
            return Refusal(REFUSED_NOT_ALLOWED, "this worker honours no request criteria (OTEL_EVAL_REQUEST_CRITERIA)")
        if not isinstance(criteria, Mapping):
            return Refusal(REFUSED_MALFORMED, "criteria are not an object")
        if set(criteria) & _CONFIG_KEYS:
            if set(criteria) - {"criteria"}:  # custom metrics import code: never from a request
                return Refusal(REFUSED_MALFORMED, "a request's criteria may not declare custom metrics")
            criteria = criteria["criteria"]
            if not isinstance(criteria, Mapping):
                return Refusal(REFUSED_MALFORMED, "'criteria' is not an object")
        for name, criterion in criteria.items():
            refusal = self._criterion_refusal(str(name), criterion)
            if refusal is not None:
                return refusal
        return None

    def _criterion_refusal(self, name: str, criterion: Any) -> Refusal | None:
        if ANY_METRIC not in self.metrics and name not in self.metrics:
            return Refusal(REFUSED_METRIC, f"metric {_cut(name)!r} is not allowed in requests")
        if not isinstance(criterion, Mapping):
            return None  # a bare threshold
        options = _field(criterion, "judge_model_options")
        if options is None:
            return None
        if not isinstance(options, Mapping):
            return Refusal(REFUSED_MALFORMED, f"{_cut(name)}: judge_model_options is not an object")
        model = _field(options, "judge_model")
        if model is not None and (not isinstance(model, str) or model not in self.judge_models):
            return Refusal(REFUSED_JUDGE_MODEL, f"{_cut(name)}: judge model {_cut(str(model))!r} is not allowed")
        samples = _field(options, "num_samples")
        if samples is not None and not _within(samples, self.max_num_samples):
            return Refusal(
                REFUSED_NUM_SAMPLES, f"{_cut(name)}: num_samples {_cut(str(samples))} above {self.max_num_samples}"
            )
        return self._config_refusal(name, _field(options, "judge_model_config"))

    def _config_refusal(self, name: str, config: Any) -> Refusal | None:
        if config is None:
            return None
        if not isinstance(config, Mapping):
            return Refusal(REFUSED_MALFORMED, f"{_cut(name)}: judge_model_config is not an object")
        for key, value in config.items():
            field = _snake(str(key))
            if value is None:
                continue
            if field not in JUDGE_CONFIG_ALLOWED:
                return Refusal(
                    REFUSED_JUDGE_CONFIG, f"{_cut(name)}: judge_model_config.{_cut(str(key))} is not allowed"
                )
            if field == "max_output_tokens" and not _within(value, self.max_output_tokens):
                return Refusal(
                    REFUSED_JUDGE_CONFIG,
                    f"{_cut(name)}: judge_model_config.max_output_tokens {_cut(str(value))} above "
                    f"{self.max_output_tokens}",
                )
        return None


class RequestGate:
    """Applies a :class:`RequestCriteriaPolicy` to requests' criteria and reports the refusals: ``on_refused`` with
    each, and a log line for the first of each reason. Without a policy every request's criteria are admitted (the
    requests come from the process itself)."""

    def __init__(
        self, policy: RequestCriteriaPolicy | None, on_refused: Callable[[Refusal], None] | None = None
    ) -> None:
        self.policy = policy
        self._on_refused = on_refused
        self._logged: set[str] = set()

    def admits(self, criteria: Any, *, report: bool = True) -> bool:
        """Whether ``criteria`` (a request's) may be applied; a refusal is reported when ``report``."""
        refusal = self.policy.refusal(criteria) if self.policy is not None else None
        if refusal is None:
            return True
        if report:
            if self._on_refused is not None:
                self._on_refused(refusal)
            if refusal.reason not in self._logged:
                self._logged.add(refusal.reason)
                logger.warning(
                    "criteria of a request refused (%s): %s; it is scored with the worker's own criteria "
                    "(further refusals for this reason are only counted)",
                    refusal.reason,
                    refusal.detail,
                )
        return False


def _names(value: Iterable[str] | str) -> frozenset[str]:
    return frozenset(names_setting(value))


def _field(data: Mapping[str, Any], name: str) -> Any:
    """``data[name]`` under its snake_case or camelCase spelling (as the criteria models accept either)."""
    if name in data:
        return data[name]
    head, *rest = name.split("_")
    return data.get(head + "".join(part.capitalize() for part in rest))


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _within(value: Any, cap: int) -> bool:
    """Whether ``value`` is no larger than ``cap``, read as pydantic reads a number (``"1e9"`` and ``"20"`` are
    numbers too); a value that is no number at all is left to the criterion's schema."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return math.isfinite(value) and value <= cap


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
