"""Legacy ADK requests' histories are validated as they are read: the result is the one reading everything gives.

The reference reads every content of every ``llm_request`` when the request is read (as the rebuild did before the
history became lazy); the lazy rebuild must give the same invocations on every recorded and hostile ADK trace, and
report a malformed history content exactly when the rebuild needs it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from otel_eval import semconv
from otel_eval.model import content_text
from otel_eval.reconstruct import _adk_contents, rebuild_traces
from otel_eval.reconstruct.base import TraceInvocations
from otel_eval.traces import Span, read_trace_file

DATA = Path(__file__).resolve().parents[1] / "data"
ADK_LIVE = DATA / "traces" / "strands-evals" / "adk_live_spans.json"
RECORDED = [*sorted((DATA / "traces" / "agentevals").glob("[hkt]*.json")), ADK_LIVE]
"""The recorded ADK traces: agentevals' helm, k8s and Tempo exports, and strands-evals' live ADK capture."""
ADK_FILES = [*RECORDED, *sorted((DATA / "hostile").glob("*.adk.json"))]


class _EagerHistory(_adk_contents.RequestHistory):
    """Every content validated (and every malformed one reported) as soon as the request is read."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        for _ in self:
            pass


def _rebuilt(spans: Sequence[Span]) -> list[TraceInvocations]:
    return [t for t in rebuild_traces(spans) if t.convention == "adk"]


def _invocations(traces: Sequence[TraceInvocations]) -> list[dict[str, Any]]:
    return [i.model_dump(mode="json", exclude={"warnings"}) for t in traces for i in t.invocations]


def _warnings(traces: Sequence[TraceInvocations]) -> list[str]:
    return [w for t in traces for w in [*t.warnings, *(w for i in t.invocations for w in i.warnings)]]


def _lazy_and_eager(spans: Sequence[Span]) -> tuple[list[TraceInvocations], list[TraceInvocations]]:
    lazy = _rebuilt(spans)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_adk_contents, "RequestHistory", _EagerHistory)
        eager = _rebuilt(spans)
    return lazy, eager


def test_every_recorded_trace_is_legacy_adk() -> None:
    assert all(_rebuilt(read_trace_file(path).spans) for path in RECORDED)


@pytest.mark.parametrize("path", ADK_FILES, ids=lambda p: str(p.relative_to(DATA)))
def test_lazy_history_rebuilds_what_reading_everything_rebuilds(path: Path) -> None:
    lazy, eager = _lazy_and_eager(read_trace_file(path).spans)
    assert _invocations(lazy) == _invocations(eager)
    assert set(_warnings(lazy)) <= set(_warnings(eager))


def _with_request(spans: Sequence[Span], nth: int, change: Any) -> list[Span]:
    """A copy of ``spans`` where the ``nth`` ``call_llm`` request is changed by ``change(request)``."""
    out, seen = [], 0
    for span in sorted(spans, key=lambda s: s.start_time_ns):
        if span.name == "call_llm":
            if seen == nth:
                request = json.loads(span.attributes[semconv.ADK_LLM_REQUEST])
                change(request)
                attributes = {**span.attributes, semconv.ADK_LLM_REQUEST: json.dumps(request)}
                span = dataclasses.replace(span, attributes=attributes)
            seen += 1
        out.append(span)
    return out


def test_a_malformed_content_the_rebuild_does_not_read_changes_nothing() -> None:
    def break_history(request: dict[str, Any]) -> None:
        request["contents"][1] = {"parts": "oops"}  # the model turn repeated in the second request

    spans = _with_request(read_trace_file(ADK_LIVE).spans, 1, break_history)
    lazy, eager = _lazy_and_eager(spans)
    assert _invocations(lazy) == _invocations(eager) == _invocations(_rebuilt(read_trace_file(ADK_LIVE).spans))
    assert not any("not a genai Content" in w for w in _warnings(lazy))
    assert any("contents[1] is not a genai Content" in w for w in _warnings(eager))


def test_a_malformed_user_message_is_reported_as_it_is_read() -> None:
    def break_user_message(request: dict[str, Any]) -> None:
        request["contents"][0] = {"parts": "oops", "role": "user"}

    spans = _with_request(read_trace_file(ADK_LIVE).spans, 0, break_user_message)
    lazy, eager = _lazy_and_eager(spans)
    assert _invocations(lazy) == _invocations(eager)
    [traced] = lazy[0].invocations
    assert traced.invocation.user_content.parts == []  # unknown, not guessed
    assert any("contents[0] is not a genai Content" in w for w in traced.warnings)
    assert any("no user message" in w for w in traced.warnings)
    assert content_text(traced.invocation.final_response) == "15 multiplied by 37 is 555."
