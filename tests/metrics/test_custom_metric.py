"""ADK custom metrics: loaded as ADK loads them, equal to ADK's own evaluator on the same invocations, failures are
NOT_EVALUATED with their own error type, start-up stops on bad code, and a request's criteria never import code."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any, ClassVar

import pytest

from otel_eval import semconv
from otel_eval.emit import Emitters
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation import build_plan, criteria_from, registry_with_custom_metrics
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.metrics import Evaluator, MetricInfo, custom_metric, default_registry, register
from otel_eval.metrics import registry as registry_module
from otel_eval.metrics.custom_metric import (
    custom_evaluator_type,
)
from otel_eval.model import (
    BaseCriterion,
    CustomMetricConfig,
    EvalConfig,
    EvalStatus,
    EvaluationResult,
    TracedInvocation,
)
from tests.metrics import custom_metrics_fixture as fixture
from tests.worker._core_helpers import request, traced

MODULE = "tests.metrics.custom_metrics_fixture"


def config(function: str, **fields: Any) -> CustomMetricConfig:
    return CustomMetricConfig.model_validate({"code_config": {"name": f"{MODULE}.{function}"}, **fields})


def conversation() -> list[TracedInvocation]:
    return [
        traced(answer="It is 18°C in Paris.", index=1),
        traced(user="And Rome?", answer="Rome is sunny.", tools=(), index=2),
        traced(user="Book it", answer="Booked seat 12A.", tools=(("book", {"seat": "12A"}),), index=3),
    ]


def evaluator(function: str, threshold: float = 0.5, **options: Any) -> Evaluator:
    return custom_evaluator_type(function, config(function), **options)(BaseCriterion(threshold=threshold))


async def adk_result(function: str, threshold: float, actual: list[TracedInvocation]) -> Any:
    """ADK's own evaluator on the same invocations, with the EvalMetric ADK builds from the same config."""
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
        register_custom_metrics_from_config,
    )

    adk_config = AdkEvalConfig.model_validate(
        {
            "criteria": {function: threshold},
            "custom_metrics": {function: {"code_config": {"name": f"{MODULE}.{function}"}}},
        }
    )
    registry = register_custom_metrics_from_config(adk_config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork())
    (metric, *_) = get_eval_metrics_from_config(adk_config)
    adk_evaluator = registry.get_evaluator(metric)
    from tests.judge.helpers import adk_invocations

    return await adk_evaluator.evaluate_invocations(adk_invocations([t.invocation for t in actual]), None, None)


@pytest.mark.parametrize(("function", "threshold"), [("answer_has_digit", 0.5), ("tool_calls_per_turn", 1.0)])
async def test_equal_to_adks_own_evaluator(function: str, threshold: float) -> None:
    """Sync and async functions: the same per-invocation and overall scores and statuses as ADK's evaluator."""
    actual = conversation()
    theirs = await adk_result(function, threshold, actual)
    ours = await evaluator(function, threshold).evaluate(actual)
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    assert [r.eval_status.name for r in ours.per_invocation_results] == [
        r.eval_status.name for r in theirs.per_invocation_results
    ]
    assert ours.overall_score == theirs.overall_score
    assert ours.overall_eval_status.name == theirs.overall_eval_status.name


async def test_the_function_gets_adks_arguments_off_the_event_loop() -> None:
    result = await evaluator("answer_has_digit", 0.5).evaluate(conversation())
    assert result.overall_score == pytest.approx(2 / 3) and result.overall_eval_status is EvalStatus.PASSED
    assert fixture.SEEN["threshold"] is None  # as ADK hands it to a custom metric
    assert fixture.SEEN["criterion"].threshold == 0.5
    assert fixture.SEEN["thread"] != threading.current_thread().name
    assert fixture.SEEN["thread"].startswith("OtelEvalCustomMetric")


@pytest.mark.parametrize(
    ("function", "error_type"),
    [
        ("raises", semconv.ERROR_TYPE_CUSTOM_METRIC_ERROR),
        ("returns_a_dict", semconv.ERROR_TYPE_CUSTOM_METRIC_INVALID_RESULT),
        ("too_few_results", semconv.ERROR_TYPE_CUSTOM_METRIC_INVALID_RESULT),
    ],
)
async def test_failures_are_not_evaluated_with_their_error_type(function: str, error_type: str) -> None:
    result = await evaluator(function).evaluate(conversation())
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED and result.error_type == error_type
    assert [r.error_type for r in result.per_invocation_results] == [error_type] * 3
    assert f"custom metric {function} ({MODULE}.{function})" in (result.explanation or "")


