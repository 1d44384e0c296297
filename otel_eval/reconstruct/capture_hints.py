"""The one hint per process that says how to turn message content on, for the instrumentation the spans came from.

An invocation rebuilt without message content (``content_captured`` false) leaves every metric that reads it
``NOT_EVALUATED`` (``content_not_captured``); the reason alone does not say which setting of which instrumentation
turns capture on. :func:`hint_content_capture` (called by :func:`otel_eval.reconstruct.rebuild_trace`) logs one
WARNING naming it the first time such a trace is rebuilt, then only checks a flag.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from otel_eval import environment_variables as env
from otel_eval import semconv
from otel_eval.reconstruct.adk import CONVENTION_NAME as ADK
from otel_eval.reconstruct.adk_v2 import CONVENTION_NAME as ADK_V2
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.traces.span import Span

logger = logging.getLogger(__name__)

_GENAI_SWITCH = (
    f"set {env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT}=SPAN_ONLY in the agent's environment, or EVENT_ONLY "
    "with the content log records joined (in-process the processor's log_record_processor on the LoggerProvider, on the "
    "Collector path the otlp_logs source, offline the OTLP log files beside the trace files)"
)
_SETTINGS: dict[str, tuple[str, str]] = {
    ADK: ("Google ADK (legacy spans)", "leave ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS unset or true"),
    ADK_V2: ("Google ADK", _GENAI_SWITCH),
    "openinference": (
        "an OpenInference instrumentation",
        "unset OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES and "
        "OPENINFERENCE_HIDE_OUTPUT_MESSAGES (or the TraceConfig options of the same names)",
    ),
    "openllmetry": ("OpenLLMetry", "leave TRACELOOP_TRACE_CONTENT unset or true"),
    "agent_framework": (
        "Microsoft Agent Framework",
        "set ENABLE_SENSITIVE_DATA=true (or call enable_sensitive_telemetry(), or "
        "configure_otel_providers(enable_sensitive_data=True)): it is off by default",
    ),
    "pydantic_ai": ("Pydantic AI", "leave include_content on in its InstrumentationSettings"),
    "autogen": ("AutoGen", "its spans never carry message content: only the tool-name metrics apply"),
    "genai": ("a GenAI semantic-convention instrumentation", _GENAI_SWITCH),
}
_PYDANTIC_AI_SCOPE = "pydantic-ai"
_AUTOGEN_SCOPE_PREFIX = "autogen"


class _Hint:
    def __init__(self) -> None:
        self.done = False
        self._lock = threading.Lock()

    def check(self, trace: TraceInvocations, spans: Sequence[Span]) -> None:
        views = trace.plain if trace.plain is not None else trace.invocations
        # An ADK run no model was called in (a callback answered it) holds no content whatever the setting.
        adk = trace.convention in _ADK_CONVENTIONS
        if all(view.content_captured or (adk and view.model_call_count == 0) for view in views):
            return
        with self._lock:
            if self.done:
                return
            self.done = True
        framework, setting = _SETTINGS[instrumentation(trace.convention, spans)]
        logger.warning(
            "trace %s (%s) carries no message content, so the metrics that read it (user text, responses, tool "
            "arguments) report NOT_EVALUATED (content_not_captured): %s; see Troubleshooting in the otel-eval docs "
            "(docs/troubleshooting.md). Said once per process.",
            trace.trace_id,
            framework,
            setting,
        )


_ADK_CONVENTIONS = frozenset({ADK, ADK_V2})
_HINT = _Hint()


def hint_content_capture(trace: TraceInvocations, spans: Sequence[Span]) -> None:
    """Logs, once per process, how to turn content capture on when ``trace`` has an invocation without content; after
    that, a flag check."""
    if not _HINT.done:
        try:
            _HINT.check(trace, spans)
        except Exception:  # a hint is never worth a trace
            logger.debug("content capture hint failed", exc_info=True)


def instrumentation(convention: str, spans: Sequence[Span]) -> str:
    """Which instrumentation (a key of the hint's settings) wrote ``spans``, rebuilt by ``convention``: the GenAI
    convention's producers are told apart by instrumentation scope (OpenLLMetry by its ``traceloop.*`` attributes)."""
    if convention != "genai":
        return convention if convention in _SETTINGS else "genai"
    for span in spans:
        scope = span.scope_name or ""
        if scope == semconv.AGENT_FRAMEWORK_SCOPE:
            return "agent_framework"
        if scope == _PYDANTIC_AI_SCOPE:
            return "pydantic_ai"
        if scope.startswith(_AUTOGEN_SCOPE_PREFIX):
            return "autogen"
        if any(key.startswith("traceloop.") for key in span.attributes):
            return "openllmetry"
    return "genai"
