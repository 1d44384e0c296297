"""``attach_to_global_providers()``: the processor on the providers someone else set globally (an ADK server's)."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from opentelemetry import _logs, trace
from opentelemetry._logs._internal import ProxyLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

from otel_eval.processor.processor import EvaluationSpanProcessor

logger = logging.getLogger(__name__)

_attached: weakref.WeakKeyDictionary[object, EvaluationSpanProcessor] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def attach_to_global_providers(environ: Mapping[str, str] | None = None, **overrides: Any) -> EvaluationSpanProcessor:
    """Adds an :meth:`EvaluationSpanProcessor.from_env` processor to the global tracer provider, and its
    ``log_record_processor`` to the global logger provider; returns the processor.

    It adds to the providers already set (by ``adk web``, ``adk api_server`` or ``get_fast_api_app``, with their
    exporters) and never replaces them; where none is set it sets an SDK one. Called again on the same tracer
    provider (an agent module imported again on reload, several agents in one server), it returns the processor it
    attached the first time, so no invocation is scored twice. ``environ`` and ``overrides`` are
    :meth:`EvaluationSpanProcessor.from_env`'s.

    Raises:
        TypeError: the global tracer provider is not one that takes span processors (not the OpenTelemetry SDK's),
            naming its type. (A logger provider that takes none is left alone, said at INFO.)
        ConfigurationError: a bad ``OTEL_EVAL_*`` value, as :meth:`EvaluationSpanProcessor.from_env`.
    """
    with _lock:
        tracer_provider = trace.get_tracer_provider()
        attached = _attached.get(tracer_provider)
        if attached is not None:
            return attached
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
        _attached[tracer_provider] = processor
        return processor
