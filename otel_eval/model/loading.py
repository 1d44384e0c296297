"""Loading eval sets and eval configs from files, with problems reported by JSON path."""

from __future__ import annotations

import difflib
import json
import logging
from pathlib import Path
from typing import Any, TypeVar

import pydantic

from otel_eval.errors import ConfigurationError, InputError
from otel_eval.model.criteria import EvalConfig
from otel_eval.model.eval_set import EvalSet

ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)

logger = logging.getLogger(__name__)

_EVAL_CONFIG_FIELDS = ("criteria", "custom_metrics", "user_simulator_config", "live_model_config")
EVAL_CONFIG_KEYS = frozenset(
    key
    for name in _EVAL_CONFIG_FIELDS
    for key in (name, name.split("_")[0] + "".join(word.title() for word in name.split("_")[1:]))
)
"""An object with one of these keys (each field also in camelCase) is an ``EvalConfig`` (else, in a criteria setting,
the criteria object itself)."""

CONFIG_KEY_NAMES = ", ".join(_EVAL_CONFIG_FIELDS)
"""An eval config's top-level keys, as messages name them (each also in camelCase)."""
_EVAL_SET_KEYS = frozenset({"eval_set_id", "evalSetId", "eval_cases", "evalCases"})
_LEGACY_EVAL_DATA_KEYS = ({"query", "expected_tool_use"}, {"name", "data"})
_TRACE_KEYS = frozenset(
    {"resourceSpans", "resource_spans", "batches", "trace", "spans", "resourceLogs", "resource_logs"}
)


def document_kind(payload: Any) -> str | None:
    """What a parsed JSON file holds, by its top-level keys: ``"eval set"`` (an ADK ``EvalSet`` or ADK's older
    ``*.test.json`` list), ``"eval config"``, ``"trace file"`` (OTLP JSON, Tempo, Jaeger), or None when unsure."""
    if isinstance(payload, dict):
        if _EVAL_SET_KEYS & set(payload):
            return "eval set"
        if "criteria" in payload:
            return "eval config"
        data = payload.get("data")
        jaeger = isinstance(data, list) and any(isinstance(item, dict) and "spans" in item for item in data)
        if _TRACE_KEYS & set(payload) or jaeger:
            return "trace file"
    if isinstance(payload, list) and payload and all(isinstance(item, dict) for item in payload):
        keys = set().union(*(item.keys() for item in payload))
        if any(legacy <= keys for legacy in _LEGACY_EVAL_DATA_KEYS):
            return "eval set"
        if keys & {"resource", "scopeSpans", "scope_spans", "traceId", "trace_id", "spanId", "span_id"}:
            return "trace file"
    return None


def near_config_keys(payload: dict[Any, Any]) -> dict[str, str]:
    """The keys of ``payload`` that look like a misspelled eval config key, each with the key it is close to."""
    near = {}
    for key in payload:
        if isinstance(key, str) and key not in EVAL_CONFIG_KEYS:
            match = difflib.get_close_matches(key, EVAL_CONFIG_KEYS, n=1, cutoff=0.85)
            if match:
                near[key] = match[0]
    return near


def eval_config_problem(payload: Any) -> str | None:
    """Why ``payload`` is not an ADK eval config object, judged by its top level; None when it is one.

    Stricter than ADK, whose ``EvalConfig`` ignores unknown keys: a misspelled ``criteria`` would leave a config with
    no criteria, which runs only the informational metrics and so can never fail.
    """
    kind = document_kind(payload)
    if kind in ("eval set", "trace file"):
        return f"this is {'an ADK eval set' if kind == 'eval set' else 'a trace file'}, not an eval config"
    if not isinstance(payload, dict):
        return f'not an eval config: expected a JSON object such as {{"criteria": {{...}}}}, got {_json_type(payload)}'
    unknown = [str(key) for key in payload if key not in EVAL_CONFIG_KEYS]
    if not unknown:
        return None
    near = near_config_keys(payload)
    named = ", ".join(f"'{key}'" + (f" (did you mean '{near[key]}'?)" if key in near else "") for key in unknown)
    return f"unknown key{'s' if len(unknown) > 1 else ''} {named}; an eval config has {CONFIG_KEY_NAMES}"


def criteria_object_problem(data: dict[Any, Any]) -> str | None:
    """Why ``data``, given where ADK criteria are expected, is neither the criteria object itself (an object with none
    of an eval config's keys) nor an eval config; None when it is one. An eval set, a trace file, or an object with a
    misspelled eval config key (``critera``) is not taken for the criteria object."""
    bare = bool(data) and not set(data) & EVAL_CONFIG_KEYS
    if bare and document_kind(data) is None and not near_config_keys(data):
        return None
    return eval_config_problem(data)