async def test_a_deadline_passed_is_not_evaluated() -> None:
    result = await evaluator("sleeps", timeout_seconds=0.2).evaluate(conversation())
    assert (
        result.overall_eval_status is EvalStatus.NOT_EVALUATED
        and result.error_type == semconv.ERROR_TYPE_CUSTOM_METRIC_TIMEOUT
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tests.metrics.no_such_module.metric", "no_such_module' (is the folder that holds it on PYTHONPATH?)"),
        (f"{MODULE}.missing", "has no function 'missing'"),
        (f"{MODULE}.NOT_A_FUNCTION", f"{MODULE}.NOT_A_FUNCTION is not a function (a int)"),
        (f"{MODULE}.two_arguments", "must take (eval_metric, actual_invocations"),
        ("no_dots", "must be 'package.module.function'"),
    ],
)
def test_bad_code_stops_start_up_naming_metric_and_path(path: str, message: str) -> None:
    own = {"criteria": {"mine": 0.5}, "custom_metrics": {"mine": {"code_config": {"name": path}}}}
    with pytest.raises(ConfigurationError) as raised:
        registry_with_custom_metrics(own)
    assert "custom metric 'mine'" in str(raised.value) and path in str(raised.value)
    assert message in str(raised.value)
    with pytest.raises(ConfigurationError, match="mine"):
        EvaluationCore(criteria=own, judge_configured=False, emitters=Emitters(None))


def test_metric_info_gives_range_and_description() -> None:
    info = custom_evaluator_type(
        "scaled",
        config(
            "answer_has_digit",
            metric_info={
                "metric_name": "scaled",
                "metric_value_info": {"interval": {"min_value": 0, "max_value": 5}},
                "description": "Stars.",
            },
        ),
    ).info
    assert (info.min_value, info.max_value, info.description) == (0.0, 5.0, "Stars.")
    default = custom_evaluator_type("plain", config("answer_has_digit", description="Digits.")).info
    assert (default.min_value, default.max_value, default.description) == (0.0, 1.0, "Digits.")
    beyond = custom_evaluator_type("plain", config("answer_has_digit"))(BaseCriterion(threshold=2.0))
    assert beyond.threshold == 2.0  # accepted as ADK accepts it, with a warning that it can never pass


def _own_config() -> dict[str, Any]:
    return {
        "criteria": {"answer_has_digit": 0.5},
        "custom_metrics": {"answer_has_digit": {"code_config": {"name": f"{MODULE}.answer_has_digit"}}},
    }


async def test_the_core_runs_its_own_configs_custom_metric() -> None:
    core = EvaluationCore(criteria=_own_config(), judge_configured=False, emitters=Emitters(None))
    records = await core.evaluate(request(*conversation()))
    custom = [r for r in records if r.metric_name == "answer_has_digit"]
    assert [r.score for r in custom] == [1.0, 0.0, 1.0]
    assert [r.label for r in custom] == ["pass", "fail", "pass"]
    # And an EvalConfig object, as `otel-eval run` and the workers' settings give it.
    core = EvaluationCore(
        criteria=EvalConfig.model_validate(_own_config()), judge_configured=False, emitters=Emitters(None)
    )
    assert len([r for r in await core.evaluate(request(*conversation())) if r.metric_name == "answer_has_digit"]) == 3


