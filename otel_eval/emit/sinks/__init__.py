"""Score sinks: where each request's records go besides the OpenTelemetry signals, named in ``OTEL_EVAL_SINKS``.

``console`` prints one line per score (:class:`~otel_eval.emit.console.ConsoleRecordSink`); ``phoenix``,
``mlflow`` and ``langfuse`` post the scores to that backend's own API, so they show there as scores (span
annotations, assessments, scores) rather than as span attributes. Each backend sink is configured by the
backend's own variables, batches and retries on a thread of its own (:class:`BatchingSink`), and never blocks the
evaluation. :func:`sinks_from_env` is what the processor, the evaluation process and the Kafka worker call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.metrics import MeterProvider

from otel_eval import environment_variables as env
from otel_eval.emit import RecordSink
from otel_eval.emit.console import ConsoleRecordSink
from otel_eval.errors import ConfigurationError, optional_dependency

if TYPE_CHECKING:
    from otel_eval.emit.sinks._delivery import Backend, BatchingSink, SinkMetrics

CONSOLE: Final = "console"
PHOENIX: Final = "phoenix"
MLFLOW: Final = "mlflow"
LANGFUSE: Final = "langfuse"
SINK_NAMES: Final[tuple[str, ...]] = (CONSOLE, PHOENIX, MLFLOW, LANGFUSE)
"""The names ``OTEL_EVAL_SINKS`` accepts."""


def sink_names(environ: Mapping[str, str] | None = None, *, setting: str = env.OTEL_EVAL_SINKS) -> list[str]:
    """The sinks ``OTEL_EVAL_SINKS`` names, in order and without repeats, with ``console`` when
    ``OTEL_EVAL_CONSOLE`` is true. ``setting`` is what errors call ``OTEL_EVAL_SINKS``: the flag it was set from.

    Raises:
        ConfigurationError: an unknown name, or an ``OTEL_EVAL_CONSOLE`` that is not a boolean.
    """
    environ = os.environ if environ is None else environ
    names: list[str] = []
    value = environ.get(env.OTEL_EVAL_SINKS, "")
    for raw in value.split(","):
        name = raw.strip().lower()
        if not name or name == "none":
            continue
        if name not in SINK_NAMES:
            raise ConfigurationError(
                f"{env.shown_setting(setting, value.strip())}: unknown sink {raw.strip()!r}; expected a "
                f"comma-separated list of {', '.join(SINK_NAMES)}"
            )
        if name not in names:
            names.append(name)
    if env.flag_setting(environ, env.OTEL_EVAL_CONSOLE, False) and CONSOLE not in names:
        names.insert(0, CONSOLE)
    return names


def sinks_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    meter_provider: MeterProvider | None = None,
    setting: str = env.OTEL_EVAL_SINKS,
) -> list[RecordSink]:
    """The sinks ``OTEL_EVAL_SINKS`` (and ``OTEL_EVAL_CONSOLE``) name, each configured from its backend's variables.

    Args:
        environ: The environment (``os.environ`` when None).
        meter_provider: Where the backend sinks' ``otel_eval.sink.*`` counters go (global when None).
        setting: What errors call ``OTEL_EVAL_SINKS``: the flag (``--sinks``) its value came from, if one did.

    Raises:
        ConfigurationError: an unknown sink, a bad setting, or a backend's missing required variable.
    """
    environ = os.environ if environ is None else environ
    names = sink_names(environ, setting=setting)
    if not names:
        return []
    options = {
        "informational": env.flag_setting(environ, env.OTEL_EVAL_SINKS_INFORMATIONAL, False),
        "retry_seconds": env.number_setting(
            environ,
            env.OTEL_EVAL_SINKS_RETRY_SECONDS,
            env.DEFAULT_SINKS_RETRY_SECONDS,
            valid=lambda v: v >= 0,
            expected="seconds >= 0",
        ),
        "max_queue_size": env.number_setting(
            environ,
            env.OTEL_EVAL_SINKS_QUEUE_SIZE,
            env.DEFAULT_SINKS_QUEUE_SIZE,
            valid=lambda v: v >= 1,
            expected="an integer >= 1",
        ),
    }
    sinks: list[RecordSink] = []
    for name in names:
        if name == CONSOLE:
            sinks.append(ConsoleRecordSink())
            continue
        with optional_dependency(f"{setting}={name}", extra=name):
            from otel_eval.emit.sinks._delivery import BatchingSink  # deferred: httpx2, only when a backend is named

            backend = _BACKENDS[name](environ)
        sinks.append(
            BatchingSink(
                backend,
                informational=bool(options["informational"]),
                retry_seconds=float(options["retry_seconds"]),
                max_queue_size=int(options["max_queue_size"]),
                meter_provider=meter_provider,
            )
        )
    return sinks


def _phoenix(environ: Mapping[str, str]) -> Backend:
    from otel_eval.emit.sinks.phoenix import PhoenixBackend

    return PhoenixBackend.from_env(environ)


def _mlflow(environ: Mapping[str, str]) -> Backend:
    from otel_eval.emit.sinks.mlflow import MlflowBackend

    return MlflowBackend.from_env(environ)


def _langfuse(environ: Mapping[str, str]) -> Backend:
    from otel_eval.emit.sinks.langfuse import LangfuseBackend

    return LangfuseBackend.from_env(environ)


_BACKENDS: Final[dict[str, Callable[[Mapping[str, str]], Backend]]] = {
    PHOENIX: _phoenix,
    MLFLOW: _mlflow,
    LANGFUSE: _langfuse,
}


def __getattr__(name: str) -> Any:
    """:class:`BatchingSink`, :class:`Backend` and :class:`SinkMetrics`, imported on first use (they load httpx2)."""
    if name in ("Backend", "BatchingSink", "SinkMetrics"):
        from otel_eval.emit.sinks import _delivery

        return getattr(_delivery, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SINK_NAMES",
    "Backend",
    "BatchingSink",
    "SinkMetrics",
    "sink_names",
    "sinks_from_env",
]
