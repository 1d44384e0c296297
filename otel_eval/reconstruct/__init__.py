"""Spans -> ADK invocations. One module per trace convention, chosen per trace by what its spans carry.

**Hostile input bound.** Spans are untrusted. Every convention reads a trace through one
:class:`~otel_eval.reconstruct._span_tree.SpanTree`, which drops duplicate span ids (keeping the first by start time),
cuts parent cycles of any length where they close (a self-parent included) and treats spans with a missing parent as
roots, each repair reported as a warning naming the span; the rest of the trace is still rebuilt. Every walk over the
tree is iterative and answered in one pass (no per-span ancestor walks), tool runs are matched to function calls
through per-key queues, and time-containment fallbacks are one sweep: rebuilding a trace of n spans takes
O(n log n) time (the log from sorting) and O(n) memory beyond its attributes, whatever its shape -- a chain 100,000
deep, 100,000 siblings, cycles, attributes of tens of MB (``benchmarks/bench_hostile.py``,
``tests/reconstruct/test_hostile_traces.py``).
"""

from __future__ import annotations

import logging
import operator
from collections import defaultdict
from collections.abc import Iterable, Sequence

from otel_eval._runtime.exception_text import exception_outline
from otel_eval.reconstruct._ancestor_sessions import inherit_sessions
from otel_eval.reconstruct.adk import AdkConvention
from otel_eval.reconstruct.adk_v2 import AdkV2Convention
from otel_eval.reconstruct.base import Convention, TraceInvocations
from otel_eval.reconstruct.capture_hints import hint_content_capture
from otel_eval.reconstruct.evaluator_spans import without_evaluator_spans
from otel_eval.reconstruct.genai import GenAIConvention
from otel_eval.reconstruct.openinference import OpenInferenceConvention
from otel_eval.reconstruct.openllmetry import OpenLLMetryConvention
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span

logger = logging.getLogger(__name__)

UNKNOWN_CONVENTION = "unknown"
_TIME_ORDER = operator.attrgetter("start_time_ns", "end_time_ns", "span_id")


def conventions() -> list[Convention]:
    """The conventions in detection order: the most specific first."""
    found: list[Convention] = []
    # Each convention module adds exactly one line below, in detection order.
    found.append(AdkConvention())
    found.append(AdkV2Convention())
    found.append(GenAIConvention())
    found.append(OpenInferenceConvention())
    found.append(OpenLLMetryConvention())
    return found


_DEFAULT_CONVENTIONS = tuple(conventions())
"""What :func:`rebuild_trace` tries when it is given none (conventions hold no state: made once)."""


def group_by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans grouped by trace id, each group sorted by start time (ties: end time, then span id)."""
    traces = _grouped(spans)
    for trace_spans in traces.values():
        trace_spans.sort(key=_TIME_ORDER)
    return traces


def _grouped(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans grouped by trace id, in the order given."""
    traces: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return dict(traces)


def rebuild_trace(
    spans: Sequence[Span], available: Sequence[Convention] | None = None, *, reads: Reads = Reads.ALL
) -> TraceInvocations:
    """Invocations of one trace, by the first convention that recognises its spans, with (at least) the parts
    ``reads`` asks for (:mod:`otel_eval.reconstruct.reads`; the full rebuild by default). Never raises."""
    trace_id = spans[0].trace_id if spans else ""
    for convention in _DEFAULT_CONVENTIONS if available is None else available:
        try:
            if not convention.detect(spans):
                continue
            rebuilt = inherit_sessions(spans, convention.rebuild(spans, reads))
        except Exception as exc:  # one broken trace must not stop the others (logged with its place)
            # The exception's message may quote span content: the type and place only, the whole at DEBUG.
            problem = f"trace {trace_id}: {convention.name} reconstruction failed: {exception_outline(exc)}"
            logger.warning("%s", problem)
            logger.debug("trace %s: %s reconstruction failed", trace_id, convention.name, exc_info=True)
            return TraceInvocations(trace_id=trace_id, convention=convention.name, warnings=[problem])
        hint_content_capture(rebuilt, spans)
        return rebuilt
    return TraceInvocations(
        trace_id=trace_id,
        convention=UNKNOWN_CONVENTION,
        warnings=[f"trace {trace_id}: no known agent convention (ADK, GenAI, OpenInference, OpenLLMetry) in its spans"],
    )


def rebuild_traces(spans: Iterable[Span], *, reads: Reads = Reads.ALL) -> list[TraceInvocations]:
    """Invocations of every trace in ``spans``, traces in start-time order, with (at least) the parts ``reads`` asks
    for; otel-eval's own spans and their descendants are left out (:func:`without_evaluator_spans`), and a trace of
    nothing else is no trace."""
    # Not sorted here: each convention reads a trace through its SpanTree, which puts the spans in order (detection
    # asks whether some span shows a sign, in any order).
    groups = (without_evaluator_spans(trace_spans) for trace_spans in _grouped(spans).values())
    results = [rebuild_trace(trace_spans, reads=reads) for trace_spans in groups if trace_spans]
    if len(results) > 1:
        results.sort(key=lambda t: (t.start_time_ns, t.trace_id))
    return results


__all__ = [
    "Convention",
    "Reads",
    "TraceInvocations",
    "conventions",
    "group_by_trace",
    "rebuild_trace",
    "rebuild_traces",
    "without_evaluator_spans",
]
