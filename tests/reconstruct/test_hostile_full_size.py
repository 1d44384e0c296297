"""Hostile traces at full size (``tests/reconstruct/test_hostile_traces.py`` has the committed corpus and the
generated shapes): 100,000 spans in one chain, side by side or in a parent cycle, and attributes of tens of megabytes,
through every convention and reader, finish under a generous time bound and still rebuild the intact invocation. A
file of their own, so that ``make test``'s workers run them beside the rest of the hostile-trace tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.data.hostile import shapes
from tests.data.hostile.generate import LARGE_SIZES
from tests.data.hostile.shapes import CONVENTIONS, HOSTILE_TRACE
from tests.reconstruct.hostile_readers import (
    READERS,
    assert_good_invocation_rebuilt,
    assert_no_convention_failed,
    by_trace,
)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("shape", ["deep_chain", "wide_fanout"])
def test_full_size_shapes_finish(shape: str, convention: str) -> None:
    """100,000 spans in one chain or side by side: no recursion limit, no quadratic walk (a quadratic walk over
    100,000 spans takes hours; the time ratio against 10,000 spans is in ``benchmarks/bench_hostile.py``)."""
    raw = shapes.hostile_document(convention, shape, LARGE_SIZES[shape])
    traces = rebuild_traces(shapes.internal_spans(raw))
    assert_good_invocation_rebuilt(traces, convention)
    assert_no_convention_failed(traces)


@pytest.mark.timeout(180)
def test_a_100k_parent_cycle_finishes_and_is_cut_once() -> None:
    """The shape that used to spin forever (ADK's model timing walked parent links without a visited set)."""
    raw = shapes.hostile_document("adk", "cycle", LARGE_SIZES["cycle"])
    traces = rebuild_traces(shapes.internal_spans(raw))
    assert_good_invocation_rebuilt(traces, "adk")
    hostile = by_trace(traces)[HOSTILE_TRACE]
    assert [w for w in hostile.warnings if "cycle" in w] == [
        f"span {shapes.span_id(0)}: parent links form a cycle; treated as a root"
    ]


@pytest.mark.timeout(180)
def test_a_100k_deep_chain_reads_from_a_file(tmp_path: Path) -> None:
    raw = shapes.hostile_document("adk", "deep_chain", LARGE_SIZES["deep_chain"])
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(shapes.otlp_json(raw)))
    spans = read_trace_file(path).spans
    assert len(spans) == len(raw)
    assert_good_invocation_rebuilt(rebuild_traces(spans), "adk")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_attributes_of_tens_of_megabytes(reader: str) -> None:
    raw = shapes.hostile_document("genai", "huge_attributes", LARGE_SIZES["huge_attributes"])
    traces = rebuild_traces(READERS[reader](raw))
    assert_good_invocation_rebuilt(traces, "genai")
    hostile = by_trace(traces)[HOSTILE_TRACE]
    [traced] = hostile.invocations
    responses = traced.invocation.intermediate_data.tool_responses  # type: ignore[union-attr]
    assert len(responses[0].response["text"]) == LARGE_SIZES["huge_attributes"]  # kept whole, never truncated
    assert all(len(w) < 2000 for w in hostile.warnings)  # ... and never copied into a warning
