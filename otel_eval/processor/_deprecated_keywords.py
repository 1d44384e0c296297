"""The keywords ``EvaluationSpanProcessor`` took before ``settings=ProcessorSettings(...)``, kept working behind a
``DeprecationWarning`` for one minor version."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypedDict

from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model import EvalSet
from otel_eval.processor._settings import ProcessorSettings


class DeprecatedKeywords(TypedDict, total=False):
    """The settings ``EvaluationSpanProcessor`` took as keywords before it took ``settings=ProcessorSettings(...)``
    (deprecated: they keep working, with a ``DeprecationWarning``, until :data:`DEPRECATED_KEYWORDS_REMOVED_IN`).
    Each is the :class:`ProcessorSettings` field of the same name."""

    eval_set: EvalSet | str | Path | None
    sample_rate: float
    sample_priority: bool
    agent_names: Iterable[str]
    root_span_names: Iterable[str]
    max_open_traces: int
    max_spans_per_trace: int
    max_buffer_bytes: int
    max_pending_spans: int
    trace_idle_timeout: float
    isolation: str
    max_queue_size: int
    concurrency: int
    sessions: SessionLimits


DEPRECATED_KEYWORDS: Final = frozenset(DeprecatedKeywords.__annotations__)
"""The names of :class:`DeprecatedKeywords`."""
DEPRECATED_KEYWORDS_REMOVED_IN: Final = "0.3.0"
"""The version without :data:`DEPRECATED_KEYWORDS` (they work, deprecated, through the 0.2 releases)."""


def with_deprecated_keywords(settings: ProcessorSettings | None, keywords: Mapping[str, Any]) -> ProcessorSettings:
    """``settings`` (defaults when None) with the deprecated keywords of ``EvaluationSpanProcessor(...)`` applied
    over them, said by one ``DeprecationWarning`` that names the replacement.

    Raises:
        TypeError: a keyword that the processor never took (as Python says it for any other function).
        ValueError, ConfigurationError: a bad value (as :class:`ProcessorSettings` says it).
    """
    settings = ProcessorSettings() if settings is None else settings
    if not keywords:
        return settings
    unknown = sorted(set(keywords) - DEPRECATED_KEYWORDS)
    if unknown:
        raise TypeError(f"EvaluationSpanProcessor() got an unexpected keyword argument {unknown[0]!r}")
    given = ", ".join(f"{name}=..." for name in sorted(keywords))
    warnings.warn(
        f"EvaluationSpanProcessor({given}) is deprecated and stops working in otel-eval "
        f"{DEPRECATED_KEYWORDS_REMOVED_IN}: pass settings=ProcessorSettings({given}) instead "
        "(otel_eval.ProcessorSettings)",
        DeprecationWarning,
        stacklevel=3,  # the caller of EvaluationSpanProcessor(...)
    )
    return replace(settings, **keywords)
