"""Rebuild on demand: for every metric, what it reads of a rebuild asked for its :attr:`~otel_eval.metrics.Evaluator.reads`
equals what the full rebuild gives, and so does its score, on every recorded, framework, hostile and session trace.

One property over every trace the repository holds (``tests/data/traces``, ``tests/data/frameworks``,
``tests/data/hostile``, ``/work/shared/data/traces`` when present, the demo travel agent's scenarios and ADK sessions
recorded from real runners in both telemetry schemas): for each registered metric that reads less than everything,
and for the unions the plans ask for (the 4 efficiency metrics; ADK's default criteria with them), the rebuild asked
for those reads has the same traces, invocations and always-rebuilt facts as the full one, equal values for every part
asked (:func:`~otel_eval.reconstruct.reads.read_of`), and the metric scores both alike (reference metrics against the
full rebuild's own invocations and against them in reverse order, so that both matches and mismatches are scored).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import Any

import pytest

from otel_eval.evaluation.plan import PlannedMetric, build_plan
from otel_eval.evaluation.records import records_of
from otel_eval.metrics import Evaluator, default_registry
from otel_eval.metrics._efficiency import InformationalEvaluator
from otel_eval.model import BaseCriterion, TracedInvocation
from otel_eval.reconstruct import Reads, TraceInvocations, genai, rebuild_traces
from otel_eval.reconstruct.plain import PLAIN_READS, PlainInvocation
from otel_eval.reconstruct.reads import always_read, parts_of, read_of
from otel_eval.traces import Span, spans_from_readable
from tests.reconstruct.adk_agents import adk_telemetry
from tests.reconstruct.adk_sessions import record_sessions
from tests.reconstruct.recorded import ALL_TRACE_FILES, demo_spans, file_spans

TRACE_FILES = ALL_TRACE_FILES
EFFICIENCY = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
DEFAULT_WITH_REFERENCE = ("tool_trajectory_avg_score", "response_match_score", *EFFICIENCY)


@cache
def _session_traces() -> tuple[tuple[str, list[Span]], ...]:
    found = []
    for schema in (1, 2):
        with adk_telemetry(schema=schema):
            recorded = asyncio.run(record_sessions())
        found.append((f"adk-sessions:schema{schema}", spans_from_readable(recorded.spans)))
    return tuple(found)


def _traces() -> Iterator[tuple[str, list[Span]]]:
    for path in TRACE_FILES:
        yield str(path.relative_to(path.parents[2])), file_spans(path)
    yield from ((f"demo:{key}", spans) for key, spans in demo_spans())
    yield from _session_traces()


def _evaluators() -> list[tuple[str, list[Evaluator]]]:
    """Every registered metric that reads less than everything, and the unions the plans ask for."""
    registry = default_registry()
    singles = []
    for name in registry.names():
        if registry.get(name).reads != Reads.ALL:
            criterion = None if registry.info(name).informational else BaseCriterion(threshold=0.5)
            singles.append((name, [registry.create(name, criterion)]))
    efficiency = build_plan(dict.fromkeys(EFFICIENCY)).metrics
    default = build_plan({name: None for name in DEFAULT_WITH_REFERENCE}).metrics
    unions = [
        ("4 efficiency metrics", [m.evaluator for m in efficiency if m.evaluator is not None]),
        ("default criteria", [m.evaluator for m in default if m.evaluator is not None]),
    ]
    return singles + unions


def _union(evaluators: Sequence[Evaluator]) -> Reads:
    found = Reads.NONE
    for evaluator in evaluators:
        found |= evaluator.reads
    return found


def _reads_alike(full: list[TraceInvocations], asked: list[TraceInvocations], reads: Reads) -> None:
    assert [(t.trace_id, t.convention, len(t.invocations)) for t in asked] == [
        (t.trace_id, t.convention, len(t.invocations)) for t in full
    ]
    for full_trace, asked_trace in zip(full, asked, strict=True):
        for whole, partial in zip(full_trace.invocations, asked_trace.invocations, strict=True):
            assert always_read(partial) == always_read(whole)
            for part in parts_of(reads):
                assert read_of(partial, part) == read_of(whole, part), part


def _scores(evaluator: Evaluator, invocations: list[TracedInvocation], full: list[TracedInvocation]) -> list[Any]:
    expectations: list[Any] = [None]
    if evaluator.info.requires_reference:
        expectations = [[t.invocation for t in full], [t.invocation for t in reversed(full)]]
    return [asyncio.run(evaluator.evaluate(invocations, expected)) for expected in expectations]


@pytest.mark.usefixtures("quiet_adk")
def test_every_metric_reads_of_the_rebuild_on_demand_what_the_full_rebuild_gives() -> None:
    evaluators = _evaluators()
    assert {name for name, _ in evaluators} >= {*DEFAULT_WITH_REFERENCE, "4 efficiency metrics", "default criteria"}
    checked = skipped = 0
    for trace_name, spans in _traces():
        full = rebuild_traces(spans)
        for name, metrics in evaluators:
            reads = _union(metrics)
            asked = rebuild_traces(spans, reads=reads)
            where = f"{trace_name}, {name} ({reads})"
            try:
                _reads_alike(full, asked, reads)
                for trace_full, trace_asked in zip(full, asked, strict=True):
                    for evaluator in metrics:
                        assert _scores(evaluator, trace_asked.invocations, trace_full.invocations) == _scores(
                            evaluator, trace_full.invocations, trace_full.invocations
                        ), evaluator.info.name
            except AssertionError as exc:
                raise AssertionError(f"{where}: {exc}") from exc
            checked += sum(len(t.invocations) for t in full)
        skipped += not any(t.invocations for t in full)
    assert checked > 1000  # every metric on every invocation of every trace: the property was exercised
    assert skipped < len(TRACE_FILES) // 2


def test_a_tool_count_rebuild_reads_no_message_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common case skips the expensive parts: asked for the tool calls only, a GenAI rebuild leaves the user
    message, the responses, the texts and the agent details empty, and converts no model call's input history."""
    spans = dict(demo_spans())["two_tools"]

    parse = genai._Reader.parsed_messages
    read: list[str] = []

    def counted(reader: Any, span: Span, key: str) -> Any:
        if not span.name.startswith("execute_tool"):  # a tool span's own messages (Strands) are its call
            read.append(key)
        return parse(reader, span, key)

    monkeypatch.setattr(genai._Reader, "parsed_messages", counted)
    full = rebuild_traces(spans)[0].invocations[0]
    assert "gen_ai.input.messages" in read  # the full rebuild reads the histories
    read.clear()
    asked = rebuild_traces(spans, reads=Reads.TOOL_CALLS)[0].invocations[0]
    assert "gen_ai.output.messages" in read and "gen_ai.input.messages" not in read
    assert asked.convention == "genai"
    assert len(read_of(asked, Reads.TOOL_CALLS)) == 2
    assert read_of(asked, Reads.TOOL_CALLS) == read_of(full, Reads.TOOL_CALLS)
    assert full.invocation.user_content.parts and not asked.invocation.user_content.parts
    assert full.invocation.final_response is not None and asked.invocation.final_response is None
    assert full.invocation.intermediate_data.tool_responses and not asked.invocation.intermediate_data.tool_responses
    assert asked.invocation.app_details is None
    assert asked.model_call_count == 0 and full.model_call_count > 0