def _json_type(payload: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(payload), "null")


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
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise InputError(f"{path}: invalid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None


def validated(path: Path, payload: Any, model: type[ModelT], what: str) -> ModelT:
    """``payload`` (read from ``path``) validated as ``model``; InputError naming the first problem's JSON path."""
    try:
        return model.model_validate(payload)
    except pydantic.ValidationError as exc:
        raise _invalid(path, exc, what) from exc


def _invalid(path: Path, exc: pydantic.ValidationError, what: str) -> InputError:
    problems = validation_problems(exc)
    more = f" (+{len(problems) - 1} more: otel-eval validate {path} lists them all)" if len(problems) > 1 else ""
    return InputError(f"{path}: invalid {what}: {problems[0]}{more}")


def load_eval_set(path: str | Path) -> EvalSet:
    """An ADK eval set file, or ADK's older ``*.test.json`` eval data (converted as ADK converts it).

    Raises InputError naming the file, the JSON path and the problem.
    """
    path = Path(path)
    payload = read_json(path)
    try:
        return eval_set_from(payload, path)
    except pydantic.ValidationError as exc:
        what = "eval data (ADK's older list format)" if isinstance(payload, list) else "eval set"
        raise _invalid(path, exc, what) from exc


def eval_set_from(payload: Any, path: Path) -> EvalSet:
    """``payload`` (read from ``path``) as an eval set: an ``EvalSet`` object, or ADK's older ``*.test.json`` list
    converted as ADK converts it (its id from the file's name).

    Raises:
        pydantic.ValidationError: neither; locations are paths into ``payload``.
    """
    if not isinstance(payload, list):  # an EvalSet is an object; the older format is an array
        return EvalSet.model_validate(payload)
    from otel_eval.model.legacy_eval_set import convert_legacy_eval_data  # deferred: rarely needed

    return convert_legacy_eval_data(payload, eval_set_id=path.name.removesuffix(".json").removesuffix(".test"))


def adk_eval_set(value: Any, setting: str) -> EvalSet | None:
    """``value`` as our ``EvalSet`` when it is Google ADK's own (``google.adk.evaluation.eval_set.EvalSet``, the same
    JSON), else None.

    Raises:
        ConfigurationError: ADK's eval set does not validate as ADK 2.13's, naming ``setting`` and the problem.
    """
    kind = type(value)
    if kind.__name__ != "EvalSet" or not kind.__module__.startswith("google.adk.") or isinstance(value, EvalSet):
        return None
    try:
        return EvalSet.model_validate(value.model_dump(mode="json", exclude_none=True))
    except pydantic.ValidationError as exc:
        raise ConfigurationError(
            f"{setting}: ADK's EvalSet is not a valid eval set: {validation_problems(exc)[0]}"
        ) from None


def load_eval_config(path: str | Path) -> EvalConfig:
    """An ADK eval config file (``{"criteria": {...}}``). Raises InputError naming file, path and problem (an
    unknown top-level key too, see :func:`eval_config_problem`)."""
    path = Path(path)
    payload = read_json(path)
    problem = eval_config_problem(payload)
    if problem is not None:
        raise InputError(f"{path}: {problem}")
    return validated(path, payload, EvalConfig, "eval config")


def setting_source(raw: str | None, *, setting: str) -> str:
    """What an error calls the criteria a setting gives (``raw``: JSON, or a path to it): ``setting``, or
    ``setting file PATH``."""
    text = (raw or "").strip()
    return setting if not text or text.startswith("{") else f"{setting} file {text}"


def criteria_setting(raw: str | None, *, setting: str) -> dict[str, Any] | None:
    """ADK criteria from a setting: JSON (``{"criteria": {...}}`` or the criteria object) or a path to such a file.

    Returns the criteria object (metric -> threshold or criterion); for an ``EvalConfig`` that declares
    ``custom_metrics``, ``{"criteria": ..., "custom_metrics": ...}`` (what the evaluation core loads them from); None
    when ``raw`` is empty.

    An object with none of an eval config's keys is the criteria object, unless it is an eval set or a trace file or
    a key is a misspelled eval config key (``critera``): those are refused, as :func:`load_eval_config` refuses them.

    Raises:
        ConfigurationError: an unreadable file, invalid JSON, not an object, or not criteria (an unknown top-level
            key of an eval config); the message names ``setting``.
    """
    text = (raw or "").strip()
    if not text:
        return None
    source = setting_source(text, setting=setting)
    if not text.startswith("{"):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise ConfigurationError(f"{source}: invalid JSON: {exc}") from None
    except RecursionError:
        raise ConfigurationError(f"{source}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: expected a JSON object of metric -> threshold or criterion")
    problem = criteria_object_problem(data)
    if problem is not None:
        raise ConfigurationError(f"{source}: {problem}")
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
    """The eval set a setting names (None when unset), with a warning logged per :meth:`EvalSet.case_warnings`
    finding, naming ``setting``, the file and the JSON path (what ``otel-eval validate`` and ``run`` say of it).
    Raises ConfigurationError naming ``setting`` and the problem."""
    if not path:
        return None
    try:
        eval_set = load_eval_set(path)
    except InputError as exc:
        raise ConfigurationError(f"{setting}: {exc}") from None
    for line in eval_set.case_warnings():
        logger.warning("%s: %s: %s", setting, path, line)
    return eval_set
