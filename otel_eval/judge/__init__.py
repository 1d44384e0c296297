"""The LLM judge: one client over the providers ADK resolves judge models to (Gemini through google-genai, Claude on
Vertex AI, OpenAI Chat Completions, the LiteLLM routes; :mod:`otel_eval.judge.resolve`), with retries, a shared
concurrency limit, a cache, accounting and injection-safe prompt data blocks.

Typical wiring (the CLI and workers do this)::

    judge = JudgeClient(JudgeSettings.from_env(max_concurrency=16))
    evaluator = registry.create("hallucinations_v1", criterion, judge=judge)
    ...
    print(judge.summary_line())

Evaluators created without a judge use :func:`default_judge` (built from the environment once per process).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from otel_eval.judge.accounting import JudgeAccounting, JudgeUsage
from otel_eval.judge.prompt_safety import DataBlocks
from otel_eval.judge.protocol import Judge, ModelAwareJudge
from otel_eval.judge.retry import (
    JUDGE_AUTH,
    JUDGE_BAD_REQUEST,
    JUDGE_BAD_RESPONSE,
    JUDGE_CONNECTION,
    JUDGE_INJECTION_SUSPECTED,
    JUDGE_NOT_CONFIGURED,
    JUDGE_QUOTA_EXHAUSTED,
    JUDGE_RATE_LIMITED,
    JUDGE_SERVER_ERROR,
    JUDGE_TIMEOUT,
    JUDGE_UNPARSEABLE,
)
from otel_eval.judge.settings import JudgeSettings, PriceTable

if TYPE_CHECKING:
    from otel_eval.judge.client import JudgeClient, JudgeReply, JudgeRequest, default_judge, set_default_judge

# The client's modules (~20 ms; google-genai, about a second, loads with the first Gemini call) are loaded on first use
# of one of these names, so that importing the metrics (and every run without a judged metric) does not pay for them.
_CLIENT_NAMES = frozenset({"JudgeClient", "JudgeReply", "JudgeRequest", "default_judge", "set_default_judge"})


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        return getattr(importlib.import_module("otel_eval.judge.client"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "JUDGE_AUTH",
    "JUDGE_BAD_REQUEST",
    "JUDGE_BAD_RESPONSE",
    "JUDGE_CONNECTION",
    "JUDGE_INJECTION_SUSPECTED",
    "JUDGE_NOT_CONFIGURED",
    "JUDGE_QUOTA_EXHAUSTED",
    "JUDGE_RATE_LIMITED",
    "JUDGE_SERVER_ERROR",
    "JUDGE_TIMEOUT",
    "JUDGE_UNPARSEABLE",
    "DataBlocks",
    "Judge",
    "JudgeAccounting",
    "JudgeClient",
    "JudgeReply",
    "JudgeRequest",
    "JudgeSettings",
    "JudgeUsage",
    "ModelAwareJudge",
    "PriceTable",
    "default_judge",
    "set_default_judge",
]
