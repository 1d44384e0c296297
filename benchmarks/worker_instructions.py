"""Instructions per invocation of the Kafka worker's per-batch step, counted by callgrind: the worker's own cost on
``bench_kafka --pinned-only``'s input, without the broker, in a figure the machine's load does not change.

The records are the ones :mod:`benchmarks._kafka_worker_rate` puts on the topic (``requests``: the processor
exporter's ``EvaluationRequest`` JSON; ``otlp_spans``: the Collector's ``otlp_proto`` message per demo-agent
trace), handed to the worker's real :class:`~otel_eval.worker._batches.BatchPipeline` in fetched batches of 64, as
the worker built by ``otel-eval worker --telemetry none`` (its core, ledger, assembler, record executor, and the
garbage collector tuned for serving as the command tunes it) runs it:
decoding or parsing, assembling and rebuilding, evaluating, and publishing through the real
:class:`~otel_eval.worker.results.ResultsPublisher` into aiokafka's own record batches (the produce request itself is
not sent: no broker). After two batches of warm-up, the window is cut with ``--dump-before=time_sleep``; every thread
is counted.

``requests_sessions`` is the requests path with every request a turn of a conversation (a session id on its
invocation, 4 turns a session), none of whose metrics waits for the session.

Run: ``python -m benchmarks.worker_instructions [--source requests|requests_sessions|otlp_spans] [--invocations 640]``
(needs
``valgrind``); ``--profile`` runs the same window under yappi (CPU clock) instead and prints the top of its profile.

``--stages`` (requests path) also counts, after the window, each step of it run alone on the window's records, with
a fresh worker (so nothing is a duplicate): parsing (``parse_request``), the core (``EvaluationCore.start``), the
results' JSON, and aiokafka's record batches (framing and compression); the rest of the window's figure is the
worker's own bookkeeping (the batch's hand-off to the parsing thread, de-duplication, the ledger, routing, commits).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._common import ROOT

BATCH = 64
SESSION_REQUESTS = "requests_sessions"
"""The requests path, every request a turn of a conversation (its invocation carries a session id)."""
PARTITIONS = 4
WARM_UP_BATCHES = 2


@dataclass(frozen=True, slots=True)
class _Message:
    """What aiokafka's consumer hands the worker for one record."""

    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp: int = 0


@dataclass
class _Consumer:
    """The group consumer's part the pipeline uses: no lag known, commits kept."""

    commits: list[dict[Any, int]] = field(default_factory=list)

    def highwater(self, tp: Any) -> None:
        return None

    async def commit(self, offsets: dict[Any, int]) -> None:
        self.commits.append(offsets)

    def assignment(self) -> set[Any]:
        return set()


class _Producer:
    """aiokafka's producer as the publisher uses it: real record batches, never sent."""

    def __init__(self, compression: str | None) -> None:
        from aiokafka.producer.message_accumulator import BatchBuilder
        from aiokafka.producer.producer import AIOKafkaProducer

        self._builder = BatchBuilder
        self._codec = 0 if compression is None else AIOKafkaProducer._COMPRESSORS[compression][1]
        self.records = 0

    async def partitions_for(self, topic: str) -> set[int]:
        return set(range(PARTITIONS))

    def create_batch(self) -> Any:
        return self._builder(512 * 1024, self._codec)

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> asyncio.Future[None]:
        self.records += batch.record_count()
        batch.close()
        batch._build()  # what the sender does: the records' framing and compression
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def _payloads(source: str, invocations: int) -> list[tuple[bytes, bytes]]:
    from benchmarks._kafka_worker_rate import collector_payloads, requests_payloads

    if source == SESSION_REQUESTS:
        return _session_requests(invocations)
    made = requests_payloads if source == "requests" else collector_payloads
    return made(invocations)[0]


def _session_requests(count: int) -> list[tuple[bytes, bytes]]:
    """``count`` requests as the processor's Kafka exporter writes them for turns of conversations (each request's
    invocation carries a session id, 4 turns a session; key: the session id). The worker's criteria have no
    conversation-level metric, so none waits for its session: every request is scored at once."""
    import benchmarks._kafka_worker_rate  # noqa: F401  (puts the repository's tests on the path)
    from otel_eval.model.messages import EvaluationRequest
    from tests.transport._requests import traced_invocation

    made = [
        EvaluationRequest(invocations=[traced_invocation(1000 + i).model_copy(update={"session_id": f"s-{i // 4}"})])
        for i in range(count)
    ]
    return [(r.record_key.encode(), r.to_wire()) for r in made]


def _pipeline(source: str) -> tuple[Any, _Producer]:
    from otel_eval.worker.collector_path import TraceAssembler
    from otel_eval.worker.results import ResultsPublisher
    from otel_eval.worker.service import Worker
    from otel_eval.worker.settings import WorkerSettings

    settings = WorkerSettings(
        worker_sources="requests" if source == SESSION_REQUESTS else source,
        kafka_requests_topic="requests",
        kafka_spans_topic="spans",
        kafka_results_topic="results",
        kafka_sessions_topic="",
        worker_telemetry="none",
        worker_max_batch_size=BATCH,
    )
    worker = Worker(settings)
    pipeline = worker._batches
    ticks = itertools.count()
    # Every trace is complete by the next look: a clock that moves on a second at each reading.
    pipeline.assembler = TraceAssembler(0.5, clock=lambda: float(next(ticks)))
    from otel_eval.transport import check_compression

    producer = _Producer(check_compression(settings.kafka_compression))
    pipeline.attach(_Consumer(), None, ResultsPublisher(producer, "results"), producer)  # type: ignore[arg-type]
    return pipeline, producer


