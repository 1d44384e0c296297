"""Eval sets, wire-compatible with ``google.adk.evaluation.eval_set`` (ADK 2.13)."""

from __future__ import annotations

import difflib

import pydantic
from pydantic.alias_generators import to_camel

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

    def case_warnings(self) -> list[str]:
        """What ADK 2.13 loads without a word but was probably not meant, one line per finding with its JSON path: a
        case key close to an eval case's field (ADK keeps it as an extra and ignores it), and an ``eval_id`` that an
        earlier case has (``adk eval`` and ``AgentEvaluator`` refuse to add it)."""
        fields = [*EvalCase.model_fields, *(to_camel(name) for name in EvalCase.model_fields)]
        warnings = []
        first: dict[str, int] = {}
        for index, case in enumerate(self.eval_cases):
            if case.eval_id in first:
                warnings.append(
                    f"eval_cases[{index}].eval_id: {case.eval_id!r} repeats eval_cases[{first[case.eval_id]}] (adk eval "
                    "and AgentEvaluator refuse such an eval set; results would name both cases alike)"
                )
            first.setdefault(case.eval_id, index)
            for key in case.model_extra or {}:
                close = difflib.get_close_matches(key, fields, n=1, cutoff=0.8)
                if close:
                    warnings.append(
                        f"eval_cases[{index}].{key}: not a field of an eval case (did you mean {close[0]!r}?); "
                        "ADK ignores it"
                    )
        return warnings
