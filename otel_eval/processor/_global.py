"""``attach_to_global_providers()``: the processor on the providers someone else set globally (an ADK server's)."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from opentelemetry import _logs, trace
from opentelemetry._logs._internal import ProxyLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

from otel_eval import environment_variables as env
from otel_eval.environment_variables import names_setting
from otel_eval.processor._settings import ProcessorSettings
from otel_eval.processor.processor import EvaluationSpanProcessor

logger = logging.getLogger(__name__)

_Selection = tuple[tuple[str, ...], tuple[str, ...]]
"""The agent names and root span names a processor evaluates (empty: all)."""

_attached: weakref.WeakKeyDictionary[object, dict[_Selection, EvaluationSpanProcessor]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def attach_to_global_providers(environ: Mapping[str, str] | None = None, **overrides: Any) -> EvaluationSpanProcessor:
    """Adds an :meth:`EvaluationSpanProcessor.from_env` processor to the global tracer provider, and its
    ``log_record_processor`` to the global logger provider; returns the processor.

    It adds to the providers already set (by ``adk web``, ``adk api_server`` or ``get_fast_api_app``, with their
    exporters) and never replaces them; where none is set it sets an SDK one. Called again on the same tracer
    provider for the same agents (an agent module imported again on reload), it returns the processor it attached
    the first time, so no invocation is scored twice; for other agents (``agent_names=`` or ``root_span_names=``,
    as keywords, in ``settings=`` or the environment: each agent of a server with its own criteria) it attaches
    another, and warns when one of them evaluates every agent (the other's invocations are then scored twice).
    ``environ`` and ``overrides`` are :meth:`EvaluationSpanProcessor.from_env`'s.

    Raises:
        TypeError: the global tracer provider is not one that takes span processors (not the OpenTelemetry SDK's),
            naming its type. (A logger provider that takes none is left alone, said at INFO.)
        ConfigurationError: a bad ``OTEL_EVAL_*`` value, as :meth:`EvaluationSpanProcessor.from_env`.
    """
    with _lock:
        tracer_provider = trace.get_tracer_provider()
        selection = _selection(environ, overrides)
        attached = _attached.get(tracer_provider, {})
        if selection in attached:
            return attached[selection]
        _warn_overlap(selection, attached)
        if not isinstance(tracer_provider, (SdkTracerProvider, trace.ProxyTracerProvider)):
            raise TypeError(
                f"attach_to_global_providers: the global tracer provider is a {type(tracer_provider).__name__}, "
                "which takes no span processors; set an OpenTelemetry SDK TracerProvider globally, or add "
                "EvaluationSpanProcessor.from_env() to your provider yourself"
            )
        processor = EvaluationSpanProcessor.from_env(environ, **overrides)  # first: it checks where the scores go
        if not isinstance(tracer_provider, SdkTracerProvider):
            tracer_provider = SdkTracerProvider()
            trace.set_tracer_provider(tracer_provider)
        tracer_provider.add_span_processor(processor)
        logger_provider = _logs.get_logger_provider()
        if isinstance(logger_provider, ProxyLoggerProvider):
            logger_provider = SdkLoggerProvider()
            _logs.set_logger_provider(logger_provider)
        if isinstance(logger_provider, SdkLoggerProvider):
            logger_provider.add_log_record_processor(processor.log_record_processor)
        else:
            logger.info(
                "attach_to_global_providers: the global logger provider is a %s, which takes no log record "
                "processors: content on log records (EVENT_ONLY) does not reach the processor",
                type(logger_provider).__name__,
            )
        _attached.setdefault(tracer_provider, {})[selection] = processor
        return processor


def _selection(environ: Mapping[str, str] | None, overrides: Mapping[str, Any]) -> _Selection:
    """The agents a call asks for, as ``from_env`` would read them (only those two settings: the eval set a whole
    ``from_env`` loads is read once, by the processor itself)."""
    settings = overrides.get("settings")
    if settings is None:
        environ = os.environ if environ is None else environ
        settings = ProcessorSettings(
            agent_names=names_setting(environ.get(env.OTEL_EVAL_AGENT_NAMES, "")),
            root_span_names=names_setting(environ.get(env.OTEL_EVAL_ROOT_SPAN_NAMES, "")),
        )
    chosen = {name: overrides[name] for name in ("agent_names", "root_span_names") if name in overrides}
    settings = replace(settings, **chosen)
    return tuple(sorted(settings.agent_names)), tuple(sorted(settings.root_span_names))


def _warn_overlap(selection: _Selection, attached: Mapping[_Selection, EvaluationSpanProcessor]) -> None:
    everyone: _Selection = ((), ())
    if attached and (selection == everyone or everyone in attached):
        named = sorted({name for key in (selection, *attached) for names in key for name in names})
        logger.warning(
            "attach_to_global_providers: one of the processors on the global tracer provider evaluates every agent, "
            "so the invocations of %s are evaluated twice; give each call its agent_names=",
            ", ".join(named) or "every agent",
        )
