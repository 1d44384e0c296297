"""``otel-eval run``'s inputs read at start-up: the eval set, the eval config (``--config`` or ADK's
``test_config.json`` beside the eval set), ``--eval-id`` checked against the eval set, ``--judge-model`` applied."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from otel_eval.cli._common import fail
from otel_eval.errors import InputError
from otel_eval.evaluation import shadowed_case_warnings
from otel_eval.evaluation.criteria import never_run_custom_metrics_of
from otel_eval.metrics import MetricRegistry
from otel_eval.metrics.base import claim_threshold_warning
from otel_eval.model import BaseCriterion, EvalConfig, EvalSet
from otel_eval.model.loading import load_eval_config, load_eval_set

ADK_CONFIG_FILE_NAME = "test_config.json"
"""The eval config ADK's ``AgentEvaluator`` reads from the eval set's directory."""

_SHOWN_CASES = 10
"""Case ids an unknown ``--eval-id``'s error lists (then how many more)."""


def load_inputs(
    eval_set_path: Path | None, config_path: Path | None, metrics: tuple[str, ...] = ()
) -> tuple[EvalSet | None, EvalConfig | None, Path | None]:
    """The eval set and eval config files read (exit 2 naming the file and problem when one is bad), and the config's
    path (``--config``, else ADK's ``test_config.json`` beside the eval set); a warning for each custom metric of the
    config that never runs (without ``metrics``, the ``-m`` names)."""
    if config_path is None and eval_set_path is not None:
        beside = eval_set_path.parent / ADK_CONFIG_FILE_NAME
        if beside.is_file():  # ADK's AgentEvaluator reads the criteria from there too
            click.echo(f"note: criteria from {beside}", err=True)
            config_path = beside
    try:
        eval_set = load_eval_set(eval_set_path) if eval_set_path else None
        config = load_eval_config(config_path) if config_path else None
    except InputError as exc:
        fail(str(exc))
    for line in never_run_custom_metrics_of(config, metrics):
        click.echo(f"warning: {config_path}: {line}", err=True)
    return eval_set, config, config_path


def warn_thresholds(
    criteria: Mapping[str, BaseCriterion | None],
    config: EvalConfig | None,
    config_path: Path | None,
    registry: MetricRegistry,
) -> None:
    """A warning per criterion of the config file whose threshold is outside its metric's range (ADK accepts it; it
    can never pass, or never fail), naming the file and JSON path as ``validate`` does, once: the evaluators made
    for the run do not log it again. An unknown metric is left to the plan, which refuses it."""
    for name, criterion in criteria.items():
        if criterion is None or config is None or name not in config.criteria or name not in registry:
            continue
        info = registry.info(name)
        warning = None if info.informational else claim_threshold_warning(info, criterion.threshold)
        if warning is not None:
            click.echo(f"warning: {config_path}: criteria.{name}.threshold: {warning}", err=True)


def warn_shadowed_cases(eval_set: EvalSet | None, eval_set_path: Path | None, eval_id: str | None) -> None:
    """A warning per case of the eval set that the pairing rule never reaches (without ``--eval-id``): the runs that
    should be compared with it are compared with an earlier case; and per :meth:`EvalSet.case_warnings` finding."""
    for line in eval_set.case_warnings() if eval_set is not None else ():
        click.echo(f"warning: {eval_set_path}: {line}", err=True)
    if eval_set is not None and eval_id is None:
        for line in shadowed_case_warnings(eval_set):
            click.echo(f"warning: {eval_set_path}: {line}", err=True)


def check_eval_id(eval_id: str | None, eval_set: EvalSet | None, eval_set_path: Path | None) -> None:
    """``--eval-id`` names a case of the eval set, else the run stops before scoring (exit 2)."""
    if eval_id is None:
        return
    if eval_set is None or eval_set_path is None:
        fail("--eval-id needs --eval-set (it chooses a case of that eval set)")
    known = [case.eval_id for case in eval_set.eval_cases]
    if eval_id not in known:
        shown = ", ".join(known[:_SHOWN_CASES]) + (
            f", … (+{len(known) - _SHOWN_CASES} more)" if len(known) > _SHOWN_CASES else ""
        )
        fail(
            f"{eval_set_path}: eval set {eval_set.eval_set_id!r} has no case {eval_id!r}; its cases: {shown or '(none)'}"
        )


def apply_judge_model(config: EvalConfig | None, judge_model: str | None) -> EvalConfig | None:
    """``config`` with ``--judge-model`` replacing the judge model of every criterion that has judge options."""
    if config is None or judge_model is None:
        return config
    criteria: dict[str, Any] = {}
    for name in config.criteria:
        data = config.criterion_for(name).model_dump()
        if isinstance(data.get("judge_model_options"), dict):
            data["judge_model_options"] = {**data["judge_model_options"], "judge_model": judge_model}
        criteria[name] = data
    # Only the criteria change: the config's custom metrics and other sections stay.
    return config.model_copy(update={"criteria": EvalConfig.model_validate({"criteria": criteria}).criteria})


_METRIC_IN_ERROR = re.compile(r"^(?:unknown metric|invalid criterion for metric) '([^']+)'")


def metric_error_source(
    message: str, metric_flags: tuple[str, ...], config: EvalConfig | None, config_path: Path | None
) -> str:
    """``message`` (an unknown metric, an invalid criterion) prefixed with where that metric was named: ``-m NAME``,
    else the config file's ``criteria.NAME``; as it is when neither named it."""
    found = _METRIC_IN_ERROR.match(message)
    if found is None:
        return message
    name = found.group(1)
    if config is not None and config_path is not None and name in (config.criteria or {}):
        return f"{config_path}: criteria.{name}: {message}"
    if name in metric_flags:
        return f"-m {name}: {message}"
    return message


def warn_unpaired_cases(
    eval_set: EvalSet | None, eval_set_path: Path | None, eval_id: str | None, paired: set[str]
) -> None:
    """A warning naming the eval cases no conversation paired with (without ``--eval-id``), when some did: what they
    expect was not checked (a run the agent did not record, a prompt that changed)."""
    if eval_set is None or eval_id is not None or not paired:
        return
    missing = [case.eval_id for case in eval_set.eval_cases if case.eval_id not in paired]
    if missing:
        shown = ", ".join(missing[:_SHOWN_CASES]) + (
            f", … (+{len(missing) - _SHOWN_CASES} more)" if len(missing) > _SHOWN_CASES else ""
        )
        click.echo(
            f"warning: {eval_set_path}: {len(missing)} of {len(eval_set.eval_cases)} eval case(s) paired with no "
            f"conversation, so nothing was checked against them: {shown}",
            err=True,
        )
