"""How the judge is configured: model defaults, timeouts, retries, concurrency, cache, prices, endpoint.

Each provider reads its own credentials (:mod:`otel_eval.judge.providers`). For Gemini they are google-genai's own
configuration, read unchanged: ``GOOGLE_API_KEY`` /
``GEMINI_API_KEY`` for the Gemini API, ``GOOGLE_GENAI_USE_VERTEXAI`` with ``GOOGLE_CLOUD_PROJECT`` /
``GOOGLE_CLOUD_LOCATION`` for Vertex AI, and ``GOOGLE_GEMINI_BASE_URL`` / ``GOOGLE_VERTEX_BASE_URL`` for a gateway.
``base_url`` / ``api_key`` here override them (``OTEL_EVAL_JUDGE_BASE_URL`` / ``OTEL_EVAL_JUDGE_API_KEY``, or explicit
wiring): for the judge only, so an agent on google-genai keeps its own endpoint. Everything else is
``OTEL_EVAL_JUDGE_*``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from otel_eval import environment_variables as env
from otel_eval._runtime.field_types import check_field_types
from otel_eval.errors import ConfigurationError
from otel_eval.judge.budget import BudgetSpec
from otel_eval.model import DEFAULT_JUDGE_MODEL

logger = logging.getLogger(__name__)

_MIN_REPLY_CHARACTERS = 1024
"""The smallest ``OTEL_EVAL_JUDGE_MAX_REPLY_CHARS`` accepted."""
DEFAULT_MAX_CONCURRENCY = 8
"""Judge calls in flight at once when neither ``OTEL_EVAL_JUDGE_MAX_CONCURRENCY`` nor a flag says."""

DEFAULT_PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.0-flash-lite": (0.075, 0.30),
}
OPENAI_PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.0, 8.0),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}
"""OpenAI's published standard-tier list prices, USD per million (input, output) tokens (output includes reasoning
tokens, as OpenAI bills them)."""
ANTHROPIC_PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.80, 4.0),
}
"""Anthropic's published list prices (the Anthropic API; Vertex AI lists the same), USD per million (input, output)
tokens, base input (no prompt caching)."""
DEFAULT_PRICES_PER_MILLION.update(OPENAI_PRICES_PER_MILLION)
DEFAULT_PRICES_PER_MILLION.update(ANTHROPIC_PRICES_PER_MILLION)
"""Google's, OpenAI's and Anthropic's published paid-tier list prices, USD per million (input, output) tokens; override
with ``OTEL_EVAL_JUDGE_PRICES``. Output includes thinking tokens, as the providers bill them. A model is looked up by
its name, then without a LiteLLM route (``openai/``, ``anthropic/``, ``vertex_ai/``, …) and a dated or ``@`` version
suffix (``claude-sonnet-4-5@20250929``, ``gpt-4o-mini-2024-07-18``)."""


DEFAULT_INPUT_TOKEN_LIMITS: dict[str, int] = {
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-flash-lite": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.0-flash-lite": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 272_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,
}
"""Input token limits of judge models as Google, OpenAI and Anthropic publish them (model cards), looked up by the
longest name prefix (after a LiteLLM route such as ``openai/``), so dated and preview variants
(``gemini-2.5-flash-preview-05-20``, ``gpt-4o-mini-2024-07-18``) get their family's limit; override or extend with
``OTEL_EVAL_JUDGE_INPUT_LIMITS`` (:func:`parse_input_token_limits`)."""
UNKNOWN_MODEL_INPUT_TOKEN_LIMIT = 128_000
"""Input limit assumed for a judge model not in :data:`DEFAULT_INPUT_TOKEN_LIMITS` (a gateway's own model names):
a window most current models have, so a prompt that would be cut or refused is not sent."""


def input_token_limit(model: str, limits: Mapping[str, int] | None = None) -> int:
    """The input token limit of judge ``model``: the entry with the longest prefix of its name, else
    :data:`UNKNOWN_MODEL_INPUT_TOKEN_LIMIT`."""
    table = DEFAULT_INPUT_TOKEN_LIMITS if limits is None else limits
    for name in dict.fromkeys((model.removeprefix("models/"), _without_route(model))):
        matches = [key for key in table if name.startswith(key)]
        if matches:
            return table[max(matches, key=len)]
    return UNKNOWN_MODEL_INPUT_TOKEN_LIMIT


_DATED = re.compile(r"(?:@.*|-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


def _without_route(model: str) -> str:
    """``model`` without a LiteLLM route (``openai/gpt-4o`` -> ``gpt-4o``) or a ``models/`` prefix."""
    return model.removeprefix("models/").rpartition("/")[2]


def price_names(model: str) -> tuple[str, ...]:
    """The names a model's price is looked up by, in order: as given (without ``models/``), without its LiteLLM
    route, and without a dated or ``@`` version suffix."""
    name = model.removeprefix("models/")
    bare = _without_route(name)
    return tuple(dict.fromkeys((name, bare, _DATED.sub("", bare))))


def parse_input_token_limits(text: str, *, source: str = env.OTEL_EVAL_JUDGE_INPUT_LIMITS) -> dict[str, int]:
    """:data:`DEFAULT_INPUT_TOKEN_LIMITS` updated by a JSON object ``{"model-or-prefix": tokens}`` (the same
    longest-prefix rule applies to the entries).

    Raises:
        ConfigurationError: not JSON, not an object, an empty name, or a limit that is not a positive integer.
    """
    raw = text.strip()
    try:
        data = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{source}: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(
            f'{source}: expected an object of model name or prefix -> tokens, e.g. {{"my-judge": 32000}}'
        )
    table = dict(DEFAULT_INPUT_TOKEN_LIMITS)
    for model, tokens in data.items():
        name = str(model).strip().removeprefix("models/")
        if not name:
            raise ConfigurationError(f"{source}: model {model!r}: expected a model name or prefix")
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
            raise ConfigurationError(
                f"{source}: model {model!r}: input limit {tokens!r} is not a positive integer number of tokens"
            )
        table[name] = tokens
    return table


_NUMBER_FIELDS: Final = frozenset(
    {
        "num_samples",
        "max_concurrency",
        "timeout_seconds",
        "max_attempts",
        "max_total_seconds",
        "initial_backoff_seconds",
        "max_backoff_seconds",
        "cache_size",
    }
)
"""The numeric fields of :class:`JudgeSettings`, whose types are checked before their ranges."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    """USD per million tokens by model name (input, output). Unknown models cost ``None``."""

    per_million: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES_PER_MILLION))

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """Cost of one call in USD, or None when the model has no price."""
        price = next((self.per_million[name] for name in price_names(model) if name in self.per_million), None)
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000

    @classmethod
    def parse(cls, text: str, *, source: str = env.OTEL_EVAL_JUDGE_PRICES) -> PriceTable:
        """Defaults updated by a JSON table ``{"model": {"input": 0.3, "output": 2.5}}`` (or a path to one).

        Raises:
            ConfigurationError: not JSON, or a model entry without numeric ``input`` and ``output``.
        """
        raw = text.strip()
        if raw and not raw.startswith("{"):
            try:
                raw = Path(raw).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigurationError(f"{source}: cannot read price table file {text!r}: {exc}") from exc
        try:
            data = json.loads(raw) if raw else {}
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{source}: invalid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"{source}: expected an object of model -> {{input, output}}")
        table = dict(DEFAULT_PRICES_PER_MILLION)
        for model, entry in data.items():
            if not isinstance(entry, dict) or not all(
                isinstance(entry.get(key), (int, float)) and not isinstance(entry.get(key), bool)
                for key in ("input", "output")
            ):
                raise ConfigurationError(f"{source}: model {model!r}: expected numeric 'input' and 'output' prices")
            table[str(model)] = (float(entry["input"]), float(entry["output"]))
        return cls(table)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """Everything the :class:`~otel_eval.judge.JudgeClient` needs besides google-genai's own configuration.

    Attributes:
        default_model: Judge model for criteria that name none (``judge_model_options`` without ``judge_model``).
        num_samples: When set, overrides every criterion's ``judge_model_options.num_samples``.
        max_concurrency: Judge calls in flight at once, shared by every metric using the client (per event loop).
        timeout_seconds: Per HTTP attempt; a slower answer is abandoned and retried.
        max_attempts: Attempts per call on 429 / 5xx / timeouts / connection errors.
        max_total_seconds: Bound on one call including all retries and backoff sleeps.
        initial_backoff_seconds: First backoff; doubles per attempt, full jitter, capped by ``max_backoff_seconds``.
        max_backoff_seconds: Cap of one backoff sleep (a longer ``Retry-After`` is honoured up to the total bound).
        cache_size: Entries of the LRU response cache (0 disables it).
        prices: Price table for the cost figures (and the budget).
        budget: Judge spend limit, USD per hour per process (see :mod:`otel_eval.judge.budget`); None: no limit.
        input_token_limits: Judge models' input limits by name prefix (:func:`input_token_limit`); a prompt over its
            model's limit is not sent (``context_overflow``). Not part of an evaluator's version: it decides whether
            an invocation is judged, never the score a judged one gets.
        api_key: The judge's API key (``OTEL_EVAL_JUDGE_API_KEY``; else google-genai reads ``GOOGLE_API_KEY`` /
            ``GEMINI_API_KEY``). Never logged.
        base_url: The judge's endpoint (``OTEL_EVAL_JUDGE_BASE_URL``; else google-genai reads
            ``GOOGLE_GEMINI_BASE_URL`` / ``GOOGLE_VERTEX_BASE_URL``).
        api_version: API version path segment (google-genai's default when None).
        vertexai: Use Vertex AI (else google-genai reads ``GOOGLE_GENAI_USE_VERTEXAI``).
        project: Vertex AI project (else ``GOOGLE_CLOUD_PROJECT``).
        location: Vertex AI location (else ``GOOGLE_CLOUD_LOCATION``).
        own_trace: The judge's ``generate_content`` spans go into a trace of their own (a ``judge {metric}`` root
            linked to the ``evaluate {metric}`` span, and back), so the agent's trace holds only the agent's token
            usage and cost; False: children of the ``evaluate`` span, in the agent's trace
            (``OTEL_EVAL_JUDGE_OWN_TRACE``).
    """

    default_model: str = DEFAULT_JUDGE_MODEL
    num_samples: int | None = None
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    timeout_seconds: float = 60.0
    max_attempts: int = 5
    max_total_seconds: float = 300.0
    initial_backoff_seconds: float = 1.0
    max_backoff_seconds: float = 30.0
    cache_size: int = 4096
    prices: PriceTable = field(default_factory=PriceTable)
    budget: BudgetSpec | None = None
    input_token_limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_INPUT_TOKEN_LIMITS))
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = field(default=None, repr=False)  # it may carry user:password@
    api_version: str | None = None
    vertexai: bool | None = None
    project: str | None = None
    location: str | None = None
    own_trace: bool = env.DEFAULT_JUDGE_OWN_TRACE

    def __post_init__(self) -> None:
        try:  # before the range checks, which would fail on a str with a bare TypeError
            check_field_types(self, only=_NUMBER_FIELDS)
        except ValueError as error:
            raise ConfigurationError(f"judge setting {error}") from None
        checks = {
            "max_concurrency": self.max_concurrency >= 1,
            "timeout_seconds": self.timeout_seconds > 0,
            "max_attempts": self.max_attempts >= 1,
            "max_total_seconds": self.max_total_seconds > 0,
            "initial_backoff_seconds": self.initial_backoff_seconds >= 0,
            "max_backoff_seconds": self.max_backoff_seconds >= 0,
            "cache_size": self.cache_size >= 0,
            "num_samples": self.num_samples is None or self.num_samples >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ConfigurationError(f"judge setting {name}={getattr(self, name)!r} is out of range")

    def with_overrides(self, **changes: Any) -> JudgeSettings:
        """A copy with the non-None ``changes`` applied (e.g. from CLI flags)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> JudgeSettings:
        """Settings from ``OTEL_EVAL_JUDGE_*`` variables, then ``overrides`` (None values ignored).

        Raises:
            ConfigurationError: a variable that does not parse, naming it.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        if model := environ.get(env.OTEL_EVAL_JUDGE_MODEL, "").strip():
            values["default_model"] = model
        if base_url := environ.get(env.OTEL_EVAL_JUDGE_BASE_URL, "").strip():
            values["base_url"] = base_url
        if api_key := environ.get(env.OTEL_EVAL_JUDGE_API_KEY, "").strip():
            values["api_key"] = api_key
        for name, key, number in (
            (env.OTEL_EVAL_JUDGE_NUM_SAMPLES, "num_samples", 1),
            (env.OTEL_EVAL_JUDGE_MAX_CONCURRENCY, "max_concurrency", 1),
            (env.OTEL_EVAL_JUDGE_MAX_ATTEMPTS, "max_attempts", 1),
        ):
            if environ.get(name, "").strip():  # unset: the field's own default (num_samples: ADK's per metric)
                values[key] = env.number_setting(environ, name, number, valid=_at_least_one, expected="an integer >= 1")
        if environ.get(env.OTEL_EVAL_JUDGE_TIMEOUT, "").strip():
            values["timeout_seconds"] = env.number_setting(
                environ, env.OTEL_EVAL_JUDGE_TIMEOUT, 1.0, valid=lambda value: value > 0, expected="seconds > 0"
            )
        if prices := environ.get(env.OTEL_EVAL_JUDGE_PRICES, "").strip():
            values["prices"] = PriceTable.parse(prices)
        if limits := environ.get(env.OTEL_EVAL_JUDGE_INPUT_LIMITS, "").strip():
            values["input_token_limits"] = parse_input_token_limits(limits)
        values["budget"] = BudgetSpec.parse(environ.get(env.OTEL_EVAL_JUDGE_BUDGET, ""))
        values["own_trace"] = env.flag_setting(environ, env.OTEL_EVAL_JUDGE_OWN_TRACE, env.DEFAULT_JUDGE_OWN_TRACE)
        max_reply_characters(environ)  # read by the judged metrics per reply: a bad value stops the start-up here
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _at_least_one(value: int) -> bool:
    return value >= 1


def max_reply_characters(environ: Mapping[str, str] | None = None) -> int:
    """The longest judge reply a judged metric parses: ``OTEL_EVAL_JUDGE_MAX_REPLY_CHARS`` (default 64 KiB).

    Read by each judged metric when it checks a reply, and validated at start-up by :meth:`JudgeSettings.from_env`.

    Raises:
        ConfigurationError: the variable is not an integer >= 1024.
    """
    return env.number_setting(
        os.environ if environ is None else environ,
        env.OTEL_EVAL_JUDGE_MAX_REPLY_CHARS,
        env.DEFAULT_JUDGE_MAX_REPLY_CHARS,
        valid=lambda value: value >= _MIN_REPLY_CHARACTERS,
        expected=f"an integer >= {_MIN_REPLY_CHARACTERS}",
    )
