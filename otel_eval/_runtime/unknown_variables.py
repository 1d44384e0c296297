"""``OTEL_EVAL_*`` variables of the environment that otel-eval does not read: a misspelt name
(``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVER``, ``OTEL_EVAL_TENANT_HEADERS``) is otherwise ignored without a word, and the
setting meant keeps its default (another broker, no tenancy). Said at start-up, one WARNING each, with close names."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping

from otel_eval import environment_variables as env

logger = logging.getLogger("otel_eval.environment")

TEST_PREFIX = env.ENV_PREFIX + "TEST_"
"""The project's test suite's own variables (``OTEL_EVAL_TEST_PYTHON``, ...): not otel-eval settings, not warned of."""


def known_variables() -> frozenset[str]:
    """Every ``OTEL_EVAL_*`` variable otel-eval reads: the constants of :mod:`otel_eval.environment_variables`."""
    return frozenset(
        value
        for name, value in vars(env).items()
        if name.startswith(env.ENV_PREFIX) and isinstance(value, str) and value == name
    )


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """The ``OTEL_EVAL_*`` names of ``environ`` otel-eval does not read, each with the known names close to it."""
    known = known_variables()
    unknown = sorted(
        name
        for name in environ
        if name.startswith(env.ENV_PREFIX) and name not in known and not name.startswith(TEST_PREFIX)
    )
    prefix = len(env.ENV_PREFIX)  # compared without it: every name shares it
    suffixes = {name[prefix:]: name for name in known}
    return [
        (name, [suffixes[close] for close in difflib.get_close_matches(name[prefix:], suffixes, n=3, cutoff=0.8)])
        for name in unknown
    ]


def unknown_variable_lines(environ: Mapping[str, str]) -> dict[str, str]:
    """Each ``OTEL_EVAL_*`` name of ``environ`` otel-eval does not read, with the line that says so."""
    lines = {}
    for name, close in unknown_variables(environ):
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        lines[name] = f"{name} is not an otel-eval setting{hint}: ignored"
    return lines


_warned: set[str] = set()


def warn_unknown_variables(environ: Mapping[str, str]) -> None:
    """Logs one WARNING per ``OTEL_EVAL_*`` variable of ``environ`` otel-eval does not read (once per process)."""
    for name, line in unknown_variable_lines(environ).items():
        if name not in _warned:
            _warned.add(name)
            logger.warning("%s", line)
