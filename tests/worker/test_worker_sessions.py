"""Sessions on Kafka: the agent's exporter keys each turn by its session id, workers hold open sessions and never
commit past the first record of one; a worker SIGKILLed in the middle of sessions loses none: the survivor rebuilds
them from the held-back offsets and judges every window once. The turns are the real recorded ADK sessions."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import DefaultPartitioner
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_eval import semconv
from otel_eval.cli import main
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from otel_eval.transport.kafka import KafkaInvocationExporter
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY
from tests.reconstruct.adk_agents import adk_telemetry
from tests.reconstruct.adk_sessions import RecordedSessions, record_sessions
from tests.transport._requests import request, traced_invocation
from tests.waiting import wait_until_async
from tests.worker._harness import (
    MemoryTelemetry,
    OtlpSink,
    running_worker,
    start_worker_process,
    worker_settings,
)
from tests.worker._multi_turn import CONFIG, MULTI_TURN, verdict

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.usefixtures("quiet_adk")]

PARTITIONS = 4
COPIES = 2


async def _recorded() -> tuple[RecordedSessions, list[TracedInvocation]]:
    """The recorded ADK sessions (3 sessions of 2-4 turns, interleaved, one trace per turn), and their turns rebuilt
    from the spans, in time order."""
    with adk_telemetry(schema=2):
        recorded = await record_sessions()
    turns = sorted(
        (i for trace in rebuild_traces(spans_from_readable(recorded.spans)) for i in trace.invocations),
        key=lambda i: i.start_time_ns,
    )
    return recorded, turns


async def _recorded_turns() -> list[TracedInvocation]:
    """The recorded ADK sessions' turns, ``COPIES`` times with fresh trace ids and session ids that spread the
    sessions over every partition."""
    _, turns = await _recorded()
    originals = sorted({t.session_id or "" for t in turns})
    assert len(originals) == 3 and len(turns) == 9
    for salt in range(1000):
        names = {(s, k): f"{s}-{k}-{salt}" for s in originals for k in range(COPIES)}
        if len({_partition(name) for name in names.values()}) == PARTITIONS:
            break
    copies = []
    for k in range(COPIES):
        for turn in turns:
            update = {"session_id": names[(turn.session_id or "", k)], "trace_id": uuid.uuid4().hex}
            copies.append(turn.model_copy(update=update))
    return copies


def _partition(session_id: str) -> int:
    """The partition the exporter's producer sends a session's turns to (Kafka's default partitioner)."""
    return int(DefaultPartitioner()(session_id.encode(), list(range(PARTITIONS)), list(range(PARTITIONS))))


async def test_a_worker_killed_in_the_middle_of_sessions_loses_none_and_the_survivor_judges_each_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    turns = await _recorded_turns()
    index = {t.session_id: 0 for t in turns}
    first_half, second_half = [], []
    for turn in turns:  # each session's first two turns before the kill, the rest after
        (first_half if index[turn.session_id] < 2 else second_half).append(turn)
        index[turn.session_id] += 1
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=PARTITIONS)
    group = random_topic("group")
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=requests_topic)

    async def send(batch: list[TracedInvocation]) -> None:
        exporter.export([EvaluationRequest(invocations=[turn]) for turn in batch])
        assert await asyncio.to_thread(exporter.force_flush, 15_000)

    server = FakeGemini(verdict).start()
    # Worker A (a process) would judge its sessions only after 30 idle seconds: it is killed with all of them open.
    env = {
        "GOOGLE_API_KEY": TEST_KEY,
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "OTEL_EVAL_SESSION_IDLE_TIMEOUT": "30",
        "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS": "6000",
    }
    args = ["--bootstrap-servers", kafka_bootstrap, "--requests-topic", requests_topic, "--results-topic"]
    args += [results_topic, "--group-id", group, "--criteria", json.dumps(CONFIG), "--telemetry", "none"]
    log = tmp_path / "worker-a.log"
    worker_a = start_worker_process(args, env, log)
    telemetry = MemoryTelemetry()
    judge = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=server.base_url))
    worker_b = Worker(
        worker_settings(
            kafka_bootstrap,
            kafka_requests_topic=requests_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=group,
            session_idle_timeout=1.5,
        ),
        core=EvaluationCore(criteria=CONFIG, judge=judge, emitters=telemetry.emitters()),
        telemetry=telemetry.providers,
    )
    try:
        await wait_until_async(lambda: "partitions assigned" in log.read_text(), timeout=60, what="worker A to join")
        async with running_worker(worker_b):
            await wait_until_async(lambda: len(worker_b.assignment) == PARTITIONS // 2, timeout=60, what="a split")
            on_a = {t.session_id for t in turns if (requests_topic, _partition(t.session_id or "")) not in
                    worker_b.assignment}  # fmt: skip
            assert on_a and len(on_a) < len(index)  # both workers hold sessions

            await send(first_half)
            expected = len(first_half) * len(EFFICIENCY_METRICS)
            await _wait(lambda: _count_per_invocation(kafka_bootstrap, results_topic, expected), "the first results")
            worker_a.send_signal(signal.SIGKILL)  # with every session of its partitions open
            await asyncio.to_thread(worker_a.wait, 10)
            await send(second_half)
            await _wait(lambda: _all_judged(kafka_bootstrap, results_topic, turns), "every session judged", 90)
            await asyncio.sleep(1.0)  # any duplicate would arrive now
    finally:
        if worker_a.poll() is None:
            worker_a.kill()
        await asyncio.to_thread(exporter.shutdown, 5_000)
        await judge.aclose()
        server.stop()

    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    own = [r for r in published if r.session_window is None]
    # every per-invocation result exists once (the survivor did not score again what A had published)
    assert len(own) == len({r.result_id for r in own}) == len(turns) * len(EFFICIENCY_METRICS)
    assert {(r.trace_id, r.span_id) for r in own} == {(t.trace_id, t.span_id) for t in turns}
    scored_by_b = {e.result_id for e in telemetry.events()}
    assert {r.result_id for r in own} - scored_by_b  # A scored its partitions' first turns before it was killed

    judged = {r.result_id: r for r in published if r.metric_name == MULTI_TURN}
    assert set(judged) <= scored_by_b  # every window was judged by the survivor
    windows: dict[tuple[str | None, int | None], list[EvaluationRecord]] = defaultdict(list)
    for record in judged.values():
        windows[(record.session_id, record.session_window)].append(record)
    covered = [(r.trace_id, r.span_id) for r in judged.values()]
    assert sorted(covered) == sorted((t.trace_id, t.span_id) for t in turns)  # each turn in exactly one window
    for records in windows.values():  # ADK's layout: the verdict on the window's last turn
        records.sort(key=lambda r: r.invocation_end_time_ns)
        assert [r.eval_status.name for r in records] == ["NOT_EVALUATED"] * (len(records) - 1) + ["PASSED"]
    # judged once: one evaluation span per window, and the sessions of the killed worker rebuilt whole
    assert len([s for s in telemetry.evaluation_spans() if s.name == f"evaluate {MULTI_TURN}"]) == len(windows)
    for session_id in on_a:
        assert [w for s, w in windows if s == session_id] == [0]
        assert len(windows[(session_id, 0)]) == sum(t.session_id == session_id for t in turns)
    telemetry.shutdown()


async def _wait(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.3)


async def _records(bootstrap: str, topic: str) -> list[EvaluationRecord]:
    return [EvaluationRecord.model_validate_json(r.value) for r in await read_topic(bootstrap, topic, idle=0.2)]


async def _count_per_invocation(bootstrap: str, topic: str, expected: int) -> bool:
    records = await _records(bootstrap, topic)
    return len({r.result_id for r in records if r.session_window is None}) >= expected


async def _all_judged(bootstrap: str, topic: str, turns: list[TracedInvocation]) -> bool:
    records = await _records(bootstrap, topic)
    judged = {(r.trace_id, r.span_id) for r in records if r.metric_name == MULTI_TURN}
    return judged >= {(t.trace_id, t.span_id) for t in turns}


async def test_collector_path_rekeys_session_turns_by_session_id_and_the_sessions_source_judges_them(
    kafka_bootstrap: str,
) -> None:
    recorded, turns = await _recorded()
    spans_topic, sessions_topic = random_topic("spans"), random_topic("sessions")
    results_topic = random_topic("results")
    await create_topics(kafka_bootstrap, [spans_topic, sessions_topic, results_topic], partitions=PARTITIONS)
    by_trace: dict[int, list[Any]] = defaultdict(list)
    for span in recorded.spans:
        by_trace[span.context.trace_id].append(span)
    span_partitions: dict[str, int] = {}
    async with producer(kafka_bootstrap, acks="all") as prod:  # as the Collector's exporter: keyed by trace id
        for trace_id, spans in by_trace.items():
            key = format(trace_id, "032x")
            sent = await prod.send(spans_topic, value=encode_spans(spans).SerializeToString(), key=key.encode())
            span_partitions[key] = (await sent).partition
    by_session = defaultdict(set)
    for turn in turns:
        by_session[turn.session_id].add(span_partitions[turn.trace_id])
    assert any(len(found) > 1 for found in by_session.values())  # a session's turns on several span partitions

    server = FakeGemini(verdict).start()
    judge = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=server.base_url))
    telemetry = MemoryTelemetry()
    worker = Worker(
        worker_settings(
            kafka_bootstrap,
            worker_sources="otlp_spans,sessions",  # the Collector path, and the stage that judges its sessions
            kafka_spans_topic=spans_topic,
            kafka_sessions_topic=sessions_topic,
            kafka_results_topic=results_topic,
            kafka_group_id=random_topic("group"),
            trace_idle_timeout=0.5,
            session_idle_timeout=1.5,
        ),
        core=EvaluationCore(criteria=CONFIG, judge=judge, emitters=telemetry.emitters()),
        telemetry=telemetry.providers,
    )
    try:
        async with running_worker(worker):
            await _wait(lambda: _all_judged(kafka_bootstrap, results_topic, turns), "every session judged", 90)
            await asyncio.sleep(1.0)  # any duplicate would arrive now
    finally:
        await judge.aclose()
        server.stop()

    rekeyed = await read_topic(kafka_bootstrap, sessions_topic, expected=len(turns))
    assert len(rekeyed) == len(turns)
    partitions: dict[str, set[int]] = defaultdict(set)
    for record in rekeyed:
        request = EvaluationRequest.model_validate_json(record.value)
        assert record.key.decode() == request.invocations[0].session_id
        partitions[record.key.decode()].add(record.partition)
    assert set(partitions) == set(recorded.session_ids.values())
    assert all(len(found) == 1 for found in partitions.values())  # every turn of a session on one partition

    published = [
        EvaluationRecord.model_validate_json(r.value) for r in await read_topic(kafka_bootstrap, results_topic)
    ]
    own = [r for r in published if r.session_window is None]
    assert len(own) == len({r.result_id for r in own}) == len(turns) * len(EFFICIENCY_METRICS)
    judged = [r for r in published if r.metric_name == MULTI_TURN]
    assert len(judged) == len({r.result_id for r in judged}) == len(turns)
    for session_id in recorded.session_ids.values():  # one window per session, over its turns from every partition
        mine = sorted((r for r in judged if r.session_id == session_id), key=lambda r: r.invocation_end_time_ns)
        count = sum(t.session_id == session_id for t in turns)
        assert {(r.session_window, r.session_first_turn, r.session_last_turn) for r in mine} == {(0, 0, count - 1)}
        assert [r.eval_status.name for r in mine] == ["NOT_EVALUATED"] * (count - 1) + ["PASSED"]
    assert len([s for s in telemetry.evaluation_spans() if s.name == f"evaluate {MULTI_TURN}"]) == 3
    telemetry.shutdown()


