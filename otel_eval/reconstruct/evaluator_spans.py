"""otel-eval's own spans (scope ``otel_eval``: ``evaluate {metric}``, the judge's ``judge {metric}`` and
``generate_content`` spans) and everything under them are never rebuilt as the agent's: trace files and Collector
topics that hold the scores' spans, or whole judge traces (``OTEL_EVAL_JUDGE_OWN_TRACE``), rebuild as the agent's
invocations alone."""

from __future__ import annotations

from collections.abc import Sequence

from otel_eval import semconv
from otel_eval.traces.span import Span


def without_evaluator_spans(spans: Sequence[Span]) -> list[Span]:
    """``spans`` minus otel-eval's own (scope ``otel_eval``) and their descendants among ``spans``.

    Linear in the number of spans and safe with cycles in parent links: each span is visited once from its parent.
    """
    own = [s.span_id for s in spans if s.scope_name == semconv.INSTRUMENTATION_SCOPE]
    if not own:
        return list(spans)
    children: dict[str, list[str]] = {}
    for span in spans:
        if span.parent_span_id:
            children.setdefault(span.parent_span_id, []).append(span.span_id)
    dropped = set(own)
    stack = list(own)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in dropped:
                dropped.add(child)
                stack.append(child)
    return [s for s in spans if s.span_id not in dropped]
