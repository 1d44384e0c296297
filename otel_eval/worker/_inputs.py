"""Reading the worker's ``criteria`` (JSON or a file) and ``eval_set`` (a file) settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from otel_eval.environment_variables import OTEL_EVAL_CRITERIA, OTEL_EVAL_EVAL_SET
from otel_eval.errors import ConfigurationError, InputError
from otel_eval.model import EvalSet
from otel_eval.model.loading import load_eval_set as _load_eval_set


def load_criteria(raw: str | None) -> dict[str, Any] | None:
    """ADK criteria from JSON text (``{"criteria": {...}}`` or the criteria object) or a path to such a file.

    Raises:
        ConfigurationError: an unreadable file or invalid JSON (named in the message).
    """
    text = (raw or "").strip()
    if not text:
        return None
    source = f"{OTEL_EVAL_CRITERIA} / --criteria"
    if not text.startswith("{"):
        source = f"criteria file {text}"
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
    return data


def load_eval_set(path: str | None) -> EvalSet | None:
    """The eval set at ``path`` (None when unset).

    Raises:
        ConfigurationError: the file cannot be read or is not an ADK eval set.
    """
    if not path:
        return None
    try:
        return _load_eval_set(path)
    except InputError as exc:
        raise ConfigurationError(f"{OTEL_EVAL_EVAL_SET} / --eval-set: {exc}") from None