class _OnePartition:
    """A requests topic of one partition (offsets are exact), its results topic, one group, the loopback judge."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.requests, self.results = random_topic("requests"), random_topic("results")
        self.group = random_topic("group")
        self.server = FakeGemini(verdict).start()
        self.judge = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=self.server.base_url))

    async def produce(self, requests: list[EvaluationRequest]) -> None:
        await create_topics(self.bootstrap, [self.requests, self.results], partitions=1)
        async with producer(self.bootstrap, acks="all") as prod:
            for sent in requests:
                await prod.send(self.requests, value=sent.model_dump_json().encode(), key=sent.record_key.encode())

    def worker(
        self, telemetry: MemoryTelemetry, *, criteria: dict[str, Any] | None = CONFIG, **overrides: Any
    ) -> Worker:
        """A worker of the group on the topic (``overrides`` may make it the ``sessions`` source), with ``criteria``
        and the pipeline counters a worker's core reports to."""
        values = {"kafka_requests_topic": self.requests, "kafka_results_topic": self.results, **overrides}
        meter_provider = telemetry.providers.meter_provider
        core = EvaluationCore(
            criteria=criteria,
            judge=self.judge,
            emitters=telemetry.emitters(),
            pipeline=PipelineMetrics(meter_provider, transport=semconv.TRANSPORT_KAFKA),
        )
        settings = worker_settings(self.bootstrap, kafka_group_id=self.group, **values)
        return Worker(settings, core=core, telemetry=telemetry.providers)

    async def committed(self) -> int | None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, enable_auto_commit=False)
        await consumer.start()
        try:
            offset = await consumer.committed(TopicPartition(self.requests, 0))
            return None if offset is None else int(offset)
        finally:
            await consumer.stop()

    async def close(self) -> None:
        await self.judge.aclose()
        self.server.stop()


