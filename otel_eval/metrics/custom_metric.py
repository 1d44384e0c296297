"""ADK custom metrics: a function named in an ``EvalConfig``'s ``custom_metrics``, run as an :class:`Evaluator`.

Loaded as ADK 2.13 loads them (``custom_metric_evaluator.py``, ``metric_evaluator_registry.py``):
``code_config.name`` is ``package.module.function``; the module is imported and the function called with ADK's
``(eval_metric, actual_invocations, expected_invocations, conversation_scenario)`` -- an ``EvalMetric`` whose
``threshold`` is None (the criterion keeps the configured threshold), ADK ``Invocation`` objects and ADK's
``ConversationScenario`` -- and returns ADK's ``EvaluationResult``, directly or as an awaitable. Its statuses are kept
as the function decides them (ADK does not re-apply the threshold). ``metric_info`` gives the value range and the
description; without it the range is ADK's default ``[0, 1]``.

A function that needs the whole conversation says so with :func:`conversation_level` (a function attribute
``conversation_level = True``, which ADK ignores): online, it then runs once on a session's window, with all its turns,
instead of on each turn as it ends.

What differs from ADK is only what must not stop a service:

* an import error, a name that is not a callable, or a callable that cannot take the four arguments stops start-up
  (:class:`~otel_eval.errors.ConfigurationError` naming the metric and the path);
* an exception in the function is NOT_EVALUATED with ``error.type`` ``custom_metric_error``, a function past its
  deadline (``timeout_seconds``: ``OTEL_EVAL_CUSTOM_METRIC_TIMEOUT``, else 120 s, counted from when it starts
  running; a call also waits at most that long for a thread) ``custom_metric_timeout``, a result that is not ADK's
  ``EvaluationResult`` or does not have one entry per invocation ``custom_metric_invalid_result`` (ADK raises for the
  last); never a crash;
* a synchronous function runs on a thread of the metric's own pool, never on the event loop (a coroutine function on
  the loop): one that never returns holds up only its own metric's later calls, never another metric's.

Code is imported only from the process's own configuration (:func:`with_custom_metrics` is called with the
criteria file, flags or environment of the process, never with the criteria of a request read from Kafka).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, TypeVar

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval._runtime.exception_text import exception_outline
from otel_eval._runtime.threads import DaemonThreadPool
from otel_eval.errors import ConfigurationError
from otel_eval.metrics.base import Evaluator, MetricInfo
from otel_eval.metrics.registry import MetricRegistry
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    CustomMetricConfig,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    RubricScore,
    TracedInvocation,
)
from otel_eval.reconstruct.reads import Reads

logger = logging.getLogger(__name__)

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])

DEFAULT_TIMEOUT_SECONDS = 120.0
"""Deadline of one call of a custom metric function (its own run) unless ``OTEL_EVAL_CUSTOM_METRIC_TIMEOUT`` says
otherwise; a call also waits at most this long for one of its metric's threads."""

THREADS_PER_METRIC = 2
"""Threads of each custom metric's own pool: a function that never returns holds at most these, and only its own."""