def _batches(source: str, payloads: list[tuple[bytes, bytes]]) -> list[dict[Any, list[_Message]]]:
    from aiokafka import TopicPartition

    topic = "spans" if source == "otlp_spans" else "requests"
    batches = []
    offsets = [0] * PARTITIONS
    for start in range(0, len(payloads), BATCH):
        batch: dict[Any, list[_Message]] = {}
        for index, (key, value) in enumerate(payloads[start : start + BATCH], start):
            partition = index % PARTITIONS
            batch.setdefault(TopicPartition(topic, partition), []).append(
                _Message(topic, partition, offsets[partition], key, value)
            )
            offsets[partition] += 1
        batches.append(batch)
    return batches


async def _run(pipeline: Any, batches: list[dict[Any, list[_Message]]]) -> None:
    for batch in batches:
        await pipeline.process(batch, [])
    await pipeline.settled()


STAGES = ("parse", "core", "results JSON", "record batches")
"""The steps ``--stages`` counts alone, in the order of their callgrind dumps (after the window's)."""


def _stages(source: str, payloads: list[tuple[bytes, bytes]]) -> None:
    """Each of :data:`STAGES` run alone on ``payloads`` by a fresh worker, one callgrind dump each (``--stages``)."""
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

    from otel_eval.worker.consumer import parse_request
    from otel_eval.worker.results import _json

    pipeline, producer = _pipeline(source)
    core = pipeline.core
    time.sleep(0.05)  # the set-up's dump (not counted)
    requests = [parse_request(value, "stage") for _, value in payloads]
    time.sleep(0.05)
    token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))  # as the pipeline scores a batch
    records = [record for request in requests for record in core.start(request).records]
    detach(token)
    time.sleep(0.05)
    values = [_json(record) for record in records]
    time.sleep(0.05)
    for start in range(0, len(values), BATCH):  # one batch per results partition and worker batch, as published
        batch = producer.create_batch()
        for record, value in zip(records[start : start + BATCH], values[start : start + BATCH], strict=True):
            batch.append(timestamp=None, key=record.trace_id.encode(), value=value, headers=[])
        batch.close()
        batch._build()
    time.sleep(0.05)


def _workload(source: str, invocations: int, profile: bool, stages: bool = False) -> None:
    warm = WARM_UP_BATCHES * BATCH
    payloads = _payloads(source, warm + invocations)
    pipeline, producer = _pipeline(source)
    from otel_eval._runtime.collector import tune_for_serving

    tune_for_serving()  # as ``otel-eval worker`` does once its worker is built (the fetched records come after)
    batches = _batches(source, payloads)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(_run(pipeline, batches[:WARM_UP_BATCHES]))
    published = producer.records
    if profile:
        import yappi

        yappi.set_clock_type("cpu")
        yappi.start()
    started = time.process_time()
    time.sleep(0.05)  # callgrind dumps here: the window starts
    loop.run_until_complete(_run(pipeline, batches[WARM_UP_BATCHES:]))
    time.sleep(0.05)  # and here: the window ends
    cpu = time.process_time() - started
    if stages:
        _stages(source, payloads[warm:])
    if profile:
        yappi.stop()
        stats = yappi.get_func_stats()
        stats.save("/tmp/worker_instructions.pstat", type="pstat")
        import pstats

        pstats.Stats("/tmp/worker_instructions.pstat").sort_stats("cumulative").print_stats(60)
        pstats.Stats("/tmp/worker_instructions.pstat").sort_stats("tottime").print_stats(40)
    results = producer.records - published
    print(f"{source}: {results} results published for {invocations} invocations, {cpu / invocations * 1e6:.0f} µs "
          "CPU per invocation", file=sys.stderr)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.worker_instructions")
    parser.add_argument("--source", choices=("requests", SESSION_REQUESTS, "otlp_spans"), default="requests")
    parser.add_argument("--invocations", type=int, default=640)
    parser.add_argument("--profile", action="store_true", help="yappi (CPU clock) instead of callgrind")
    parser.add_argument("--stages", action="store_true", help="requests path: also count each step alone")
    parser.add_argument("--keep", type=Path, help="copy the window's callgrind dump here (for callgrind_annotate)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside or args.profile:
        _workload(args.source, args.invocations, args.profile, args.stages)
        return
    if args.stages and args.source != "requests":
        parser.error("--stages counts the requests path's steps (--source requests)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--dump-before=time_sleep", f"--callgrind-out-file={out}"]
        command += [f"--log-file={Path(tmp, 'valgrind.log')}"]
        command += [sys.executable, "-m", "benchmarks.worker_instructions", "--inside", *(argv or sys.argv[1:])]
        subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        window = Path(f"{out}.2")  # dump 1: start-up and warm-up; dump 2: the window
        total = _summary(window)
        if args.keep is not None:
            shutil.copyfile(window, args.keep)
        counted = [_summary(Path(f"{out}.{4 + index}")) for index in range(len(STAGES))] if args.stages else []
    print(f"{args.source}: {total / args.invocations / 1e6:.3f} M instructions per invocation ({args.invocations})")
    for name, count in zip(STAGES, counted, strict=True):
        print(f"  {name}: {count / args.invocations / 1e6:.3f} M")
    if counted:
        print(f"  the rest (the worker's bookkeeping): {(total - sum(counted)) / args.invocations / 1e6:.3f} M")


def _summary(dump: Path) -> int:
    """The instructions a callgrind dump counts."""
    return next(int(line.split()[1]) for line in dump.read_text().splitlines() if line.startswith("summary:"))


if __name__ == "__main__":
    main()
