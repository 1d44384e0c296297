"""``otel-eval validate``: check eval sets and eval configs, printing each problem with its JSON path."""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pydantic

from otel_eval.errors import ConfigurationError, InputError
from otel_eval.evaluation import shadowed_case_warnings
from otel_eval.evaluation.criteria import never_run_custom_metrics
from otel_eval.metrics import MetricRegistry, default_registry
from otel_eval.metrics.base import MetricInfo, misspelled_option, threshold_warning
from otel_eval.metrics.base import logger as base_logger
from otel_eval.metrics.custom_metric import custom_metric_info
from otel_eval.model import BaseCriterion, CustomMetricConfig, EvalConfig
from otel_eval.model.loading import (
    CONFIG_KEY_NAMES,
    EVAL_CONFIG_KEYS,
    document_kind,
    eval_config_problem,
    eval_set_from,
    json_path,
    near_config_keys,
    read_json,
    validation_problems,
)


def _kind(payload: Any) -> str:
    """An object with an eval config's key (or a near miss, ``critera``), or ``{}`` (ADK's config with empty
    criteria), is an eval config; a trace file is one; anything else is checked as an eval set."""
    kind = document_kind(payload)
    if kind is not None:
        return kind
    if isinstance(payload, dict) and (not payload or EVAL_CONFIG_KEYS & set(payload) or near_config_keys(payload)):
        return "eval config"
    return "eval set"


class Notes:
    """What a check found: problems (the file is invalid) and warnings (valid, but probably not meant)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.warnings: list[str] = []


def config_problems(payload: Any, notes: Notes | None = None) -> list[str]:
    """Every problem of an eval config, each ``json.path: message``: the schema's, and per criterion an unknown
    metric and every invalid option for its metric (one criterion's problems never hide another's). A threshold
    outside its metric's range is accepted, as ADK accepts it, with a warning in ``notes``."""
    criteria = payload.get("criteria") if isinstance(payload, dict) else None
    notes = notes if notes is not None else Notes()
    problems = notes.problems
    top_level = eval_config_problem(payload)
    if top_level is not None:
        problems.append(f"$: {top_level}")
        if not isinstance(payload, dict):
            return problems
        payload = {key: value for key, value in payload.items() if key in EVAL_CONFIG_KEYS}
    try:  # everything but the criteria, which are checked one by one below
        EvalConfig.model_validate({**payload, "criteria": {}} if isinstance(criteria, dict) else payload)
    except pydantic.ValidationError as exc:
        problems.extend(validation_problems(exc))
    if isinstance(criteria, dict):
        registry = default_registry()
        custom = _custom_metrics(payload)
        for name, value in criteria.items():
            if name in custom:
                problems.extend(custom_criterion_problems(str(name), value, custom[name], notes.warnings))
            else:
                problems.extend(criterion_problems(registry, str(name), value, notes.warnings))
        notes.warnings.extend(never_run_custom_metrics(custom, (str(name) for name in criteria)))
    return problems


def _custom_metrics(payload: dict[str, Any]) -> dict[str, CustomMetricConfig]:
    """The config's valid ``custom_metrics`` entries (invalid ones are reported by the schema check)."""
    raw = payload.get("custom_metrics") or payload.get("customMetrics")
    if not isinstance(raw, dict):
        return {}
    valid = {}
    for name, value in raw.items():
        try:
            valid[str(name)] = CustomMetricConfig.model_validate(value)
        except pydantic.ValidationError:
            continue
    return valid


def custom_criterion_problems(
    name: str, value: Any, config: CustomMetricConfig, warnings: list[str] | None = None
) -> list[str]:
    """The problems of the criterion of an ADK custom metric: ADK's schema (a threshold outside ``metric_info``'s
    range goes to ``warnings``). Its code is not imported here (``otel-eval run`` and the workers import it at
    start-up)."""
    try:
        criterion = EvalConfig.model_validate({"criteria": {name: value}}).criterion_for(name)
    except pydantic.ValidationError as exc:
        return validation_problems(exc)
    _threshold_note(custom_metric_info(name, config), name, criterion.threshold, warnings)
    return []


def _threshold_note(info: MetricInfo, name: str, threshold: float, warnings: list[str] | None) -> None:
    warning = threshold_warning(info, threshold)
    if warning is not None and warnings is not None:
        warnings.append(f"{json_path(('criteria', name, 'threshold'))}: {warning}")


