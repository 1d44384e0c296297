"""``Worker``: the ``otel-eval worker`` service (startup, main loop, graceful shutdown), shaped like uvicorn's server.

Per batch of fetched messages: parse (unreadable ones go to the dead-letter topic), gather Collector-path spans into
traces (decoding, parsing and rebuilding run off the event loop, each record within ``worker_record_timeout``: a
record past it is dead-lettered too, and the partition moves on, see :mod:`otel_eval._runtime.deadline`), evaluate the requests with the shared :class:`~otel_eval.evaluation.core.EvaluationCore` (bounded concurrency),
export the batch's telemetry, publish the results, and only then commit the offsets (at-least-once). Redelivered
invocations whose results were already emitted are skipped (see :mod:`otel_eval.worker.results` for the exact
guarantee). SIGTERM/SIGINT stop intake; the process is done within ``worker_shutdown_timeout`` seconds: the current
batch is finished in the first part of it, otherwise abandoned uncommitted (:attr:`Worker.abandoned_uncommitted`; the
group redelivers it), and the Kafka clients are stopped in the rest, closed without waiting for a broker that does not
answer.

During a broker outage the worker keeps running and resumes by itself: aiokafka's per-attempt errors of the worker's
clients are counted and kept at DEBUG, a metadata probe confirms the outage (one WARNING, a summary a minute, one INFO
when the broker is back, see :mod:`otel_eval.transport._kafka_outage`), and ``/readyz`` fails meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from otel_eval import environment_variables as env
from otel_eval._runtime.deadline import DeadlineExecutor
from otel_eval.transport import RequestEvaluator, quiet_client_logs, release_client_logs, stop_client
from otel_eval.worker._batches import BatchPipeline
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker.collector_path import TraceAssembler
from otel_eval.worker.consumer import (
    BrokerWatch,
    RebalanceListener,
    create_consumer,
    create_producer,
    create_readback_consumer,
    for_want_of_the_broker,
)
from otel_eval.worker.dead_letter import DeadLetters
from otel_eval.worker.health import HEARTBEAT_SECONDS, HealthServer, WorkerHealth
from otel_eval.worker.results import ResultLedger, ResultsPublisher
from otel_eval.worker.settings import SOURCE_OTLP_SPANS, WorkerSettings
from otel_eval.worker.telemetry import WorkerTelemetry

logger = logging.getLogger(__name__)

_POLL_MS = 500
_RETRY_BACKOFF_S = 1.0
_CLIENT_STOP_SHARE = 0.6
"""Of the time left at shutdown, the share the Kafka clients get to stop gracefully (the rest: telemetry)."""
_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Worker:
    """One worker process: a member of the consumer group on the requests and/or ``otlp_spans`` topics.

    Args:
        settings: the worker's settings.
        core: evaluates and emits requests; built from ``settings`` and ``telemetry`` when None.
        telemetry: the providers the core emits through (flushed before every commit); none when None.
    """

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        core: RequestEvaluator | None = None,
        telemetry: WorkerTelemetry | None = None,
    ) -> None:
        self.settings = settings
        self.telemetry = telemetry or WorkerTelemetry()
        self.metrics = WorkerMetrics(self.telemetry.meter_provider)
        self.core = core if core is not None else build_core(settings, self.telemetry)
        self.ledger = ResultLedger(settings.worker_dedup_cache_size)
        self.cpu = DeadlineExecutor(settings.worker_record_timeout, name="OtelEvalWorkerCpu")
        """Decoding and rebuilding run here, off the event loop, each record within ``worker_record_timeout``."""
        self.assembler = TraceAssembler(
            settings.trace_idle_timeout,
            max_open_traces=settings.max_open_traces,
            max_spans_per_trace=settings.max_spans_per_trace,
        )
        self.started = asyncio.Event()
        self.health = WorkerHealth()
        self._http: HealthServer | None = None
        self.should_exit = False
        self._exit_event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._batch_idle: asyncio.Event | None = None
        self._readback_done = asyncio.Event()
        self._readback_done.set()
        self._consumer: Any = None
        self._producer: Any = None
        self._readback: Any = None
        self._publisher: ResultsPublisher | None = None
        self._batches = BatchPipeline(
            settings,
            telemetry=self.telemetry,
            metrics=self.metrics,
            core=self.core,
            ledger=self.ledger,
            cpu=self.cpu,
            assembler=self.assembler,
            health=self.health,
            request_exit=self.request_exit,
        )
        """Processes the fetched batches and keeps the partitions' offsets."""
        self._topics = settings.topics
        self._security = settings.security()
        self.broker = BrokerWatch(settings.servers, self._security, self.metrics, self.health)
        """Whether the broker is reachable, and the few log lines that say so."""
        self._uncommitted = False
        self.abandoned_uncommitted = False
        """After :meth:`serve`: whether the worker stopped with fetched records it had not committed (a batch it
        could not finish in time, or whose commit failed); the consumer group redelivers them."""
        self._exit_deadline: float | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Runs :meth:`serve` until SIGTERM/SIGINT, in a new event loop."""
        asyncio.run(self.serve(install_signal_handlers=True))

    async def serve(self, *, install_signal_handlers: bool = False) -> None:
        """Startup, main loop until :meth:`request_exit` (or a signal), then shutdown."""
        self._loop = asyncio.get_running_loop()
        self._exit_event = asyncio.Event()
        self._batch_idle = asyncio.Event()
        self._batch_idle.set()
        quiet_client_logs(self._loop, self.broker.on_client_record)
        signals = self.capture_signals() if install_signal_handlers else contextlib.nullcontext()
        self._start_http()
        background = [
            asyncio.create_task(self._heartbeat(), name="otel-eval-worker-heartbeat"),
            asyncio.create_task(self.broker.watch(lambda: self._consumer), name="otel-eval-worker-broker-watch"),
        ]
        exit_requested = asyncio.create_task(self._exit_event.wait())
        try:
            with signals:
                try:
                    if await self._until_exit(asyncio.create_task(self.startup()), exit_requested):
                        main = asyncio.create_task(self.main_loop(), name="otel-eval-worker-main")
                        await asyncio.wait([main, exit_requested], return_when=asyncio.FIRST_COMPLETED)
                        self._start_exit_clock()
                        await self._drain(main)
                finally:
                    self._start_exit_clock()
                    self.abandoned_uncommitted = self._uncommitted
                    await self.shutdown()
        finally:
            for task in [*background, exit_requested]:
                task.cancel()
            release_client_logs(self._loop)
            if self._http is not None:
                self._http.stop()
                self._http = None

    async def _until_exit(self, startup: asyncio.Task[None], exit_requested: asyncio.Task[Any]) -> bool:
        """Whether ``startup`` finished before an exit was requested (its error is raised); cancels it otherwise."""
        await asyncio.wait([startup, exit_requested], return_when=asyncio.FIRST_COMPLETED)
        if startup.done():
            startup.result()
            return True
        startup.cancel()
        await asyncio.wait([startup])
        return False

    def _start_exit_clock(self) -> None:
        self.should_exit = True
        if self._exit_deadline is None:
            self._exit_deadline = time.monotonic() + self.settings.worker_shutdown_timeout

    def _time_left(self) -> float:
        deadline = self._exit_deadline
        return self.settings.worker_shutdown_timeout if deadline is None else max(0.0, deadline - time.monotonic())

    def _start_http(self) -> None:
        """``/healthz``, ``/readyz`` and ``/metrics`` (see :mod:`otel_eval.worker.health`), unless the port is 0."""
        port = self.settings.worker_metrics_port
        if port:
            self._http = HealthServer(
                self.health, self.settings.worker_metrics_host, port, metrics_text=self.telemetry.metrics_text
            ).start()

    async def _heartbeat(self) -> None:
        while True:
            self.health.beat()
            await asyncio.sleep(HEARTBEAT_SECONDS)

    def request_exit(self) -> None:
        """Asks the worker to stop after its current batch. Thread-safe; also what SIGTERM does."""
        self.should_exit = True
        loop, event = self._loop, self._exit_event
        if loop is not None and event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Turns SIGINT/SIGTERM into :meth:`request_exit` while serving; restores the previous handlers after."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self._handle_signal) for sig in _HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    def _handle_signal(self, sig: int, frame: FrameType | None) -> None:
        logger.info("received %s: finishing the current batch, then stopping", signal.Signals(sig).name)
        self.request_exit()

    async def startup(self) -> None:
        """Starts the producer, the read-back consumer and the group consumer (joining the group)."""
        settings = self.settings
        security = settings.security()
        self._producer = create_producer(settings, security)
        await self._producer.start()
        dead_letters = DeadLetters(self._producer, settings.kafka_dead_letter_topic)
        if settings.kafka_results_topic:
            self._publisher = ResultsPublisher(self._producer, settings.kafka_results_topic)
            if settings.worker_dedup_readback > 0:
                self._readback = create_readback_consumer(settings, security)
                await self._readback.start()
        listener = RebalanceListener(self._on_revoked, self._on_assigned)
        self._consumer = create_consumer(settings, security, listener)
        self._batches.attach(self._consumer, dead_letters, self._publisher)
        await self._consumer.start()
        logger.info(
            "worker started: group %s, topics %s, bootstrap %s", settings.kafka_group_id, self._topics, settings.servers
        )
        self.health.started = True
        self.started.set()

    async def _drain(self, main: asyncio.Task[None]) -> None:
        """Lets the current batch finish within the first part of the exit time; abandons it uncommitted after."""
        timeout = self._time_left() * (1 - _CLIENT_STOP_SHARE / 2)
        try:
            await asyncio.wait_for(asyncio.shield(main), timeout=timeout)
        except asyncio.TimeoutError:
            logger.warning(
                "current batch did not finish within %.1f s: abandoned uncommitted (the group redelivers it)", timeout
            )
            main.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await main
        except Exception:  # the main loop failed: shutdown still runs, the error was logged by main_loop
            logger.debug("main loop ended with an error", exc_info=True)

    async def shutdown(self) -> None:
        """Leaves the group and stops every client, then flushes the telemetry, within the time left to exit.

        A client whose broker does not answer is closed without waiting for it. Open Collector-path traces are not
        evaluated: their offsets were not committed, so the next owner of the partition re-reads them."""
        self.health.group_member = False  # /readyz: draining, route nothing new here
        clients = [getattr(self, name) for name in ("_consumer", "_readback", "_producer")]
        self._consumer = self._readback = self._producer = None
        budget = self._time_left() * _CLIENT_STOP_SHARE
        stops = [stop_client(c, budget, describe=self._security.describe_error) for c in clients if c is not None]
        if not all(await asyncio.gather(*stops)):
            logger.debug("a Kafka client was closed without a graceful stop (the broker did not answer)")
        await asyncio.to_thread(
            self.telemetry.flush, max(0.1, min(self.settings.worker_flush_timeout, self._time_left()))
        )
        stop_sinks = getattr(self.core, "shutdown", None)  # the backend sinks (OTEL_EVAL_SINKS) deliver what they hold
        if callable(stop_sinks):
            await asyncio.to_thread(stop_sinks, int(max(0.1, self._time_left()) * 1000))
        abandoned = "; fetched records left uncommitted for the group" if self._uncommitted else ""
        logger.info("worker stopped%s: %s", abandoned, self.metrics.snapshot())

    # --- main loop ---------------------------------------------------------------------------------------------

    async def main_loop(self) -> None:
        """Fetch, process and commit batches until asked to exit."""
        assert self._consumer is not None and self._batch_idle is not None
        from aiokafka.errors import KafkaError

        while not self.should_exit:
            try:
                batch = await self._consumer.getmany(
                    timeout_ms=_POLL_MS, max_records=self.settings.worker_max_batch_size
                )
            except KafkaError as exc:  # e.g. a codec this process lacks: report it and keep trying, never skip data
                if for_want_of_the_broker(exc):
                    self.broker.failed(exc)
                else:
                    logger.error("fetching from Kafka failed: %s", self._security.describe_error(exc))
                self.metrics.error(type(exc).__name__)
                self.health.fetch_error = type(exc).__name__
                await asyncio.sleep(_RETRY_BACKOFF_S)
                continue
            if not self.broker.outage.unavailable:
                self.health.fetch_error = None
            ready = self.assembler.ready() if SOURCE_OTLP_SPANS in self.settings.sources else []
            if not batch and not ready:
                continue
            # Records of newly assigned partitions wait for the read-back of their recent results (de-duplication).
            await self._readback_done.wait()
            self._batch_idle.clear()
            self._uncommitted = True
            try:
                await self._batches.process(batch, ready)
                self._uncommitted = False
            except Exception as exc:  # a failed batch is retried from the committed offsets, never skipped
                if isinstance(exc, KafkaError) and for_want_of_the_broker(exc):
                    self.broker.failed(exc)  # an outage: the watcher reports it once, not each retry
                elif isinstance(exc, KafkaError):
                    logger.warning(
                        "batch failed: %s; re-reading from the last committed offsets",
                        self._security.describe_error(exc),
                    )
                else:
                    logger.exception("batch failed; re-reading from the last committed offsets")
                self.metrics.error(type(exc).__name__)
                self._batches.rewind()
                await asyncio.sleep(_RETRY_BACKOFF_S)
            finally:
                self._batch_idle.set()

    # --- rebalances --------------------------------------------------------------------------------------------

    async def _on_revoked(self, revoked: set[Any]) -> None:
        assert self._batch_idle is not None
        self.health.group_member = False
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._batch_idle.wait(), timeout=self.settings.kafka_session_timeout_ms / 2000)
        self._batches.forget(revoked)

    async def _on_assigned(self, assigned: set[Any]) -> None:
        logger.info("partitions assigned: %s", sorted((tp.topic, tp.partition) for tp in assigned))
        self.health.group_member = True
        if self._publisher is None or self._readback is None or not assigned:
            return
        self._readback_done.clear()
        try:
            read = await self._publisher.read_back(
                self._readback, {tp.partition for tp in assigned}, self.settings.worker_dedup_readback, self.ledger
            )
            logger.info("read back %d recent results for de-duplication", read)
        except Exception as exc:  # noqa: BLE001 - without read-back, redelivered work is evaluated again (at-least-once)
            logger.warning("reading back recent results failed: %r", exc)
            self.metrics.error("readback_failed")
        finally:
            self._readback_done.set()


def build_core(settings: WorkerSettings, telemetry: WorkerTelemetry) -> RequestEvaluator:
    """The shared evaluation core, configured from ``settings``, emitting through ``telemetry``'s providers; its
    judge is the process-wide one (from the environment), reporting its calls through ``telemetry``'s meter provider.

    Raises:
        ConfigurationError: bad criteria or eval set.
    """
    from otel_eval.emit import Emitters
    from otel_eval.emit.pipeline import PipelineMetrics
    from otel_eval.emit.sinks import sinks_from_env
    from otel_eval.evaluation.core import EvaluationCore
    from otel_eval.judge import default_judge
    from otel_eval.model.loading import criteria_setting, eval_set_setting

    emitters = Emitters.create(
        tracer_provider=telemetry.tracer_provider,
        logger_provider=telemetry.logger_provider,
        meter_provider=telemetry.meter_provider,
        sinks=sinks_from_env(meter_provider=telemetry.meter_provider),  # OTEL_EVAL_SINKS: backends' score APIs
    )
    judge = default_judge()
    judge.use_meter_provider(telemetry.meter_provider)
    return EvaluationCore(
        criteria=criteria_setting(settings.criteria, setting=f"{env.OTEL_EVAL_CRITERIA} / --criteria"),
        judge=judge,
        eval_set=eval_set_setting(settings.eval_set, setting=f"{env.OTEL_EVAL_EVAL_SET} / --eval-set"),
        emitters=emitters,
        pipeline=PipelineMetrics(telemetry.meter_provider, transport="kafka"),
    )
