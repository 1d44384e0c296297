"""Eval sets, wire-compatible with ``google.adk.evaluation.eval_set`` (ADK 2.13)."""

from __future__ import annotations

import pydantic

from otel_eval.model.eval_case import EvalCase, RepeatedRubricId, repeated_rubric_ids_error


class EvalSet(pydantic.BaseModel):
    """A set of eval cases. Top-level keys are snake_case only, as in ADK."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0

    @pydantic.model_validator(mode="after")
    def _rubric_ids_unique(self) -> EvalSet:
        # Stricter than ADK 2.13, which loads such a set and fails when it evaluates the case.
        found = [
            RepeatedRubricId(
                ("eval_cases", index, *repeated.location),
                repeated.rubric_id,
                f"{repeated.problem} (case {case.eval_id!r})",
            )
            for index, case in enumerate(self.eval_cases)
            for repeated in case.repeated_rubric_ids()
        ]
        if found:
            raise repeated_rubric_ids_error(type(self).__name__, found)
        return self
