"""What an exception was and where it was raised, without its message: the message of one raised over span content or
a judge's reply may quote the user's text (a pydantic ``ValidationError`` shows the ``input_value``, ``int()`` the
string it could not read), and a log line must not carry that. The full text goes to DEBUG only."""

from __future__ import annotations

import re
import traceback

import pydantic_core

_PACKAGE_DIR = "otel_eval"
_INPUT_VALUE = re.compile(r"input_value=.*, input_type=")
"""pydantic's ``[type=..., input_value=<repr>, input_type=...]``, one line each (a repr escapes newlines); greedy, so a
repr that itself holds ``, input_type=`` is left out whole."""
_OWN_WORDS = frozenset({"value_error", "assertion_error"})
"""Error types whose message is a validator's own text (which may quote the value), not the schema's."""


def exception_outline(exc: BaseException) -> str:
    """``ValueError at reconstruct/_trajectory.py:120 in _steps``: the exception's type and the innermost frame (and
    the innermost of otel-eval's when that is another), plus a ``ValidationError``'s fields and problems; never its
    message."""
    frames = traceback.extract_tb(exc.__traceback__)
    text = type(exc).__name__
    if frames:
        text += f" at {_where(frames[-1])}"
        ours = next((f for f in reversed(frames) if f"/{_PACKAGE_DIR}/" in f.filename), None)
        if ours is not None and ours is not frames[-1]:
            text += f", from {_where(ours)}"
    if isinstance(exc, pydantic_core.ValidationError):
        text += f" ({validation_outline(exc)})"
    return text


def validation_outline(exc: pydantic_core.ValidationError) -> str:
    """``1 validation error for Model: a.0.b: Input should be a valid list [list_type]``, without the input (a
    validator's own message, which may quote it, left out too)."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = ".".join(str(part) for part in error["loc"]) or "(root)"
        kind = error["type"]
        problems.append(f"{loc}: [{kind}]" if kind in _OWN_WORDS else f"{loc}: {error['msg']} [{kind}]")
    count = exc.error_count()
    return f"{count} validation error{'s' if count != 1 else ''} for {exc.title}: " + "; ".join(problems)


def without_input_values(text: str) -> str:
    """``text`` with every pydantic ``input_value=...`` left out (an exception's text that wraps a ValidationError's)."""
    return _INPUT_VALUE.sub("input_value=<left out>, input_type=", text)


def _where(frame: traceback.FrameSummary) -> str:
    path = frame.filename.replace("\\", "/").rsplit("/", 2)
    return f"{'/'.join(path[-2:])}:{frame.lineno} in {frame.name}"
