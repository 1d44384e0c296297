"""Hostile traces: parent cycles, self-parents, duplicate span ids, lost parents, deep chains, wide fan-outs, huge and
ill-typed attributes, through every reader (OTLP JSON, OTLP protobuf, Jaeger JSON, span dicts, live ReadableSpans) and
every convention. Reconstruction must finish (linear time: the full-size shapes run under a generous time bound in
``test_hostile_full_size.py``), say what it repaired (a warning naming the span), never fail a convention, and still
rebuild the intact invocation that shares the input. Shapes and encoders: ``tests/data/hostile/shapes.py``; committed
corpus: ``generate.py``; readers and shared checks: ``hostile_readers.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.data.hostile import shapes
from tests.data.hostile.generate import CORPUS_SIZES, HERE, corpus_name, render
from tests.data.hostile.shapes import CONVENTIONS, HOSTILE_TRACE, KINDS, SHAPES, RawSpan
from tests.reconstruct.hostile_readers import (
    READERS,
    assert_good_invocation_rebuilt,
    assert_no_convention_failed,
    by_trace,
)

REPAIR = re.compile(r"span [0-9a-f]{16}: (is its own parent|parent links form a cycle|span id used more than once)")
REPAIRED_SHAPES = {"self_parent", "two_cycle", "cycle", "duplicates"}


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
