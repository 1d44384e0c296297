"""Reading the traces a backend already stores (Phoenix, MLflow), paged and streamed, for ``otel-eval run --from``.

A reader yields :class:`TracePage`\\ s: whole traces (every span of each trace that a page names), newest first
(MLflow: by start time; Phoenix: the last stored first), in the internal :class:`~otel_eval.traces.span.Span` form,
so memory holds one page of spans at a time. It reads through the backend's documented REST API with httpx2,
configured by the backend's own variables, the same ones its clients and otel-eval's score sinks read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from otel_eval.errors import optional_dependency
from otel_eval.traces.span import Span

PHOENIX: Final = "phoenix"
MLFLOW: Final = "mlflow"
BACKEND_NAMES: Final[tuple[str, ...]] = (PHOENIX, MLFLOW)
"""The names ``--from`` accepts."""
DEFAULT_PAGE_TRACES: Final = 50
"""Traces per page read from a backend."""


@dataclass(frozen=True, slots=True)
class Window:
    """Which traces to read: started in ``[since_ns, until_ns)`` (None: unbounded), at most ``limit`` (None: all),
    matching the backend's own ``filters``; a trace the backend says is still running (MLflow's ``IN_PROGRESS``: no
    parentless span yet) is left out while its last span ended at or after ``settled_ns`` (None: read it)."""

    since_ns: int | None = None
    until_ns: int | None = None
    limit: int | None = None
    filters: tuple[str, ...] = ()
    page_traces: int = DEFAULT_PAGE_TRACES
    settled_ns: int | None = None


@dataclass(slots=True)
class TracePage:
    """Whole traces read in one go."""

    spans: list[Span]
    size: int
    """Bytes of the backend's answers this page took (what the offline run's spill counts)."""
    traces: int
    """Traces in the page."""
    warnings: list[str] = field(default_factory=list)
    running: int = 0
    """Traces left out as still running (:attr:`Window.settled_ns`): a later read takes them whole."""


class BackendReader(Protocol):
    """One backend's traces, page by page."""

    name: str
    endpoint: str
    """The base URL, for messages (never with credentials)."""
    where: str
    """What is read, for messages: ``project 'x'``, ``experiment 12``."""

    def pages(self, window: Window) -> Iterator[TracePage]:
        """The traces of ``window``, a page at a time.

        Raises:
            BackendUnavailable: the backend cannot be reached or refuses (credentials, a missing project).
        """


class BackendUnavailable(Exception):
    """The backend could not be read: unreachable, or it refused (the message says which, without credentials).

    Args:
        message: What failed.
        status: The HTTP status of a refusal (None: unreachable).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def bad_request(self) -> bool:
        """Whether the backend refused the request itself: a malformed ``--filter`` or experiment id (HTTP 400 or
        422), or a project or experiment that does not exist (404)."""
        return self.status in (400, 404, 422)


def reader_from_env(name: str, environ: Mapping[str, str]) -> BackendReader:
    """The reader of backend ``name`` configured from its own variables.

    Raises:
        ConfigurationError: an unknown backend or a bad setting.
    """
    factories: dict[str, Callable[[Mapping[str, str]], BackendReader]] = {PHOENIX: _phoenix, MLFLOW: _mlflow}
    if name not in factories:
        from otel_eval.errors import ConfigurationError

        raise ConfigurationError(f"--from: unknown backend {name!r}; expected one of {', '.join(BACKEND_NAMES)}")
    with optional_dependency(f"--from {name}", extra=name):
        return factories[name](environ)


def _phoenix(environ: Mapping[str, str]) -> BackendReader:
    from otel_eval.traces.backends.phoenix import PhoenixReader

    return PhoenixReader.from_env(environ)


def _mlflow(environ: Mapping[str, str]) -> BackendReader:
    from otel_eval.traces.backends.mlflow import MlflowReader

    return MlflowReader.from_env(environ)


__all__ = [
    "BACKEND_NAMES",
    "BackendReader",
    "BackendUnavailable",
    "TracePage",
    "Window",
    "reader_from_env",
]
