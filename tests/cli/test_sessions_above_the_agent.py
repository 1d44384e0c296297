"""A session named only on the application's span above the agent's invocation (its request span: ``session.id``,
``gen_ai.conversation.id``) joins the turns under it into one conversation, alike in ``otel-eval run``, the embedded
processor (thread and process isolation) and the Kafka worker's Collector path: the four give the same session windows
for one trace set of real SDK spans, the nearest ancestor's session winning and an invocation's own session winning
over any ancestor's."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.cli import main
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.environment import use_loopback_judge
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY
from tests.reconstruct.session_turns import genai_turn, openinference_turn, openllmetry_turn
from tests.waiting import wait_until
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings
from tests.worker._multi_turn import CONFIG, MULTI_TURN, verdict

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

Turn = Callable[[Any, dict[str, str]], None]
TURNS: list[tuple[list[dict[str, str]], Turn, dict[str, str]]] = [
    ([{"session.id": "chat-a"}], genai_turn, {}),
    ([{"gen_ai.conversation.id": "chat-b"}], openinference_turn, {}),
    ([{"session.id": "chat-a"}, {"session.id": "chat-b"}], genai_turn, {}),  # the nearest ancestor's
    ([{}], genai_turn, {}),  # no session anywhere: a conversation of its own
    ([{"session.id": "chat-a"}], genai_turn, {"gen_ai.conversation.id": "chat-c"}),  # the invocation's own
    ([{}, {"session.id": "chat-a"}], openllmetry_turn, {}),
]
"""Per turn (one trace each): the attributes of the application spans above the agent (outermost first), the
convention the agent writes, the agent root's own attributes."""
EXPECTED = {
    ("chat-a", (0, 5), ("NOT_EVALUATED", "PASSED")),
    ("chat-b", (1, 2), ("NOT_EVALUATED", "PASSED")),
    ("chat-c", (4,), ("PASSED",)),
    (None, (3,), ("PASSED",)),
}
"""The session windows: (session id, turns, the multi-turn metric's statuses)."""
Windows = set[tuple[str | None, tuple[int, ...], tuple[str, ...]]]


def _run_turns(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("app")
    for above, turn, own in TURNS:
        with contextlib.ExitStack() as stack:
            for depth, attributes in enumerate(above):
                name = "route" if depth else "POST /chat"
                stack.enter_context(tracer.start_as_current_span(name, attributes=attributes))
            turn(tracer, own)


def _windows(records: Iterable[EvaluationRecord], turn_of: dict[str, int]) -> Windows:
    """The multi-turn metric's records grouped by session (a turn without one alone), turns in time order."""
    grouped: dict[str, list[EvaluationRecord]] = defaultdict(list)
    for record in records:
        if record.metric_name == MULTI_TURN:
            grouped[record.session_id or record.trace_id].append(record)
    found = set()
    for window in grouped.values():
        window.sort(key=lambda r: r.invocation_end_time_ns)
        turns = tuple(turn_of[r.trace_id] for r in window)
        found.add((window[0].session_id, turns, tuple(r.eval_status.name for r in window)))
    return found


def _offline(spans: list[ReadableSpan], turn_of: dict[str, int]) -> Windows:
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "traces.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
        (folder / "config.json").write_text(json.dumps(CONFIG))
        args = ["run", str(folder / "traces.json"), "--config", str(folder / "config.json"), "--output", "json"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    windows = set()
    for conversation in json.loads(result.stdout)["results"]:
        (judged,) = [m for m in conversation["metrics"] if m["metric_name"] == MULTI_TURN]
        turns = tuple(turn_of[trace_id] for trace_id in conversation["trace_ids"])
        windows.add((conversation["session_id"], turns, tuple(judged["per_invocation_statuses"])))
    return windows


async def _collector_path(bootstrap: str, spans: list[ReadableSpan], base_url: str) -> list[EvaluationRecord]:
    """The spans written to ``otlp_spans`` as the Collector's Kafka exporter writes them (one trace a message), read
    by a worker running the Collector path and the sessions stage; the records it publishes."""
    spans_topic, sessions_topic, results_topic = random_topic("spans"), random_topic("sessions"), random_topic("res")
    await create_topics(bootstrap, [spans_topic, sessions_topic, results_topic])
    by_trace: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        by_trace[span.context.trace_id].append(span)
    async with producer(bootstrap, acks="all") as prod:
        for trace_id, trace_spans in by_trace.items():
            key = format(trace_id, "032x").encode()
            await (await prod.send(spans_topic, value=encode_spans(trace_spans).SerializeToString(), key=key))
    judge = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=base_url))
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            bootstrap,
            worker_sources="otlp_spans,sessions",
            kafka_spans_topic=spans_topic,
            kafka_sessions_topic=sessions_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
            trace_idle_timeout=0.5,
            session_idle_timeout=1.0,
        ),
        core=EvaluationCore(criteria=CONFIG, judge=judge, emitters=telemetry.emitters()),
        telemetry=telemetry.providers,
    )

    async def records() -> list[EvaluationRecord]:
        found = await read_topic(bootstrap, results_topic, idle=0.2)
        return [EvaluationRecord.model_validate_json(r.value) for r in found]

    try:
        async with running_worker(worker):
            deadline = time.monotonic() + 90
            while sum(r.metric_name == MULTI_TURN for r in await records()) < len(TURNS):
                assert time.monotonic() < deadline, "timed out waiting for every turn judged"
                await asyncio.sleep(0.3)
            await asyncio.sleep(1.0)  # any second window would arrive now
    finally:
        await judge.aclose()
        telemetry.shutdown()
    return await records()


async def test_run_the_processor_and_the_collector_path_join_turns_by_the_session_above_the_agent(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeGemini(verdict) as server:
        use_loopback_judge(monkeypatch, server.base_url)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        embedded: dict[str, list[EvaluationRecord]] = {"thread": [], "process": []}
        processors = []
        for isolation, records in embedded.items():
            settings = ProcessorSettings(isolation=isolation, sessions=SessionLimits(idle_timeout=0.5))
            processors.append(EvaluationSpanProcessor(CONFIG, settings=settings, sinks=[records.extend]))
            provider.add_span_processor(processors[-1])
        _run_turns(provider)
        for records in embedded.values():
            assert wait_until(lambda r=records: sum(x.metric_name == MULTI_TURN for x in r) >= len(TURNS), timeout=60)
        for processor in processors:
            processor.shutdown()
        spans = list(exporter.get_finished_spans())
        roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
        turn_of = {format(root.context.trace_id, "032x"): index for index, root in enumerate(roots)}
        assert len(turn_of) == len(TURNS)

        assert await asyncio.to_thread(_offline, spans, turn_of) == EXPECTED
        assert _windows(embedded["thread"], turn_of) == EXPECTED
        assert _windows(embedded["process"], turn_of) == EXPECTED
        assert _windows(await _collector_path(kafka_bootstrap, spans, server.base_url), turn_of) == EXPECTED