async def test_a_function_that_never_returns_holds_up_no_other_custom_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call of a hung function is abandoned at its deadline and keeps its thread (a call that finds both taken
    waits a deadline for one, then gives up); the worker's other custom metric is still scored on every request, and
    the timeouts name the hung metric, not the healthy one."""
    monkeypatch.setattr(custom_metric, "DEFAULT_TIMEOUT_SECONDS", 0.5)
    names = ("never_returns", "answer_has_digit")
    own = {
        "criteria": dict.fromkeys(names, 0.5),
        "custom_metrics": {name: {"code_config": {"name": f"{MODULE}.{name}"}} for name in names},
    }
    core = EvaluationCore(criteria=own, judge_configured=False, emitters=Emitters(None))
    fixture.RELEASE.clear()
    try:
        records = [record for _ in range(3) for record in await core.evaluate(request(*conversation()))]
    finally:
        fixture.RELEASE.set()
    scored = [(r.score, r.error_type) for r in records if r.metric_name == "answer_has_digit"]
    assert scored == [(1.0, None), (0.0, None), (1.0, None)] * 3
    hung = [r for r in records if r.metric_name == "never_returns"]
    assert {r.error_type for r in hung} == {semconv.ERROR_TYPE_CUSTOM_METRIC_TIMEOUT} and len(hung) == 9
    said = [r.explanation or "" for r in hung]
    # The first two calls hold the metric's two threads; the third never gets one, and says so.
    assert all(f"never_returns ({MODULE}.never_returns) took longer than 0.5 s" in text for text in said[:6])
    assert all(
        f"never_returns ({MODULE}.never_returns) did not start within 0.5 s: its 2 threads were busy" in text
        for text in said[6:]
    )


async def test_a_hung_function_holds_none_of_the_threads_other_metrics_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls of a function that never returns, many requests at once, hold only its own metric's threads: the
    healthy custom metric of the same requests is scored on every one, within a metric bound of 1.5 deadlines (it
    waited behind the hung calls on the threads deterministic metrics share, past that bound, when those ran it)."""
    monkeypatch.setattr(custom_metric, "DEFAULT_TIMEOUT_SECONDS", 1.0)
    names = ("never_returns", "answer_has_digit")
    own = {
        "criteria": dict.fromkeys(names, 0.5),
        "custom_metrics": {name: {"code_config": {"name": f"{MODULE}.{name}"}} for name in names},
    }
    core = EvaluationCore(criteria=own, judge_configured=False, emitters=Emitters(None), metric_timeout_seconds=1.5)
    fixture.RELEASE.clear()
    try:
        batches = await asyncio.gather(*(core.evaluate(request(*conversation())) for _ in range(8)))
    finally:
        fixture.RELEASE.set()
    healthy = [r for records in batches for r in records if r.metric_name == "answer_has_digit"]
    assert [(r.score, r.error_type) for r in healthy] == [(1.0, None), (0.0, None), (1.0, None)] * 8


async def test_a_requests_criteria_never_import_code() -> None:
    """A request (as read from Kafka) naming a custom metric the worker does not know: NOT_EVALUATED and counted,
    and its ``custom_metrics`` import nothing, whatever they say."""
    pipeline = PipelineMetrics(None, transport="kafka")
    counted: list[tuple[str, str]] = []
    pipeline.errored = lambda name, error_type: counted.append((name, error_type))  # type: ignore[method-assign]
    core = EvaluationCore(judge_configured=False, emitters=Emitters(None), pipeline=pipeline)
    hostile = {
        "criteria": {"evil": 0.5},
        "custom_metrics": {"evil": {"code_config": {"name": "tests.metrics.never_imported_metric.metric"}}},
    }
    records = await core.evaluate(request(*conversation(), criteria=hostile))
    assert "tests.metrics.never_imported_metric" not in sys.modules
    evil = [r for r in records if r.metric_name == "evil"]
    assert [r.eval_status for r in evil] == [EvalStatus.NOT_EVALUATED] * 3
    assert {r.error_type for r in evil} == {"MetricNotFoundError"}
    assert counted.count(("evil", "MetricNotFoundError")) == 3
    assert criteria_from(hostile) is not None and "tests.metrics.never_imported_metric" not in sys.modules


async def test_the_workers_own_custom_metric_serves_requests_naming_it() -> None:
    core = EvaluationCore(criteria=_own_config(), judge_configured=False, emitters=Emitters(None))
    records = await core.evaluate(request(*conversation(), criteria={"answer_has_digit": 0.9}))
    assert [r.threshold for r in records if r.metric_name == "answer_has_digit"] == [0.9] * 3


def test_criteria_setting_keeps_custom_metrics() -> None:
    import json

    from otel_eval.model.loading import criteria_setting

    given = criteria_setting(json.dumps(_own_config()), setting="S")
    assert given == _own_config()
    assert registry_with_custom_metrics(given).info("answer_has_digit").name == "answer_has_digit"


class _Shouting(Evaluator):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="shouting_v1",
        description="Share of answers in capitals.",
        criterion_type=BaseCriterion,
        default_threshold=0.5,
    )

    async def evaluate(
        self, actual: Any, expected: Any = None, *, conversation_scenario: Any = None
    ) -> EvaluationResult:
        return self.mean_result([])


