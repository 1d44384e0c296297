"""Tool results ADK recorded only in the model's history (content captured as events, ``EVENT_ONLY``).

With ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`` ADK's v2 ``execute_tool`` spans carry no
arguments or result; the content is on the ``gen_ai.client.inference.operation.details`` log record of each model
call. A tool's result then appears in the input messages of the next model call: the model's function calls,
followed by the function responses. :func:`fill_from_history` takes the response of each tool run that recorded
none from there (by id within that history, else by position). A tool result no later model call saw (the turn
ended on it, or the next agent's history shows it only as text) is not recorded anywhere and stays unknown, except
for ADK's built-in tools that always return None (``transfer_to_agent``, ``exit_loop``: ``{"result": None}``).
An ``AgentTool`` with ``skip_summarization`` is such a case: its result is not rebuilt under ``EVENT_ONLY``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

from otel_eval.model import genai as genai_types
from otel_eval.reconstruct._adk_spans import ModelCall, ToolRun

_RETURNS_NONE = frozenset(("transfer_to_agent", "exit_loop"))
"""ADK's built-in tools whose function response is always ``{"result": None}``."""


def fill_from_history(
    function_calls: Sequence[genai_types.FunctionCall],
    runs: Sequence[ToolRun | None],
    calls: Sequence[ModelCall],
    after: int,
) -> None:
    """Sets the response of each run without one (paired with ``function_calls`` by position) from the first of the
    model calls after ``calls[after]`` whose request repeats these function calls (same names and arguments, in
    order). The later calls are not copied: a call per model call must not make the replay quadratic."""
    if not any(run is not None and run.response is None for run in runs):
        return
    responses = _recorded_responses(function_calls, itertools.islice(calls, after + 1, None))
    for run, response in zip(runs, responses, strict=False):
        if run is not None and run.response is None:
            if response is None and run.name in _RETURNS_NONE and not run.failed:
                response = {"result": None}
            run.response = response


def _recorded_responses(
    function_calls: Sequence[genai_types.FunctionCall], later: Iterable[ModelCall]
) -> list[dict[str, Any] | None]:
    wanted = [_call_key(call) for call in function_calls]
    for call in later:
        contents = iter(call.request or ())
        for content in contents:
            repeated = [part.function_call for part in content.parts or [] if part.function_call]
            if not repeated or [_call_key(c) for c in repeated] != wanted:
                continue
            by_id: dict[str, dict[str, Any]] = {}
            in_order: list[dict[str, Any] | None] = []
            for follower in contents:  # the contents after the calls, read on from where they were found
                answers = [part.function_response for part in follower.parts or [] if part.function_response]
                if not answers:
                    break
                for answer in answers:
                    if answer.id:
                        by_id.setdefault(answer.id, answer.response or {})
                    in_order.append(answer.response)
            return [
                by_id[c.id] if c.id and c.id in by_id else (in_order[i] if i < len(in_order) else None)
                for i, c in enumerate(repeated)
            ]
    return [None] * len(function_calls)


def _call_key(call: genai_types.FunctionCall) -> tuple[str | None, str]:
    try:
        args = json.dumps(call.args or {}, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        args = repr(call.args)
    return call.name, args
