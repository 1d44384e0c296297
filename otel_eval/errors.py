"""Errors otel-eval raises. Messages name the file, the field and the problem."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class OtelEvalError(Exception):
    """Base of every error otel-eval raises on purpose."""


class InputError(OtelEvalError, ValueError):
    """Input that cannot be read: a trace, eval set or config file, or a message."""


class TraceFormatError(InputError):
    """A trace file that is none of the supported formats, or malformed within one."""


class ConfigurationError(OtelEvalError, ValueError):
    """A bad setting, criterion or metric name."""


class MetricNotFoundError(ConfigurationError, KeyError):
    """A metric name that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "metric not found"


class JudgeError(OtelEvalError):
    """A judge call that finally failed. ``error_type`` is the value reported as ``error.type``."""

    def __init__(self, message: str, *, error_type: str, retriable: bool = False) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.retriable = retriable


@contextlib.contextmanager
def optional_dependency(needed_by: str, extra: str) -> Iterator[None]:
    """Turns a package missing while the block imports into a :class:`ConfigurationError` that names the setting that
    needs it (``needed_by``) and the extra that installs it, instead of a traceback from deep inside an import."""
    try:
        yield
    except ModuleNotFoundError as exc:
        raise ConfigurationError(
            f"{needed_by} needs the {exc.name!r} package, which is not installed: pip install 'otel-eval[{extra}]'"
        ) from None
