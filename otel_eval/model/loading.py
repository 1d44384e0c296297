"""Loading eval sets and eval configs from files, with problems reported by JSON path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import pydantic

from otel_eval.errors import ConfigurationError, InputError
from otel_eval.model.criteria import EvalConfig
from otel_eval.model.eval_set import EvalSet

ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)

EVAL_CONFIG_KEYS = frozenset(
    {
        "criteria",
        "custom_metrics",
        "customMetrics",
        "user_simulator_config",
        "userSimulatorConfig",
        "live_model_config",
        "liveModelConfig",
    }
)
"""An object with one of these keys is an ``EvalConfig`` (else, in a criteria setting, the criteria object itself)."""


def json_path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``eval_cases[0].conversation[1].user_content``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "$"


def validation_problems(exc: pydantic.ValidationError) -> list[str]:
    """One ``path: message`` line per problem, skipping pydantic's union-branch noise."""
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        location = tuple(part for part in error["loc"] if not _is_union_branch(part))
        line = f"{json_path(location)}: {error['msg']}"
        if line not in problems:
            problems.append(line)
    return problems


def _is_union_branch(part: int | str) -> bool:
    # pydantic names union branches in locations ("IntermediateData", "float", "function-after[...]").
    return isinstance(part, str) and (part[:1].isupper() or "[" in part or part in {"float", "int", "str"})


def read_json(path: Path) -> Any:
    """The parsed JSON of ``path``; InputError naming the file, line and column when it is not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc


def validated(path: Path, payload: Any, model: type[ModelT], what: str) -> ModelT:
    """``payload`` (read from ``path``) validated as ``model``; InputError naming the first problem's JSON path."""
    try:
        return model.model_validate(payload)
    except pydantic.ValidationError as exc:
        raise _invalid(path, exc, what) from exc


def _invalid(path: Path, exc: pydantic.ValidationError, what: str) -> InputError:
    problems = validation_problems(exc)
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return InputError(f"{path}: invalid {what}: {problems[0]}{more}")


def load_eval_set(path: str | Path) -> EvalSet:
    """An ADK eval set file, or ADK's older ``*.test.json`` eval data (converted as ADK converts it).

    Raises InputError naming the file, the JSON path and the problem.
    """
    path = Path(path)
    payload = read_json(path)
    if not isinstance(payload, list):  # an EvalSet is an object; the older format is an array
        return validated(path, payload, EvalSet, "eval set")
    from otel_eval.model.legacy_eval_set import convert_legacy_eval_data  # deferred: rarely needed

    try:
        return convert_legacy_eval_data(payload, eval_set_id=path.name.removesuffix(".json").removesuffix(".test"))
    except pydantic.ValidationError as exc:
        raise _invalid(path, exc, "eval data (ADK's older list format)") from exc


def load_eval_config(path: str | Path) -> EvalConfig:
    """An ADK eval config file (``{"criteria": {...}}``). Raises InputError naming file, path and problem."""
    path = Path(path)
    return validated(path, read_json(path), EvalConfig, "eval config")


def criteria_setting(raw: str | None, *, setting: str) -> dict[str, Any] | None:
    """ADK criteria from a setting: JSON (``{"criteria": {...}}`` or the criteria object) or a path to such a file.

    Returns the criteria object (metric -> threshold or criterion); for an ``EvalConfig`` that declares
    ``custom_metrics``, ``{"criteria": ..., "custom_metrics": ...}`` (what the evaluation core loads them from); None
    when ``raw`` is empty.

    Raises:
        ConfigurationError: an unreadable file, invalid JSON or not an object; the message names ``setting``.
    """
    text = (raw or "").strip()
    if not text:
        return None
    source = setting
    if not text.startswith("{"):
        source = f"{setting} file {text}"
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: expected a JSON object of metric -> threshold or criterion")
    if data and not set(data) & EVAL_CONFIG_KEYS:
        return data  # just the criteria object
    # An EvalConfig, read as ADK reads it ({} has no criteria): its other sections are checked here, the criteria
    # where they are planned.
    criteria = data.get("criteria", {})
    if not isinstance(criteria, dict):
        raise ConfigurationError(f"{source}: 'criteria' must be an object of metric -> threshold or criterion")
    try:
        EvalConfig.model_validate({**data, "criteria": {}})
    except pydantic.ValidationError as exc:
        raise ConfigurationError(f"{source}: invalid eval config: {validation_problems(exc)[0]}") from None
    custom_metrics = data.get("custom_metrics") or data.get("customMetrics")
    if custom_metrics:
        # ADK custom metrics declared by the process's own configuration travel with their criteria.
        return {"criteria": criteria, "custom_metrics": custom_metrics}
    return criteria


def eval_set_setting(path: str | None, *, setting: str) -> EvalSet | None:
    """The eval set a setting names (None when unset). Raises ConfigurationError naming ``setting`` and the problem."""
    if not path:
        return None
    try:
        return load_eval_set(path)
    except InputError as exc:
        raise ConfigurationError(f"{setting}: {exc}") from None