def criterion_problems(registry: MetricRegistry, name: str, value: Any, warnings: list[str] | None = None) -> list[str]:
    """The problems of one criterion ``criteria.<name>`` (a threshold outside the metric's range goes to
    ``warnings``: ADK accepts it)."""
    path = json_path(("criteria", name))
    try:
        info = registry.info(name)
        config = EvalConfig.model_validate({"criteria": {name: value}})
    except ConfigurationError as exc:
        return [f"{path}: {exc}"]
    except pydantic.ValidationError as exc:
        return validation_problems(exc)
    criterion = config.criterion_for(name)
    problems: list[str] = []
    if not info.informational:
        try:
            typed = criterion.as_type(info.criterion_type)
        except pydantic.ValidationError as exc:
            spelled = set(value) if isinstance(value, dict) else set()
            problems.extend(_option_problems(exc, info.criterion_type, ("criteria", name), spelled))
        else:
            for key, option in typed.misspelled_options().items():
                problems.append(f"{json_path(('criteria', name))}.{misspelled_option(key, option)}")
        _threshold_note(info, name, criterion.threshold, warnings)
    if not problems:
        try:  # the metric's own checks beyond its criterion's schema (its threshold warning is printed above)
            with _quiet(base_logger):
                registry.create(name, criterion)
        except ConfigurationError as exc:
            problems.append(f"{path}: {exc}")
    return problems


@contextlib.contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """``logger``'s warnings dropped for the block (validate prints them itself, once)."""
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _option_problems(
    exc: pydantic.ValidationError, criterion_type: type[BaseCriterion], prefix: tuple[str, ...], spelled: set[str]
) -> list[str]:
    """``validation_problems`` under ``prefix``, naming an enum option's allowed members (``EXACT, IN_ORDER, ...``)
    and each option as the file spells it (``matchType`` or ``match_type``, both accepted)."""
    aliases = {name: field.alias for name, field in criterion_type.model_fields.items() if field.alias in spelled}
    enums = {
        key: field.annotation
        for name, field in criterion_type.model_fields.items()
        for key in (name, field.alias)
        if key and isinstance(field.annotation, type) and issubclass(field.annotation, enum.Enum)
    }
    problems = []
    for error in exc.errors(include_url=False):
        location = error["loc"]
        enum_type = enums.get(str(location[0])) if len(location) == 1 else None
        if enum_type is not None:
            message = f"{error.get('input')!r} is not one of {', '.join(member.name for member in enum_type)}"
        else:
            message = error["msg"]
        if location and location[0] not in spelled:
            location = (aliases.get(str(location[0]), location[0]), *location[1:])
        problems.append(f"{json_path((*prefix, *location))}: {message}")
    return problems


def file_problems(path: Path, notes: Notes | None = None) -> tuple[str, list[str]]:
    """The kind of file (eval set or eval config) and its problems, each ``json.path: message`` (warnings, which
    leave the file valid, in ``notes``)."""
    try:
        payload = read_json(path)
    except InputError as exc:
        return "file", [str(exc).removeprefix(f"{path}: ")]
    kind = _kind(payload)
    if kind == "trace file":
        return kind, ["a trace file, not an eval set or eval config (otel-eval convert reads it)"]
    if kind == "eval config":
        return kind, config_problems(payload, notes)
    try:
        eval_set = eval_set_from(payload, path)
    except pydantic.ValidationError as exc:
        problems = validation_problems(exc)
        if isinstance(payload, dict) and document_kind(payload) is None:  # a guess: say so
            problems.insert(
                0,
                "$: has neither an eval set's keys (eval_set_id, eval_cases) nor an eval config's "
                f"({CONFIG_KEY_NAMES}): checked as an eval set",
            )
        return kind, problems
    if notes is not None:
        notes.warnings.extend([*eval_set.case_warnings(), *shadowed_case_warnings(eval_set)])
    return kind, []


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
def validate(files: tuple[Path, ...]) -> None:
    """Check ADK eval sets and eval configs, printing every problem of each file with its JSON path; exit code 1 if
    any file is invalid. Warnings (e.g. a threshold outside its metric's range, which ADK accepts) leave a file valid."""
    invalid = 0
    for path in files:
        notes = Notes()
        kind, problems = file_problems(path, notes)
        for warning in notes.warnings:
            click.echo(f"{path}: warning: {warning}")
        if problems:
            invalid += 1
            for problem in problems:
                click.echo(f"{path}: {problem}")
        else:
            click.echo(f"{path}: valid {kind}")
    if invalid:
        raise SystemExit(1)
