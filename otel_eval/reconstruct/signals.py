"""What an invocation's root span says about how it went: an error status, and the user's feedback.

The judge budget judges such invocations first (see :mod:`otel_eval.judge.priority`). The feedback attribute's name
is ``OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE`` (default :data:`DEFAULT_FEEDBACK_ATTRIBUTE`), read at each rebuild.
"""

from __future__ import annotations

import os

from otel_eval import environment_variables as env
from otel_eval.traces.span import Span

DEFAULT_FEEDBACK_ATTRIBUTE = "user.feedback"
"""The root-span attribute read as the user's feedback when ``OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE`` is unset."""
_MAX_FEEDBACK_CHARS = 200


def feedback_attribute() -> str:
    """The name of the root-span attribute holding the user's feedback."""
    return os.environ.get(env.OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE, "").strip() or DEFAULT_FEEDBACK_ATTRIBUTE


def ended_in_error(root: Span) -> bool:
    """Whether the invocation's root span has status ERROR."""
    return root.status_code == "ERROR"


def feedback(root: Span) -> str | None:
    """The root span's feedback attribute as text (bounded), or None when it has none."""
    return feedback_text(root.attributes.get(feedback_attribute()))


def feedback_text(value: object) -> str | None:
    """A feedback attribute's value as text (bounded); None for a missing or a sequence value."""
    if value is None or isinstance(value, (list, tuple)):
        return None
    return str(value)[:_MAX_FEEDBACK_CHARS]
