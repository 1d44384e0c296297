"""The GenAI convention's span kinds: :class:`SpanKinds` (the rebuild's one pass, its rules inlined for speed) says of
every recorded span what :func:`is_agent`, :func:`is_model_call` and :func:`is_tool` say of it one by one. Over the
span tree's spans, as the rebuild reads them: a span id used twice (a hostile trace) is kept once there."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_eval.reconstruct._genai_kinds import SpanKinds, is_agent, is_model_call, is_tool
from otel_eval.reconstruct._span_tree import SpanTree
from tests.reconstruct.recorded import RECORDED_TRACE_FILES, demo_spans, file_spans

TRACE_FILES = RECORDED_TRACE_FILES


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_the_one_pass_kinds_equal_the_rules_span_by_span(path: Path) -> None:
    spans = SpanTree(file_spans(path)).spans
    kinds = SpanKinds(spans)
    for span in spans:
        said = (kinds.is_agent(span), kinds.is_model_call(span), kinds.is_tool(span))
        assert said == (is_agent(span), is_model_call(span), is_tool(span)), (path.name, span.name)
    if path.parent.name == "agent_framework" and path.name.startswith("workflow"):
        assert [s.name for s in spans if kinds.is_agent(s) and s.name.startswith("workflow")] == ["workflow.run"]


def test_the_demo_agents_kinds_equal_the_rules() -> None:
    for key, spans in demo_spans():
        kinds = SpanKinds(spans)
        assert [kinds.is_agent(s) for s in spans] == [is_agent(s) for s in spans], key
        assert any(kinds.is_agent(s) for s in spans), key
