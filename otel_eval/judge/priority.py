"""Which invocations the judge budget judges first: those that ended in error, failed a deterministic metric, or
carry negative user feedback.

The evaluation core scores the deterministic metrics of a conversation first, then marks its priority invocations
(:func:`priority_invocations`) and runs the judged metrics inside :func:`prioritising`; a judged metric asks
:func:`is_priority` per invocation when it asks the budget for admission. A priority invocation may spend the whole
bucket; a normal one stops at the reserve (see :mod:`otel_eval.judge.budget`).

Negative feedback: the root span's feedback attribute (``OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE``, default
``user.feedback``) equal, case-insensitively, to one of ``OTEL_EVAL_PRIORITY_FEEDBACK_VALUES`` (comma-separated,
default :data:`DEFAULT_NEGATIVE_FEEDBACK`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from otel_eval import environment_variables as env
from otel_eval.model import EvalStatus, EvaluationResult, TracedInvocation

DEFAULT_NEGATIVE_FEEDBACK: tuple[str, ...] = ("negative", "thumbs_down", "dislike", "-1")
"""Feedback values that mark an invocation for priority when ``OTEL_EVAL_PRIORITY_FEEDBACK_VALUES`` is unset."""

_PRIORITY: ContextVar[frozenset[tuple[str, str]]] = ContextVar("otel_eval_judge_priority", default=frozenset())


@dataclass(frozen=True, slots=True)
class PriorityPolicy:
    """The feedback values that count as negative (lower case)."""

    negative_feedback: frozenset[str] = frozenset(DEFAULT_NEGATIVE_FEEDBACK)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PriorityPolicy:
        """The policy from ``OTEL_EVAL_PRIORITY_FEEDBACK_VALUES`` (defaults when unset or blank)."""
        environ = os.environ if environ is None else environ
        raw = environ.get(env.OTEL_EVAL_PRIORITY_FEEDBACK_VALUES, "")
        values = frozenset(v.strip().lower() for v in raw.split(",") if v.strip())
        return cls(values) if values else cls()

    def is_priority(self, traced: TracedInvocation, *, failed_deterministic: bool) -> bool:
        """Whether ``traced`` is judged first."""
        if failed_deterministic or traced.ended_in_error:
            return True
        return traced.feedback is not None and traced.feedback.strip().lower() in self.negative_feedback


def invocation_key(traced: TracedInvocation) -> tuple[str, str]:
    """How an invocation is recognised across copies: its trace id and root span id."""
    return traced.trace_id, traced.span_id


@contextmanager
def prioritising(keys: Iterable[tuple[str, str]]) -> Iterator[None]:
    """Marks the invocations with ``keys`` (see :func:`invocation_key`) as priority for the block's judge calls."""
    token = _PRIORITY.set(frozenset(keys))
    try:
        yield
    finally:
        _PRIORITY.reset(token)


def is_priority(traced: TracedInvocation) -> bool:
    """Whether the running evaluation marked ``traced`` as priority (see :func:`prioritising`)."""
    return invocation_key(traced) in _PRIORITY.get()


def priority_invocations(
    invocations: Sequence[TracedInvocation],
    deterministic: Iterable[EvaluationResult],
    policy: PriorityPolicy | None = None,
) -> set[tuple[str, str]]:
    """The keys of ``invocations`` judged first, given their deterministic metrics' results (a result without
    per-invocation entries that FAILED marks all of them); ``policy`` defaults to the environment's."""
    policy = policy or PriorityPolicy.from_env()
    failed = [False] * len(invocations)
    for result in deterministic:
        per = result.per_invocation_results
        if not per and result.overall_eval_status is EvalStatus.FAILED:
            failed = [True] * len(invocations)
        for index, entry in enumerate(per[: len(invocations)]):
            failed[index] = failed[index] or entry.eval_status is EvalStatus.FAILED
    return {
        invocation_key(traced)
        for traced, failed_one in zip(invocations, failed, strict=True)
        if policy.is_priority(traced, failed_deterministic=failed_one)
    }
