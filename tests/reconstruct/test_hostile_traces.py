"""Hostile traces: parent cycles, self-parents, duplicate span ids, lost parents, deep chains, wide fan-outs, huge and
ill-typed attributes, through every reader (OTLP JSON, OTLP protobuf, Jaeger JSON, span dicts, live ReadableSpans) and
every convention. Reconstruction must finish (linear time: the full-size shapes run here under a generous time bound),
say what it repaired (a warning naming the span), never fail a convention, and still rebuild the intact invocation that
shares the input. Shapes and encoders: ``tests/data/hostile/shapes.py``; committed corpus: ``generate.py``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval.model import content_text
from otel_eval.reconstruct import TraceInvocations, rebuild_traces
from otel_eval.traces import Span, read_trace_bytes, read_trace_file, spans_from_readable
from tests.data.hostile import shapes
from tests.data.hostile.generate import CORPUS_SIZES, HERE, LARGE_SIZES, corpus_name, render
from tests.data.hostile.shapes import CONVENTIONS, GOOD_TRACE, HOSTILE_TRACE, KINDS, SHAPES, RawSpan

REPAIR = re.compile(r"span [0-9a-f]{16}: (is its own parent|parent links form a cycle|span id used more than once)")
REPAIRED_SHAPES = {"self_parent", "two_cycle", "cycle", "duplicates"}


def _read_bytes(data: bytes) -> list[Span]:
    return read_trace_bytes(data, source="hostile").spans


READERS: dict[str, Callable[[list[RawSpan]], list[Span]]] = {
    "otlp_json": lambda raw: _read_bytes(json.dumps(shapes.otlp_json(raw)).encode()),
    "otlp_proto": lambda raw: _read_bytes(shapes.otlp_proto(raw)),
    "jaeger_json": lambda raw: _read_bytes(json.dumps(shapes.jaeger_json(raw)).encode()),
    "span_dicts": lambda raw: _read_bytes(json.dumps(shapes.span_dicts(raw)).encode()),
    "readable": lambda raw: spans_from_readable(shapes.readable_spans(raw)),
}


def by_trace(traces: list[TraceInvocations]) -> dict[str, TraceInvocations]:
    return {t.trace_id: t for t in traces}


def assert_good_invocation_rebuilt(traces: list[TraceInvocations], convention: str) -> None:
    good = by_trace(traces)[GOOD_TRACE]
    assert good.convention == convention, good.warnings
    [traced] = good.invocations
    data = traced.invocation.intermediate_data
    assert data is not None and hasattr(data, "tool_uses")
    assert content_text(traced.invocation.user_content) == shapes.USER_TEXT
    assert content_text(traced.invocation.final_response) == shapes.FINAL_TEXT
    assert [(c.name, c.args) for c in data.tool_uses] == [("get_weather", {"city": "Paris"})]
    assert [r.response for r in data.tool_responses] == [{"sky": "sunny"}]


def assert_no_convention_failed(traces: list[TraceInvocations]) -> None:
    for trace in traces:
        assert not [w for w in trace.warnings if "reconstruction failed" in w], trace.warnings


# --- the committed corpus -------------------------------------------------------------------------------------------

CORPUS = [(shape, convention) for shape in SHAPES for convention in CONVENTIONS]


@pytest.mark.parametrize(("shape", "convention"), CORPUS)
def test_corpus_file_is_what_the_generator_writes(shape: str, convention: str) -> None:
    path = HERE / corpus_name(shape, convention)
    assert path.read_text() == render(shape, convention, CORPUS_SIZES[shape]), f"regenerate: {path}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("shape", "convention"), CORPUS)
def test_corpus_file_is_rebuilt_with_its_repairs_named(shape: str, convention: str) -> None:
    traces = rebuild_traces(read_trace_file(HERE / corpus_name(shape, convention)).spans)

    assert_good_invocation_rebuilt(traces, convention)
    assert_no_convention_failed(traces)
    hostile = by_trace(traces)[HOSTILE_TRACE]
    if shape in REPAIRED_SHAPES:
        assert any(REPAIR.match(w) for w in hostile.warnings), hostile.warnings


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("shape", ["self_parent", "two_cycle", "duplicates"])
def test_the_damaged_invocation_itself_is_still_rebuilt(shape: str, convention: str) -> None:
    """Cycles and duplicates are cut where they close: the intact invocation they damaged is still there."""
    traces = rebuild_traces(read_trace_file(HERE / corpus_name(shape, convention)).spans)
    hostile = by_trace(traces)[HOSTILE_TRACE]
    assert hostile.convention == convention
    assert hostile.invocations, hostile.warnings
    names = [c.name for inv in hostile.invocations for c in inv.invocation.intermediate_data.tool_uses]  # type: ignore[union-attr]
    assert "get_weather" in names


# --- every reader ---------------------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("convention", CONVENTIONS)
def test_every_reader_gives_every_shape_to_reconstruction(reader: str, convention: str) -> None:
    for shape, size in CORPUS_SIZES.items():
        raw = shapes.hostile_document(convention, shape, size)
        spans = READERS[reader](raw)
        assert len(spans) == len(raw), (shape, reader)  # readers keep duplicates and cycles: the tree repairs them
        traces = rebuild_traces(spans)
        assert_good_invocation_rebuilt(traces, convention)
        assert_no_convention_failed(traces)


# --- full size ------------------------------------------------------------------------------------------------------


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


# --- generated shapes -----------------------------------------------------------------------------------------------

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)  # an OTLP intValue: wider ones cannot be encoded
_GARBAGE = st.one_of(
    _INT64,
    st.floats(allow_nan=False),
    st.booleans(),
    st.text(max_size=20),
    st.sampled_from(["{not json", "[1,", "null", "{}", "[]", '{"role": 7}', '[{"parts": "x"}]']),
    st.lists(st.one_of(_INT64, st.text(max_size=5)), max_size=4),
    st.dictionaries(st.text(max_size=5), _INT64, max_size=3),
)


@st.composite
def hostile_spans(draw: st.DrawFn) -> tuple[str, list[RawSpan]]:
    """A convention and a tree of its span kinds with any parent links: none, a span of the tree (itself, a later
    one: cycles), a missing one; some ids reused; attributes replaced by values of the wrong type."""
    convention = draw(st.sampled_from(CONVENTIONS))
    count = draw(st.integers(min_value=1, max_value=40))
    spans: list[RawSpan] = []
    for position in range(count):
        kind = draw(st.sampled_from((*KINDS, "root")))
        if kind == "root":
            name, attributes, _ = shapes.VOCABULARIES[convention].root()
        else:
            name, attributes = shapes.node(convention, kind, position)
        attributes = dict(attributes)
        for key in list(attributes):
            if draw(st.integers(0, 9)) == 0:
                attributes[key] = draw(_GARBAGE)
        reuse = draw(st.integers(0, 9)) == 0 and position > 0
        own = shapes.span_id(draw(st.integers(0, position - 1)) if reuse else position, 0xF)
        link = draw(st.sampled_from(("none", "tree", "tree", "tree", "missing")))
        parent = {
            "none": None,
            "tree": shapes.span_id(draw(st.integers(0, count - 1)), 0xF),
            "missing": shapes.span_id(position, 0xDEAD),
        }[link]
        start = draw(st.integers(0, 10_000))
        end = start + draw(st.integers(0, 10_000))
        spans.append(RawSpan(own, parent, name, start, end, attributes, error=draw(st.booleans())))
    return convention, spans


def _has_cycle(parents: dict[str, str]) -> bool:
    state: dict[str, int] = {}
    for start in parents:
        path = []
        node: str | None = start
        while node is not None and node not in state:
            state[node] = 1
            path.append(node)
            node = parents.get(node)
        if node is not None and state[node] == 1:
            return True
        for visited in path:
            state[visited] = 2
    return False


@settings(max_examples=100, deadline=timedelta(seconds=10), suppress_health_check=[HealthCheck.too_slow])
@given(generated=hostile_spans(), reader=st.sampled_from(sorted(READERS)))
@pytest.mark.timeout(600)
def test_generated_hostile_shapes(generated: tuple[str, list[RawSpan]], reader: str) -> None:
    convention, raw = generated
    spans = READERS[reader]([*shapes.good_invocation(convention), *raw])
    traces = rebuild_traces(spans)

    assert_good_invocation_rebuilt(traces, convention)
    assert_no_convention_failed(traces)
    hostile = by_trace(traces)[HOSTILE_TRACE]
    if hostile.convention == "unknown":
        assert hostile.warnings  # says no convention recognised its spans
        return
    ids = Counter(s.span_id for s in raw)
    if any(count > 1 for count in ids.values()):
        assert any("span id used more than once" in w for w in hostile.warnings), hostile.warnings
        return
    if any(s.parent == s.span_id for s in raw):
        assert any("is its own parent" in w for w in hostile.warnings), hostile.warnings
    links = {s.span_id: s.parent for s in raw if s.parent in ids and s.parent != s.span_id}
    if _has_cycle(links):  # type: ignore[arg-type]
        assert any("parent links form a cycle" in w for w in hostile.warnings), hostile.warnings