def _turns(session_id: str, numbers: range) -> list[TracedInvocation]:
    return [traced_invocation(n).model_copy(update={"session_id": session_id}) for n in numbers]


async def test_a_graceful_stop_leaves_open_sessions_uncommitted_for_the_next_worker(kafka_bootstrap: str) -> None:
    kafka = _OnePartition(kafka_bootstrap)
    alone = request(0)  # offset 0: no session (its conversation-level metric runs on it alone), committed at once
    turns = _turns("s-open", range(1, 4))  # offsets 1-3
    await kafka.produce([alone, *(EvaluationRequest(invocations=[turn]) for turn in turns)])
    first, second = MemoryTelemetry(), MemoryTelemetry()
    try:
        stopping = kafka.worker(first, session_idle_timeout=600)
        async with running_worker(stopping):
            expected = 4 * len(EFFICIENCY_METRICS)
            await _wait(lambda: _count_per_invocation(kafka_bootstrap, kafka.results, expected), "the turns' results")
        assert not stopping.abandoned_uncommitted  # a graceful stop: open sessions are handed over, not lost
        assert await kafka.committed() == 1  # the session's first record
        held = {t.trace_id for t in turns}
        assert not [e for e in first.events() if e.metric == MULTI_TURN and e.trace_id in held]  # not judged

        async with running_worker(kafka.worker(second, session_idle_timeout=0.5)):
            await _wait(lambda: _all_judged(kafka_bootstrap, kafka.results, turns), "the session judged")
            await asyncio.sleep(0.5)
        assert await kafka.committed() == 4  # judged and published: committed
    finally:
        await kafka.close()
    events = second.events()
    assert {e.metric for e in events} == {MULTI_TURN}  # its own results were known: only the window is new
    assert [e.label for e in sorted(events, key=lambda e: turns.index(_turn(turns, e.trace_id)))] == [
        "not_evaluated", "not_evaluated", "pass"
    ]  # fmt: skip
    first.shutdown()
    second.shutdown()


