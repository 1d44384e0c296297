"""Eval sets, wire-compatible with ``google.adk.evaluation.eval_set`` (ADK 2.13)."""

from __future__ import annotations

import pydantic

from otel_eval.model.eval_case import EvalCase


class EvalSet(pydantic.BaseModel):
    """A set of eval cases. Top-level keys are snake_case only, as in ADK."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0