def test_public_registration_and_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_registered", [])
    assert register(_Shouting) is _Shouting
    assert "shouting_v1" in default_registry()
    assert build_plan({"shouting_v1": None}, registry=default_registry()).metrics[0].evaluator is not None
    with pytest.raises(TypeError, match="not a subclass"):
        register(object)  # type: ignore[type-var]

    class _EntryPoint:
        name, value = "shouting", "tests.metrics.test_custom_metric:_Shouting"

        def load(self) -> Any:
            return _Shouting

    monkeypatch.setattr(registry_module, "_registered", [])
    monkeypatch.setattr(registry_module, "_entry_points", None)
    monkeypatch.setattr(registry_module.metadata, "entry_points", lambda group: [_EntryPoint()])
    assert "shouting_v1" in default_registry()

    class _Broken(_EntryPoint):
        def load(self) -> Any:
            raise ImportError("no module")

    monkeypatch.setattr(registry_module, "_entry_points", None)
    monkeypatch.setattr(registry_module.metadata, "entry_points", lambda group: [_Broken()])
    with pytest.raises(ConfigurationError, match="entry point shouting"):
        default_registry()
    monkeypatch.setattr(registry_module, "_entry_points", None)


async def test_tool_declarations_reach_the_function_as_adk_holds_them() -> None:
    """Read back from JSON, declarations are dicts; ADK's code reads ``tool.function_declarations`` (ADK 2.13's own
    evaluators fail on such dicts), so the function gets genai ``Tool`` objects."""
    from otel_eval.model import AgentDetails, AppDetails

    turn = traced(index=1)
    declarations = [{"function_declarations": [{"name": "get_weather", "description": "Weather."}, {"name": "book"}]}]
    app = AppDetails(agent_details={"a": AgentDetails(name="a", tool_declarations=declarations)})
    turn.invocation.app_details = app
    result = await evaluator("declared_tools").evaluate([turn])
    assert [r.score for r in result.per_invocation_results] == [2.0]


async def test_the_deadline_counts_the_functions_own_run_not_its_wait_for_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four requests at once on a metric of two threads whose function takes 2/3 of its deadline: the last two wait
    for a thread about as long as the first two run, and are still scored (their deadline starts when they run)."""
    monkeypatch.setattr(custom_metric, "DEFAULT_TIMEOUT_SECONDS", 1.2)
    monkeypatch.setattr(fixture, "NAP_SECONDS", 0.8)
    name = "slow_answer_has_digit"
    own = {"criteria": {name: 0.5}, "custom_metrics": {name: {"code_config": {"name": f"{MODULE}.{name}"}}}}
    core = EvaluationCore(criteria=own, judge_configured=False, emitters=Emitters(None))
    batches = await asyncio.gather(*(core.evaluate(request(*conversation())) for _ in range(4)))
    scored = [[(r.score, r.error_type) for r in records if r.metric_name == name] for records in batches]
    assert scored == [[(1.0, None), (0.0, None), (1.0, None)]] * 4


async def test_the_deadline_is_set_by_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """``OTEL_EVAL_CUSTOM_METRIC_TIMEOUT`` sets the deadline wherever custom metrics are imported (here the core, as
    the processor and the Kafka worker build it); a bad value stops start-up naming the variable (``otel-eval run``:
    exit 2)."""
    import json

    from click.testing import CliRunner

    from otel_eval.cli import main
    from otel_eval.environment_variables import OTEL_EVAL_CUSTOM_METRIC_TIMEOUT
    from tests.cli.conftest import AGENTEVALS

    own = {"criteria": {"sleeps": 0.5}, "custom_metrics": {"sleeps": {"code_config": {"name": f"{MODULE}.sleeps"}}}}
    monkeypatch.setenv(OTEL_EVAL_CUSTOM_METRIC_TIMEOUT, "0.3")
    core = EvaluationCore(criteria=own, judge_configured=False, emitters=Emitters(None))
    records = [r for r in await core.evaluate(request(*conversation())) if r.metric_name == "sleeps"]
    assert {r.error_type for r in records} == {semconv.ERROR_TYPE_CUSTOM_METRIC_TIMEOUT}
    assert all(f"sleeps ({MODULE}.sleeps) took longer than 0.3 s" in (r.explanation or "") for r in records)

    for bad in ("soon", "0", "-5", "inf"):
        monkeypatch.setenv(OTEL_EVAL_CUSTOM_METRIC_TIMEOUT, bad)
        with pytest.raises(ConfigurationError, match=f"{OTEL_EVAL_CUSTOM_METRIC_TIMEOUT}='{bad}': expected seconds"):
            EvaluationCore(criteria=own, judge_configured=False, emitters=Emitters(None))
    config = tmp_path / "config.json"
    config.write_text(json.dumps(own))
    run = CliRunner().invoke(main, ["run", str(AGENTEVALS / "helm.json"), "--config", str(config)])
    assert run.exit_code == 2
    assert f"{OTEL_EVAL_CUSTOM_METRIC_TIMEOUT}='inf': expected seconds > 0" in run.stderr