async def test_the_worker_pairs_and_plans_each_request_once(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request it scores is paired and planned by one call, which also says whether its turns wait for their
    session; one whose results are known (re-read) is paired once to hold its turns; a window once: the real pairing
    function, counted by the trace ids it pairs."""
    from otel_eval.evaluation import core as core_module

    paired: list[tuple[str, ...]] = []
    real = core_module.pair_invocations

    def counted(invocations: list[TracedInvocation], *args: Any, **kwargs: Any) -> Any:
        paired.append(tuple(i.trace_id for i in invocations))
        return real(invocations, *args, **kwargs)

    monkeypatch.setattr(core_module, "pair_invocations", counted)
    kafka = _OnePartition(kafka_bootstrap)
    alone, turns = request(0), _turns("s-once", range(1, 3))
    await kafka.produce([alone, *(EvaluationRequest(invocations=[turn]) for turn in turns)])
    first, second = MemoryTelemetry(), MemoryTelemetry()
    ids = [t.trace_id for t in turns]
    try:
        async with running_worker(kafka.worker(first, session_idle_timeout=600)):
            expected = 3 * len(EFFICIENCY_METRICS)
            await _wait(lambda: _count_per_invocation(kafka_bootstrap, kafka.results, expected), "the results")
        assert paired == [(alone.trace_id,), *((i,) for i in ids)]  # once each, scored and (the turns) held
        paired.clear()
        async with running_worker(kafka.worker(second, session_idle_timeout=0.5)):
            await _wait(lambda: _all_judged(kafka_bootstrap, kafka.results, turns), "the session judged")
        assert paired == [*((i,) for i in ids), tuple(ids)]  # the re-read turns held, then their window judged
    finally:
        await kafka.close()
    first.shutdown()
    second.shutdown()


async def test_a_full_window_is_judged_at_once_and_not_again_by_the_worker_that_re_reads_it(
    kafka_bootstrap: str,
) -> None:
    kafka = _OnePartition(kafka_bootstrap)
    # s-open's first turn (offset 0) holds the commit; s-full's two turns (offsets 1-2) fill its window at once.
    still_open, full = _turns("s-open", range(0, 1)), _turns("s-full", range(1, 3))
    await kafka.produce([EvaluationRequest(invocations=[turn]) for turn in still_open + full])
    first, second = MemoryTelemetry(), MemoryTelemetry()
    try:
        async with running_worker(kafka.worker(first, session_idle_timeout=600, session_max_turns=2)):
            await _wait(lambda: _all_judged(kafka_bootstrap, kafka.results, full), "the full window judged")
        # s-open is still open: nothing committed past offset 0, s-full's records are re-read by the next owner
        assert await kafka.committed() in (None, 0)
        rereading = kafka.worker(second, session_idle_timeout=0.5, session_max_turns=2)
        async with running_worker(rereading):
            await _wait(lambda: _all_judged(kafka_bootstrap, kafka.results, still_open), "the open session judged")
            await asyncio.sleep(0.5)
        assert await kafka.committed() == 3
    finally:
        await kafka.close()
    published = await _records(kafka_bootstrap, kafka.results)
    judged = [r for r in published if r.metric_name == MULTI_TURN]
    assert sorted((r.session_id, r.session_window, r.session_first_turn, r.session_last_turn) for r in judged) == [
        ("s-full", 0, 0, 1), ("s-full", 0, 0, 1), ("s-open", 0, 0, 0)
    ]  # fmt: skip
    assert len({r.result_id for r in judged}) == 3  # s-full's window judged once, by the first worker
    assert {e.trace_id for e in second.events()} == {still_open[0].trace_id}
    assert rereading.metrics.snapshot().get("duplicates_skipped", 0) >= len(full) * 2  # own results and window
    first.shutdown()
    second.shutdown()


def _turn(turns: list[TracedInvocation], trace_id: str) -> TracedInvocation:
    return next(t for t in turns if t.trace_id == trace_id)


async def test_a_sessions_topic_turn_nothing_waits_for_any_more_is_counted_as_dropped_and_said_once(
    kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Turns re-keyed to the sessions topic while the criteria had a conversation-level metric, read by a worker whose
    criteria have none: nothing is left to judge, so each is counted as dropped, committed, and said once."""
    caplog.set_level(logging.INFO)
    kafka = _OnePartition(kafka_bootstrap)
    turns = _turns("s-changed", range(3))
    await kafka.produce([EvaluationRequest(invocations=[turn]) for turn in turns])  # as the spans workers re-keyed
    telemetry = MemoryTelemetry()
    try:
        worker = kafka.worker(telemetry, criteria=None, worker_sources="sessions", kafka_sessions_topic=kafka.requests)
        async with running_worker(worker):
            await _wait(lambda: _committed_is(kafka, len(turns)), "the turns committed")
    finally:
        await kafka.close()
    dropped = {
        dict(p.attributes)[semconv.OTEL_EVAL_DROP_REASON]: p.value
        for p in telemetry.metric_points(semconv.METRIC_INVOCATIONS_DROPPED)
    }
    assert dropped == {semconv.DROP_NO_SESSION_METRICS: len(turns)}
    assert telemetry.events() == [] and await _records(kafka_bootstrap, kafka.results) == []  # nothing scored
    said = [r for r in caplog.records if semconv.DROP_NO_SESSION_METRICS in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]
    telemetry.shutdown()


async def _committed_is(kafka: _OnePartition, offset: int) -> bool:
    return await kafka.committed() == offset


async def test_the_worker_scores_recorded_sessions_as_otel_eval_run_does(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same session scores the same everywhere: the worker's results for the recorded ADK sessions (one request
    per turn, keyed by session) equal what ``otel-eval run --export-otlp`` emits for their spans, record for record:
    result ids, scores, labels and error types (the verdict on each session's last turn)."""
    recorded, turns = await _recorded()
    requests_topic, results_topic = random_topic("requests"), random_topic("results")
    await create_topics(kafka_bootstrap, [requests_topic, results_topic], partitions=PARTITIONS)
    async with producer(kafka_bootstrap, acks="all") as prod:
        for turn in turns:
            sent = EvaluationRequest(invocations=[turn])
            await prod.send(requests_topic, value=sent.model_dump_json().encode(), key=sent.record_key.encode())
    server = FakeGemini(verdict).start()
    judge = JudgeClient(JudgeSettings(api_key=TEST_KEY, base_url=server.base_url))
    telemetry = MemoryTelemetry()
    settings = worker_settings(
        kafka_bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=random_topic("group"),
        session_idle_timeout=1.0,
    )
    worker = Worker(
        settings,
        core=EvaluationCore(criteria=CONFIG, judge=judge, emitters=telemetry.emitters()),
        telemetry=telemetry.providers,
    )
    try:
        async with running_worker(worker):
            await _wait(lambda: _all_judged(kafka_bootstrap, results_topic, turns), "every session judged", 90)
    finally:
        await judge.aclose()
    online = {
        (r.trace_id, r.span_id, r.metric_name): (r.result_id, r.score, r.label, r.error_type)
        for r in await _records(kafka_bootstrap, results_topic)
    }
    telemetry.shutdown()

    (tmp_path / "traces.json").write_text(json.dumps(MessageToDict(encode_spans(recorded.spans))))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    sink = OtlpSink().start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
        monkeypatch.setenv("OTEL_EVAL_SINKS", "")
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        args = ["run", str(tmp_path / "traces.json"), "--config", str(tmp_path / "config.json"), "--export-otlp"]
        result = await asyncio.to_thread(CliRunner().invoke, main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        offline = {
            (e.trace_id, e.span_id, e.metric): (e.result_id, e.score, e.label, e.error_type) for e in sink.events()
        }
    finally:
        sink.stop()
        server.stop()
    assert len(online) == len(turns) * (1 + len(EFFICIENCY_METRICS))
    assert offline == online
    judged = [value for (_, _, metric), value in online.items() if metric == MULTI_TURN]
    assert sorted(label for _, _, label, _ in judged).count(semconv.LABEL_PASS) == len(recorded.session_ids)
