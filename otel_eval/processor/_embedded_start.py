"""The start-up of the in-thread engine's embedded worker (no ``exporter``), run first on the engine's background
thread, not the caller's (the agent's): the plan of its own metrics (it asks the judge whether it is configured; a
LiteLLM judge's check imports LiteLLM, seconds) and the warning when head sampling would thin the sessions of its
conversation-level metrics."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from otel_eval import environment_variables as env
from otel_eval.evaluation.embedded_worker import EmbeddedCore

_start_up_logger = logging.getLogger("otel_eval.processor._thread_engine.start_up")
"""Start-up warnings: one per processor, so not de-duplicated across processors (the engine's logger's name, as
before this module was split from it)."""

SAMPLED_SESSIONS_WARNING = (
    "%s=%s without priority sampling samples traces, not sessions: the conversation-level metrics %s would judge "
    "each session from its sampled turns only, a conversation with turns left out. Leave %s on to sample whole "
    "sessions, set %s=1, or leave these metrics out"
)
"""Said once at start-up when head sampling meets conversation-level metrics the embedded worker runs."""


def plan_embedded(core: EmbeddedCore, sample_rate: float | None) -> None:
    """Plans the embedded core's own metrics (:meth:`~otel_eval.evaluation.core.EvaluationCore.reads`) and, when
    traces are sampled by trace id alone (``sample_rate``), warns if it holds conversation-level metrics."""
    core.reads()
    if sample_rate is not None:
        _warn_sampled_sessions(sample_rate, core.conversation_metrics())


def _warn_sampled_sessions(sample_rate: float, conversation: Sequence[str]) -> None:
    """Warns when head sampling (:attr:`~otel_eval.processor._selection.Sampling.head_sampling`) would thin the
    sessions of the ``conversation``-level metrics the embedded worker runs."""
    if conversation:
        _start_up_logger.warning(
            SAMPLED_SESSIONS_WARNING,
            env.OTEL_EVAL_SAMPLE_RATE,
            sample_rate,
            ", ".join(conversation),
            env.OTEL_EVAL_SAMPLE_PRIORITY,
            env.OTEL_EVAL_SAMPLE_RATE,
        )
