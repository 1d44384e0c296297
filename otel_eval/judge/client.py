"""The judge client: timeouts, retries, a shared concurrency limit, a cache, the budget and per-metric accounting,
the same for every provider; the one HTTP call of each request is made by the provider its judge model resolves to
(:mod:`otel_eval.judge.resolve`: Gemini through google-genai, Claude on Vertex AI, OpenAI Chat Completions, the
LiteLLM routes; :mod:`otel_eval.judge.providers`).

Concurrency: one :class:`JudgeClient` holds one limit shared by every metric (and every provider) that uses it.
asyncio semaphores are bound to an event loop, so the limit is applied per event loop (the CLI and the embedded worker
each run one loop; the process-wide default client from :func:`default_judge` is shared by all metrics of the
process).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry.metrics import MeterProvider

from otel_eval import semconv
from otel_eval._runtime.urls import redact_url
from otel_eval.errors import JudgeError
from otel_eval.judge._loops import PerLoop
from otel_eval.judge._request_reply import JudgeReply, JudgeRequest
from otel_eval.judge.accounting import JudgeAccounting
from otel_eval.judge.budget import (
    Admission,
    CallEstimate,
    JudgeBudget,
    Refusal,
    charge_current,
    current_admission,
    spending,
)
from otel_eval.judge.cache import ReplyCache, request_key
from otel_eval.judge.providers import Provider
from otel_eval.judge.providers.gemini import GeminiProvider
from otel_eval.judge.resolve import CLAUDE_VERTEX, GEMINI, LITELLM, OPENAI, resolve
from otel_eval.judge.retry import JUDGE_CONNECTION, JUDGE_NOT_CONFIGURED, Backoff, Failure, classify
from otel_eval.judge.settings import JudgeSettings, input_token_limit
from otel_eval.judge.telemetry import OUTCOME_CACHED, OUTCOME_ERROR, OUTCOME_OK, JudgeInstruments
from otel_eval.judge.tracing import finish_judge_call_span, judge_call_span
from otel_eval.model import JudgeModelOptions
from otel_eval.model.utf8_json import utf8_value

if TYPE_CHECKING:
    from google import genai

logger = logging.getLogger(__name__)

ResultT = TypeVar("ResultT")

__all__ = ["JudgeClient", "JudgeReply", "JudgeRequest", "default_judge", "set_default_judge"]


_NOT_CONFIGURED = "judge not configured: "


class JudgeClient:
    """Sends judge requests to the provider each judge model resolves to, as ADK resolves it.

    Args:
        settings: Timeouts, retries, concurrency, cache, prices, endpoint overrides (default: from the environment).
        client: A ready ``genai.Client`` for the Gemini models (tests, custom auth); else one is made lazily from
            ``settings`` and google-genai's own environment variables. The other providers read their own.
        accounting: Where usage is counted (default: a new one, see :attr:`accounting`).
        meter_provider: Where the judge's calls, tokens, cost and latency are reported (global when None).
    """

    def __init__(
        self,
        settings: JudgeSettings | None = None,
        *,
        client: genai.Client | None = None,
        accounting: JudgeAccounting | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.settings = settings or JudgeSettings.from_env()
        self.accounting = accounting or JudgeAccounting()
        self._cache: ReplyCache[JudgeReply] = ReplyCache(self.settings.cache_size)
        self._backoff = Backoff(self.settings.initial_backoff_seconds, self.settings.max_backoff_seconds)
        self._loops = PerLoop(self.settings.max_concurrency)
        self._gemini = GeminiProvider(self.settings, client)
        self._providers: dict[str, Provider] = {GEMINI: self._gemini}
        self._providers_lock = threading.Lock()
        self._fatal: dict[str, Failure] = {}
        self._unreachable: set[str] = set()  # providers whose endpoint could not be reached (said once each)
        self._reason_lock = threading.Lock()
        self._reason: tuple[str | None] | None = None
        self.instruments = JudgeInstruments(meter_provider)
        self.budget: JudgeBudget | None = None
        if self.settings.budget is not None:
            self.budget = JudgeBudget(self.settings.budget, self.settings.prices)
            self.budget.check_priced(self.settings.default_model)

    def use_meter_provider(self, meter_provider: MeterProvider | None) -> None:
        """Reports the judge's calls, tokens, cost and latency on ``meter_provider`` from now on."""
        self.instruments = JudgeInstruments(meter_provider)

    @classmethod
    def from_env(cls, **overrides: Any) -> JudgeClient:
        """A client from the environment with ``overrides`` of :class:`JudgeSettings` fields (None ignored)."""
        return cls(JudgeSettings.from_env(**overrides))

    @property
    def not_configured_reason(self) -> str | None:
        """Why the default judge model cannot be served (:meth:`problem_for`), or None when it can; worked out on first
        read, not when the client is made: a LiteLLM route's check imports LiteLLM, seconds the thread that makes the
        client (the agent's, for the span processor) should not wait."""
        with self._reason_lock:
            if self._reason is None:
                self._reason = (self.problem_for(self.settings.default_model),)
            return self._reason[0]

    @not_configured_reason.setter
    def not_configured_reason(self, reason: str | None) -> None:
        warnings.warn(
            "setting JudgeClient.not_configured_reason is deprecated and removed in otel-eval 0.3.0: it is worked out "
            "from the settings (JudgeClient(settings=...)); a Judge of your own answers it itself",
            DeprecationWarning,
            stacklevel=2,
        )
        with self._reason_lock:
            self._reason = (reason,)

    @property
    def configured(self) -> bool:
        """Whether the default judge model's provider has credentials (no network call is made to find out)."""
        return self.not_configured_reason is None

    def problem_for(self, model: str) -> str | None:
        """Why judge ``model`` cannot be served (not resolvable, its provider's extra missing, no credentials for
        its provider), or None when it can; known without a network call."""
        route = resolve(model)
        if route.problem is not None or route.family is None:
            return f"{_NOT_CONFIGURED}{route.problem}"
        problem = self._provider(route.family).configuration_problem(route.model)
        if problem is None or not route.note:
            return problem
        return f"{_NOT_CONFIGURED}{route.note}{problem.removeprefix(_NOT_CONFIGURED)}"

    def provider_name(self, model: str) -> str | None:
        """``gen_ai.provider.name`` of judge ``model``'s provider (None when it has none)."""
        route = resolve(model)
        return self._provider(route.family).provider_name(route.model) if route.family else None

    @property
    def max_in_flight(self) -> int:
        """The most judge calls seen in flight at once on any event loop (for tests and benchmarks)."""
        return self._loops.max_in_flight

    def model_for(self, options: JudgeModelOptions | None) -> str:
        """The judge model: the criterion's ``judge_model`` when it names one, else the settings' default."""
        if options is not None and "judge_model" in options.model_fields_set:
            return options.judge_model
        return self.settings.default_model

    def input_token_limit(self, model: str) -> int:
        """The input window of judge ``model``, in tokens, from the settings' table (``OTEL_EVAL_JUDGE_INPUT_LIMITS``
        over the published defaults, longest name prefix wins)."""
        return input_token_limit(model, self.settings.input_token_limits)

    def num_samples_for(self, options: JudgeModelOptions | None, *, default: int | None = None) -> int:
        """Samples per item: the settings' override, else the criterion's (or ``default`` when it sets none)."""
        if self.settings.num_samples is not None:
            return self.settings.num_samples
        if options is None:
            return default or 1
        if default is not None and "num_samples" not in options.model_fields_set:
            return default
        return options.num_samples

    def summary_line(self) -> str:
        """The accounting summary line (calls, cache hits, tokens, cost, fatal problems)."""
        return self.accounting.summary_line()

    def admit(
        self, metric: str, calls: Sequence[CallEstimate], *, priority: bool = False
    ) -> Admission | Refusal | None:
        """Asks the judge budget for one evaluation's ``calls``: None (no budget for ``metric``), an admission to
        run them under (:func:`~otel_eval.judge.budget.spending`), or a refusal (counted in the accounting and as
        ``otel_eval.judge.budget.refusals``)."""
        if self.budget is None:
            return None
        outcome = self.budget.admit(metric, calls, priority=priority)
        if isinstance(outcome, Refusal):
            self.accounting.record_refusal()
            self.instruments.refused(metric=metric, model=calls[0].model if calls else self.settings.default_model)
        return outcome

    async def generate(self, request: JudgeRequest, *, metric: str, sample: int = 0) -> JudgeReply:
        """Sends ``request`` (or serves it from the cache) and returns the reply.

        Under a judge budget, a call made outside an admission (a metric that does not ask for its whole evaluation
        up front) is admitted on its own.

        Raises:
            JudgeError: not configured, fatal (auth/quota, reported once), retries exhausted, or refused by the judge
                budget (``budget_exhausted``); ``error_type`` says.
        """
        route = resolve(request.model)
        family = route.family
        problem = self.problem_for(request.model)
        if problem is not None or family is None:
            raise JudgeError(problem or "judge not configured", error_type=JUDGE_NOT_CONFIGURED)
        provider = self._provider(family)
        if self.budget is not None and current_admission() is None:
            characters = len(request.prompt) + len(request.system_instruction or "")
            admission = self.admit(metric, [CallEstimate(request.model, characters)])
            if isinstance(admission, Refusal):
                raise JudgeError(admission.reason, error_type=semconv.ERROR_TYPE_BUDGET_EXHAUSTED)
            if admission is not None:
                with spending(admission):
                    return await self.generate(request, metric=metric, sample=sample)
        provider_name = provider.provider_name(route.model)
        fatal_key = f"{family}:{provider_name}"
        fatal = self._fatal.get(fatal_key)
        if fatal is not None:
            self.accounting.record(metric, failures=1)
            raise fatal.to_error()
        key = request_key(request.model, request.cache_identity(), sample)
        started = time.perf_counter()
        with judge_call_span(
            request.model,
            provider=provider_name,
            metric=metric,
            own_trace=self.settings.own_trace,
        ) as span:
            try:
                reply, hit = await self._cache.get_or_compute(
                    key,
                    lambda: self._with_retries(
                        lambda: self._generate_once(provider, request, route.model, metric), metric, fatal_key
                    ),
                )
            except JudgeError as exc:
                self.accounting.record(metric, failures=1)
                finish_judge_call_span(span, outcome=OUTCOME_ERROR, error_type=exc.error_type)
                self.instruments.record(
                    metric=metric, model=request.model, outcome=OUTCOME_ERROR, seconds=time.perf_counter() - started
                )
                raise
            outcome = OUTCOME_CACHED if hit else OUTCOME_OK
            finish_judge_call_span(
                span,
                outcome=outcome,
                input_tokens=None if hit else reply.input_tokens,
                output_tokens=None if hit else reply.output_tokens,
                response_model=reply.model,
            )
            self.instruments.record(
                metric=metric,
                model=request.model,
                outcome=outcome,
                seconds=time.perf_counter() - started,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
                cost_usd=self.settings.prices.cost(request.model, reply.input_tokens, reply.output_tokens),
            )
        if hit:
            self.accounting.record(metric, cache_hits=1)
            return dataclasses.replace(reply, cached=True)
        return reply

    async def aclose(self) -> None:
        """Closes the judge's connections on the running event loop now (a ``client`` given to the constructor is
        closed too). Without this call they are closed when the loop shuts down its asynchronous generators, as
        ``asyncio.run`` does before it closes the loop."""
        with self._providers_lock:
            providers = list(self._providers.values())
        for provider in providers:
            await provider.aclose()

    # --- internals -------------------------------------------------------------------------------------------

    @property
    def uses_vertex(self) -> bool:
        """Whether the Gemini judge talks to Vertex AI (``vertexai=True`` or ``GOOGLE_GENAI_USE_VERTEXAI``)."""
        return self._gemini.uses_vertex

    async def evaluate_instances(self, body: dict[str, Any], *, metric: str) -> dict[str, Any]:
        """POSTs ``body`` to Vertex AI's ``projects/P/locations/L:evaluateInstances`` (Gen AI evaluation service).

        Goes through google-genai's API client (its auth, base URL and headers) with this client's retries,
        concurrency limit and accounting. Only valid when :attr:`uses_vertex`.

        Raises:
            JudgeError: as :meth:`generate`.
        """
        problem = self._gemini.configuration_problem(self.settings.default_model)
        if problem is not None:
            raise JudgeError(problem, error_type=JUDGE_NOT_CONFIGURED)
        gemini_key = f"{GEMINI}:{self._gemini.provider_name(self.settings.default_model)}"
        fatal = self._fatal.get(gemini_key)
        if fatal is not None:
            self.accounting.record(metric, failures=1)
            raise fatal.to_error()
        api = (await self._gemini.client()).aio._api_client
        from google.genai import types as genai_types  # loaded with the Gemini client just above

        path = f"projects/{api.project}/locations/{api.location}:evaluateInstances"
        options = genai_types.HttpOptions(
            timeout=max(1, int(self.settings.timeout_seconds * 1000)),
            retry_options=genai_types.HttpRetryOptions(attempts=1),
        )

        sent = utf8_value(body)  # a recorded lone surrogate as U+FFFD, as in a prompt (else sent as a \udXXX escape)

        async def once() -> dict[str, Any]:
            response = await api.async_request("post", path, sent, options)
            parsed = json.loads(response.body or "{}")
            if not isinstance(parsed, dict):
                raise ValueError("evaluateInstances answered a non-object body")
            return parsed

        try:
            return await self._with_retries(lambda: self._limited(once, metric), metric, gemini_key)
        except JudgeError:
            self.accounting.record(metric, failures=1)
            raise

    # --- internals -------------------------------------------------------------------------------------------

    async def _with_retries(self, call: Callable[[], Awaitable[ResultT]], metric: str, fatal_key: str) -> ResultT:
        settings = self.settings
        deadline = time.monotonic() + settings.max_total_seconds
        attempt = 0
        while True:
            attempt += 1
            if attempt > 1:
                self.accounting.record(metric, retries=1)
            try:
                return await call()
            except Exception as exc:  # noqa: BLE001 - every failure is classified below
                failure = classify(exc, secret=self._secrets())
            if failure.fatal:
                self._set_fatal(fatal_key, failure)
                raise failure.to_error()
            if not failure.retriable or attempt >= settings.max_attempts:
                raise self._final(failure, attempt, fatal_key)
            delay = self._backoff.delay(attempt, failure.retry_after)
            if time.monotonic() + delay > deadline:
                raise self._final(failure, attempt, fatal_key, out_of_time=True)
            logger.debug("judge attempt %d failed (%s); retrying in %.2fs", attempt, failure.error_type, delay)
            await asyncio.sleep(delay)

    def _final(self, failure: Failure, attempts: int, provider: str, *, out_of_time: bool = False) -> JudgeError:
        why = "retry time budget spent" if out_of_time else f"after {attempts} attempt(s)"
        if failure.error_type == JUDGE_CONNECTION and provider not in self._unreachable:
            # A judge that cannot be reached (a wrong port, a gateway down) is said once, at once, naming where.
            self._unreachable.add(provider)
            base_url = self.settings.base_url
            where = redact_url(base_url) if base_url else "the endpoint its provider's own variables name"
            logger.warning(
                "judge unreachable at %s (%s): %s; its metrics are NOT_EVALUATED", where, provider, failure.message
            )
        return JudgeError(f"{failure.message} ({why})", error_type=failure.error_type, retriable=failure.retriable)

    async def _limited(self, call: Callable[[], Awaitable[ResultT]], metric: str) -> ResultT:
        """Runs one HTTP attempt under the shared concurrency limit, with a hard timeout."""
        state = self._loops.state()
        async with state.semaphore:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            self.accounting.record(metric, calls=1)
            try:
                # The HTTP timeout fires first; this guards a stuck transport.
                return await asyncio.wait_for(call(), timeout=self.settings.timeout_seconds + 1.0)
            finally:
                state.in_flight -= 1

    async def _generate_once(self, provider: Provider, request: JudgeRequest, model: str, metric: str) -> JudgeReply:
        reply = await self._limited(lambda: provider.send(request, model, self.settings.timeout_seconds), metric)
        cost = self.settings.prices.cost(request.model, reply.input_tokens, reply.output_tokens)
        charge_current(cost or 0.0)
        if self.budget is not None:
            self.budget.observe(request.model, reply.output_tokens)
        self.accounting.record(
            metric,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cost_usd=cost or 0.0,
            unpriced_calls=0 if cost is not None else 1,
        )
        return reply

    def _set_fatal(self, key: str, failure: Failure) -> None:
        self._fatal.setdefault(key, failure)
        if self.accounting.report_fatal(failure.message):
            logger.error("judge provider %s disabled for this process: %s", key, failure.message)

    def _secrets(self) -> tuple[str, ...]:
        with self._providers_lock:
            providers = list(self._providers.values())
        return tuple(secret for provider in providers for secret in provider.secrets())

    def _provider(self, family: str) -> Provider:
        """The provider of ``family``, made on first use (its SDK is imported when it calls)."""
        with self._providers_lock:
            provider = self._providers.get(family)
            if provider is None:
                provider = self._providers[family] = _new_provider(family, self.settings)
            return provider


def _new_provider(family: str, settings: JudgeSettings) -> Provider:
    if family == OPENAI:
        from otel_eval.judge.providers.openai import OpenAIProvider

        return OpenAIProvider(settings)
    if family == CLAUDE_VERTEX:
        from otel_eval.judge.providers.anthropic_vertex import AnthropicVertexProvider

        return AnthropicVertexProvider(settings)
    if family == LITELLM:
        from otel_eval.judge.providers.litellm import LiteLlmProvider

        return LiteLlmProvider(settings)
    raise ValueError(f"unknown judge provider family {family!r}")


_default_lock = threading.Lock()
_default_judge: JudgeClient | None = None


def default_judge() -> JudgeClient:
    """The process-wide judge built from the environment, shared by evaluators created without a judge."""
    global _default_judge
    with _default_lock:
        if _default_judge is None:
            _default_judge = JudgeClient.from_env()
        return _default_judge


def set_default_judge(judge: JudgeClient | None) -> None:
    """Replaces (or with None, resets) the process-wide default judge."""
    global _default_judge
    with _default_lock:
        _default_judge = judge