def load_metric_function(metric_name: str, path: str) -> Callable[..., Any]:
    """The function at ``path`` (``package.module.function``), imported as ADK imports it.

    Raises:
        ConfigurationError: naming ``metric_name`` and ``path``: the import failed, the name is not a callable, or
            the callable cannot be called with ADK's four positional arguments.
    """
    where = f"custom metric {metric_name!r} ({path})"
    module_name, _, function_name = path.rpartition(".")
    if not module_name or not function_name:
        raise ConfigurationError(f"{where}: code_config.name must be 'package.module.function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code stops start-up with its cause
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name is not None and module_name.startswith(exc.name):
            hint = " (is the folder that holds it on PYTHONPATH?)"
        raise ConfigurationError(f"{where}: cannot import {module_name}: {type(exc).__name__}: {exc}{hint}") from exc
    function = getattr(module, function_name, None)
    if function is None:
        raise ConfigurationError(f"{where}: {module_name} has no function {function_name!r}")
    if not callable(function):
        raise ConfigurationError(
            f"{where}: {module_name}.{function_name} is not a function (a {type(function).__name__})"
        )
    try:
        inspect.signature(function).bind(None, [], None, None)
    except TypeError as exc:
        raise ConfigurationError(
            f"{where}: the function must take (eval_metric, actual_invocations, expected_invocations, "
            f"conversation_scenario): {exc}"
        ) from None
    except ValueError:  # no signature (a builtin): let the call tell
        pass
    return function  # type: ignore[no-any-return]


def conversation_level(function: FunctionT) -> FunctionT:
    """Marks an ADK custom metric function as conversation-level: online, it runs on a session's window (all its
    turns together, when the session goes idle, fills or the worker stops) rather than on each turn.

    The mark is the function attribute ``conversation_level = True`` (setting it by hand does the same, without
    importing otel-eval); ADK ignores it, so the function runs unchanged in ``adk eval``.
    """
    function.conversation_level = True  # type: ignore[attr-defined]
    return function


def is_conversation_level(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is marked with :func:`conversation_level`."""
    return getattr(function, "conversation_level", False) is True


def custom_metric_info(metric_name: str, config: CustomMetricConfig, *, conversation_level: bool = False) -> MetricInfo:
    """Our :class:`MetricInfo` of a custom metric: ADK's ``metric_info`` (range, description) or its defaults;
    ``conversation_level`` when its function is marked so (see :func:`conversation_level`)."""
    low: float | None = 0.0  # ADK's default metric info: [0, 1]
    high: float | None = 1.0
    description = config.description
    if config.metric_info is not None:
        description = config.metric_info.description or description
        interval = config.metric_info.metric_value_info.interval
        low = interval.min_value if interval is not None else None
        high = interval.max_value if interval is not None else None
    return MetricInfo(
        name=metric_name,
        description=description or f"Custom metric ({config.code_config.name}).",
        criterion_type=BaseCriterion,
        min_value=low,
        max_value=high,
        conversation_level=conversation_level,
    )


def custom_evaluator_type(
    metric_name: str, config: CustomMetricConfig, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> type[Evaluator]:
    """An :class:`Evaluator` class running ``config``'s function (imported here). Raises ConfigurationError."""
    function = load_metric_function(metric_name, config.code_config.name)
    try:
        _adk_types()  # ADK's types are what the function takes and returns
    except ConfigurationError as exc:
        raise ConfigurationError(f"custom metric {metric_name!r} ({config.code_config.name}): {exc}") from exc
    attributes = {
        "info": custom_metric_info(metric_name, config, conversation_level=is_conversation_level(function)),
        "function": staticmethod(function),
        "function_path": config.code_config.name,
        "timeout_seconds": timeout_seconds,
        "threads": DaemonThreadPool(THREADS_PER_METRIC, name=f"OtelEvalCustomMetric[{metric_name}]"),
    }
    return type(f"CustomMetricEvaluator[{metric_name}]", (CustomMetricEvaluator,), attributes)


class CustomMetricEvaluator(Evaluator):
    """Runs an ADK custom metric function (see the module docs); made per metric by :func:`custom_evaluator_type`."""

    reads = Reads.ALL
    runs_on_own_threads = True

    function: ClassVar[Callable[..., Any]]
    function_path: ClassVar[str]
    timeout_seconds: ClassVar[float] = DEFAULT_TIMEOUT_SECONDS
    threads: ClassVar[DaemonThreadPool]
    """Where the synchronous function runs: off every event loop, in the metric's own pool, so that a call past its
    deadline (abandoned, as a thread cannot be interrupted) never holds up another metric's calls."""

    def score_inputs(self) -> dict[str, Any]:
        """The metric, its criterion and the function's path."""
        return {**super().score_inputs(), "function": self.function_path}

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        """Calls the function with ADK's arguments; its result as ours (NOT_EVALUATED on any failure)."""
        count = len(actual)
        name = f"{self.info.name} ({self.function_path})"
        deadline = self.timeout_seconds
        try:
            outcome = await self._call(partial(self._adk_arguments, actual, expected, conversation_scenario))
        except _Unconvertible as exc:  # data ADK's models refuse: not the function's fault; never a crash
            return self.not_evaluated(
                f"{self.info.name}: cannot hand the invocations to ADK: {exc}",
                count=count,
                error_type=semconv.ERROR_TYPE_CUSTOM_METRIC_ERROR,
            )
        except _NoThread:
            reason = (
                f"custom metric {name} did not start within {deadline:g} s: its {THREADS_PER_METRIC} threads were "
                "busy with its earlier calls"
            )
            return self.not_evaluated(reason, count=count, error_type=semconv.ERROR_TYPE_CUSTOM_METRIC_TIMEOUT)
        except TimeoutError:
            reason = f"custom metric {name} took longer than {deadline:g} s"
            return self.not_evaluated(reason, count=count, error_type=semconv.ERROR_TYPE_CUSTOM_METRIC_TIMEOUT)
        except Exception as exc:
            logger.warning("custom metric %s raised %s", name, exception_outline(exc))  # its message may quote content
            logger.debug("custom metric %s raised", name, exc_info=True)
            reason = f"custom metric {name} raised {type(exc).__name__}: {exc}"
            return self.not_evaluated(reason, count=count, error_type=semconv.ERROR_TYPE_CUSTOM_METRIC_ERROR)
        return self._our_result(outcome, count)

    def _adk_arguments(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None,
        scenario: ConversationScenario | None,
    ) -> tuple[Any, ...]:
        adk = _adk_types()
        criterion = self.criterion
        eval_metric = adk["EvalMetric"](
            metric_name=self.info.name,
            threshold=None,  # as ADK hands it to a custom metric; the criterion keeps the threshold
            criterion=adk["BaseCriterion"].model_validate(criterion.model_dump(mode="json", by_alias=True))
            if criterion is not None
            else None,
            custom_function_path=self.function_path,
        )
        to_adk = adk["Invocation"].model_validate
        actual_adk = [to_adk(_adk_json(t.invocation)) for t in actual]
        expected_adk = None if expected is None else [to_adk(_adk_json(e)) for e in expected]
        scenario_adk = (
            None
            if scenario is None
            else adk["ConversationScenario"].model_validate(scenario.model_dump(mode="json", exclude_none=True))
        )
        return eval_metric, actual_adk, expected_adk, scenario_adk

    async def _call(self, arguments: Callable[[], tuple[Any, ...]]) -> Any:
        """The function's outcome on ``arguments()``, within the deadline counted from when it starts running.

        Raises:
            _NoThread: the metric's threads stayed busy for a whole deadline (the call never ran).
            TimeoutError: the function ran past its deadline (it is abandoned: a thread cannot be interrupted).
        """
        function = type(self).function
        deadline = self.timeout_seconds
        if inspect.iscoroutinefunction(function):
            return await asyncio.wait_for(function(*_converted(arguments)), timeout=deadline)
        loop = asyncio.get_running_loop()
        running = asyncio.Event()
        started: list[float] = []

        def call() -> Any:
            started.append(time.monotonic())
            with contextlib.suppress(RuntimeError):  # the waiting loop closed: nobody waits for the outcome
                loop.call_soon_threadsafe(running.set)
            return function(*_converted(arguments))

        future = type(self).threads.submit(call)
        try:
            await asyncio.wait_for(running.wait(), timeout=deadline)
        except TimeoutError:
            if future.cancel():
                raise _NoThread from None
            await running.wait()  # it started as the wait ended
        except BaseException:
            future.cancel()  # never run a call nobody waits for
            raise
        outcome = await asyncio.wait_for(asyncio.wrap_future(future), timeout=_left(deadline, started[0]))
        if inspect.isawaitable(outcome):
            return await asyncio.wait_for(outcome, timeout=_left(deadline, started[0]))
        return outcome

    def _our_result(self, outcome: Any, count: int) -> EvaluationResult:
        name = f"{self.info.name} ({self.function_path})"
        adk_result = _adk_types()["EvaluationResult"]
        if not isinstance(outcome, adk_result):
            reason = f"custom metric {name} returned {type(outcome).__name__}, not ADK's EvaluationResult"
            return self.not_evaluated(reason, count=count, error_type=semconv.ERROR_TYPE_CUSTOM_METRIC_INVALID_RESULT)
        overall_status = EvalStatus[outcome.overall_eval_status.name]
        per = list(outcome.per_invocation_results)
        if len(per) != count:
            if overall_status not in (EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL):
                reason = f"custom metric {name} returned {len(per)} per-invocation results for {count} invocations"
                return self.not_evaluated(
                    reason, count=count, error_type=semconv.ERROR_TYPE_CUSTOM_METRIC_INVALID_RESULT
                )
            per_invocation = [PerInvocationResult() for _ in range(count)]  # ADK's placeholders: not alignable
        else:
            per_invocation = [
                PerInvocationResult(
                    score=entry.score,
                    eval_status=EvalStatus[entry.eval_status.name],
                    rubric_scores=_rubric_scores(entry.rubric_scores),
                )
                for entry in per
            ]
        return EvaluationResult(
            overall_score=outcome.overall_score,
            overall_eval_status=overall_status,
            per_invocation_results=per_invocation,
            overall_rubric_scores=_rubric_scores(outcome.overall_rubric_scores),
        )


def with_custom_metrics(
    registry: MetricRegistry,
    custom_metrics: Mapping[str, CustomMetricConfig] | None,
    *,
    timeout_seconds: float | None = None,
) -> MetricRegistry:
    """``registry`` with an evaluator for each custom metric registered (the functions imported now), each call's
    deadline ``timeout_seconds`` (None: ``OTEL_EVAL_CUSTOM_METRIC_TIMEOUT``, else :data:`DEFAULT_TIMEOUT_SECONDS`).

    Raises:
        ConfigurationError: a function cannot be loaded (the message names the metric and the path), or
            ``OTEL_EVAL_CUSTOM_METRIC_TIMEOUT`` is not a number of seconds > 0.
    """
    if not custom_metrics:
        return registry
    if timeout_seconds is None:
        timeout_seconds = env.number_setting(
            os.environ,
            env.OTEL_EVAL_CUSTOM_METRIC_TIMEOUT,
            DEFAULT_TIMEOUT_SECONDS,
            valid=lambda value: value > 0 and math.isfinite(value),
            expected="seconds > 0",
        )
    for metric_name, config in custom_metrics.items():
        registry.register(custom_evaluator_type(metric_name, config, timeout_seconds=timeout_seconds))
    return registry


class _NoThread(Exception):
    """A call that waited a whole deadline for one of its metric's threads, and never ran."""


class _Unconvertible(Exception):
    """The invocations could not be handed to ADK's models (the message says why)."""


def _converted(arguments: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    try:
        return arguments()
    except (ValueError, TypeError) as exc:
        raise _Unconvertible(str(exc)) from exc


def _left(deadline: float, started: float) -> float:
    return max(0.0, deadline - (time.monotonic() - started))


def _rubric_scores(scores: Any) -> list[RubricScore] | None:
    if not scores:
        return None
    return [RubricScore.model_validate(s.model_dump(mode="json")) for s in scores]


def _adk_json(invocation: Invocation) -> dict[str, Any]:
    """The invocation as ADK's JSON, with tool declarations as genai ``Tool`` objects (what ADK holds in memory)."""
    data = invocation.model_dump(mode="json", exclude_none=True)
    app = data.get("app_details")
    if app:
        from google.genai import types as genai_types  # deferred: only with ADK installed

        for details in app.get("agent_details", {}).values():
            details["tool_declarations"] = [
                genai_types.Tool.model_validate(tool) if isinstance(tool, dict) else tool
                for tool in details.get("tool_declarations", [])
            ]
    return data


def _adk_types() -> dict[str, Any]:
    """ADK's evaluation types (the custom metric's own API). Raises ConfigurationError without google-adk."""
    try:
        from google.adk.evaluation.eval_case import ConversationScenario as AdkScenario
        from google.adk.evaluation.eval_case import Invocation as AdkInvocation
        from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
        from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
        from google.adk.evaluation.evaluator import EvaluationResult as AdkResult
    except ImportError as exc:
        raise ConfigurationError(
            f"ADK custom metrics take and return google-adk's types: install google-adk ({exc})"
        ) from exc
    return {
        "ConversationScenario": AdkScenario,
        "Invocation": AdkInvocation,
        "BaseCriterion": AdkCriterion,
        "EvalMetric": AdkEvalMetric,
        "EvaluationResult": AdkResult,
    }
