"""``OTEL_EVAL_*`` variables set in an environment that otel-eval does not read.

A misspelled variable is otherwise a silent default: ``OTEL_EVAL_JUDGE_BUGDET=1`` leaves the judge without a
budget, ``OTEL_EVAL_SAMPLE_RAT=0.01`` evaluates every trace, ``OTEL_EVAL_CONSLE=true`` prints nothing. What reads the
environment (:meth:`~otel_eval.EvaluationSpanProcessor.from_env`) says each one, with the closest known names.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Final

from otel_eval import environment_variables as env

NOT_OURS: Final = ("OTEL_EVAL_TEST_",)
"""Prefixes of ``OTEL_EVAL_*`` names that are not settings of the package (the test suite's own)."""


def known_variables() -> frozenset[str]:
    """Every variable of :mod:`otel_eval.environment_variables` (its ``OTEL_EVAL_*`` constants)."""
    return frozenset(
        value
        for name, value in vars(env).items()
        if name.startswith(env.ENV_PREFIX) and isinstance(value, str) and value.startswith(env.ENV_PREFIX)
    )


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line for each ``OTEL_EVAL_*`` name set in ``environ`` that is no variable of the package (sorted): the
    name, that it is ignored, and the known names closest to it. The value is never shown (it may be a secret)."""
    known = known_variables()
    suffixes = {name.removeprefix(env.ENV_PREFIX): name for name in known}  # the common prefix would make all close
    lines = []
    for name in sorted(environ):
        if not name.startswith(env.ENV_PREFIX) or name in known or name.startswith(NOT_OURS):
            continue
        close = [suffixes[s] for s in difflib.get_close_matches(name.removeprefix(env.ENV_PREFIX), suffixes, n=2)]
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        lines.append(f"{name} is set but is not an otel-eval variable: it is ignored{hint}")
    return lines
