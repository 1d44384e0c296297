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


_ENVIRON_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None
"""The dict behind ``os.environ`` on POSIX (bytes keys and values, what ``os.environ`` encodes and decodes), or None."""
_FEEDBACK_KEY = os.fsencode(env.OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE)


def feedback_attribute() -> str:
    """The name of the root-span attribute holding the user's feedback."""
    if type(_ENVIRON_DATA) is dict:
        # os.environ.get of an unset variable raises and catches a KeyError in Python: read once per rebuild, that
        # is more than the rest of the feedback's cost. The same value, decoded as os.environ decodes it.
        raw = _ENVIRON_DATA.get(_FEEDBACK_KEY)
        value = os.fsdecode(raw) if raw is not None else ""
    else:
        value = os.environ.get(env.OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE, "")
    return value.strip() or DEFAULT_FEEDBACK_ATTRIBUTE


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
