"""``otel-eval validate``: check eval sets and eval configs, printing each problem with its JSON path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pydantic

from otel_eval.errors import ConfigurationError, InputError
from otel_eval.metrics import default_registry
from otel_eval.model import EvalConfig, EvalSet
from otel_eval.model.loading import read_json, validation_problems


def _kind(payload: Any) -> str:
    if isinstance(payload, dict) and "criteria" in payload:
        return "eval config"
    return "eval set"


def config_problems(config: EvalConfig) -> list[str]:
    """Problems the schema cannot see: unknown metrics, criteria invalid for their metric, thresholds out of range."""
    registry = default_registry()
    problems = []
    for name in config.criteria:
        try:
            registry.create(name, config.criterion_for(name))
        except ConfigurationError as exc:
            problems.append(f"criteria.{name}: {exc}")
    return problems


def file_problems(path: Path) -> tuple[str, list[str]]:
    """The kind of file (eval set or eval config) and its problems, each ``json.path: message``."""
    try:
        payload = read_json(path)
    except InputError as exc:
        return "file", [str(exc).removeprefix(f"{path}: ")]
    kind = _kind(payload)
    try:
        if kind == "eval config":
            return kind, config_problems(EvalConfig.model_validate(payload))
        EvalSet.model_validate(payload)
    except pydantic.ValidationError as exc:
        return kind, validation_problems(exc)
    return kind, []


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
def validate(files: tuple[Path, ...]) -> None:
    """Check ADK eval sets and eval configs; exit code 1 if any file is invalid."""
    invalid = 0
    for path in files:
        kind, problems = file_problems(path)
        if problems:
            invalid += 1
            for problem in problems:
                click.echo(f"{path}: {problem}")
        else:
            click.echo(f"{path}: valid {kind}")
    if invalid:
        raise SystemExit(1)