def _plain_facts(plain: PlainInvocation, keys: Iterable[str]) -> dict[str, Any]:
    """What a plain view says of the facts every rebuild has (``keys``: :func:`always_read`'s)."""
    values = {**plain.facts, **plain.invocation_values}
    return {key: values[key] for key in keys}


@pytest.mark.usefixtures("quiet_adk")
def test_every_plain_metric_scores_the_plain_views_as_the_full_rebuild() -> None:
    """Plain views (no ADK model made): for every metric whose reads a plain view holds, and the 4 efficiency metrics
    together, the rebuild asked for their reads gives plain views whose facts, scores and records equal the full
    rebuild's, on every trace of a convention that makes them; and no ADK model is made for them."""
    evaluators = [(name, metrics) for name, metrics in _evaluators() if _union(metrics) in PLAIN_READS]
    assert {name for name, _ in evaluators} >= {*EFFICIENCY, "4 efficiency metrics"}
    checked = 0
    for trace_name, spans in _traces():
        full = rebuild_traces(spans)
        for name, metrics in evaluators:
            asked = rebuild_traces(spans, reads=_union(metrics))
            for trace_full, trace_asked in zip(full, asked, strict=True):
                plain = trace_asked.plain
                if plain is None:  # the ADK conventions replay events into models; a trace of no convention has none
                    assert trace_asked.convention.startswith("adk") or not trace_asked.invocations, trace_name
                    continue
                views = [PlainInvocation(dict(p.facts), dict(p.invocation_values), p.data) for p in plain]
                where = f"{trace_name}, {name}"
                facts = [always_read(t) for t in trace_full.invocations]
                assert [_plain_facts(v, f) for v, f in zip(views, facts, strict=True)] == facts, where
                for evaluator in metrics:
                    expected = [t.invocation for t in trace_full.invocations]
                    reference = expected if evaluator.info.requires_reference else None
                    by_plain = evaluator.score_plain(views, reference)
                    by_full = evaluator.score_now(trace_full.invocations, reference)
                    assert by_plain == by_full, where
                    metric = PlannedMetric(evaluator.info.name, evaluator)
                    assert _records(trace_full.invocations, metric, by_plain) == _records(
                        trace_full.invocations, metric, by_full
                    ), where
                    if isinstance(evaluator, InformationalEvaluator):
                        assert all(v._traced is None for v in views), where  # no model made
                checked += len(views)
    assert checked > 1000


def _records(invocations: list[TracedInvocation], metric: PlannedMetric, result: Any) -> list[dict[str, Any]]:
    return [
        record.model_dump(exclude={"evaluated_at"}) for record in records_of(invocations, metric, result, eval_id="e")
    ]
