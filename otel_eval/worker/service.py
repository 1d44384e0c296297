"""``Worker``: the ``otel-eval worker`` service (startup, main loop, graceful shutdown), shaped like uvicorn's server.

Per batch of fetched messages: parse (unreadable ones go to the dead-letter topic), gather Collector-path spans into
traces (decoding, parsing and rebuilding run off the event loop, each record within ``worker_record_timeout``: a
record past it is dead-lettered too, and the partition moves on, see :mod:`otel_eval._runtime.deadline`), evaluate
the requests with the shared :class:`~otel_eval.evaluation.core.EvaluationCore` (bounded concurrency), export the
batch's telemetry, publish the results, and only then commit the offsets (at-least-once). Redelivered
invocations whose results were already emitted are skipped (see :mod:`otel_eval.worker.results` for the exact
guarantee). SIGTERM/SIGINT stop intake; the process is done within ``worker_shutdown_timeout`` seconds: the current
batch is finished in the first part of it, otherwise cut short (what finished is published and committed, the rest
left uncommitted, :attr:`Worker.abandoned_uncommitted`; the group redelivers it), and the Kafka clients are stopped in the rest, closed without waiting for a broker that does not
answer. A second SIGINT abandons the batch at once. After a graceful stop :meth:`Worker.run` raises the caught signal
again under the handlers it restored (uvicorn's ``capture_signals``).

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
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any

from otel_eval._runtime.deadline import DeadlineExecutor
from otel_eval.errors import OtelEvalError
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.transport import RequestEvaluator, is_retriable, quiet_client_logs, release_client_logs, stop_client
from otel_eval.worker._batches import BatchPipeline
from otel_eval.worker._evaluator import build_core, worker_core
from otel_eval.worker._export_watch import ExportWatch
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker._poll_keeper import PollKeeper
from otel_eval.worker._rebalances import Rebalances
from otel_eval.worker._supervisor import Supervisor, cancel_and_wait
from otel_eval.worker.collector_path import TraceAssembler
from otel_eval.worker.consumer import (
    BrokerWatch,
    WorkerClients,
    create_consumer,
    create_producer,
    create_readback_consumer,
    max_poll_interval_ms,
)
from otel_eval.worker.dead_letter import DeadLetters
from otel_eval.worker.health import HEARTBEAT_SECONDS, HealthServer, WorkerHealth
from otel_eval.worker.results import ResultLedger, ResultsPublisher
from otel_eval.worker.settings import WorkerSettings
from otel_eval.worker.telemetry import WorkerTelemetry

logger = logging.getLogger(__name__)

_POLL_MS = 500
_RETRY_BACKOFF_S = 1.0
_CLIENT_STOP_SHARE = 0.6
"""Of the time left at shutdown, the share the Kafka clients get to stop gracefully (the rest: telemetry)."""
_CUT_SHARE = 0.5
"""Of the time left when the current batch did not finish, the share it gets to settle what finished (cut short)."""
_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class WorkerFailed(OtelEvalError):
    """The worker stopped because something failed: it could not start (its health port was taken, its clients
    could not start), a task died, or too many records past their deadline were still running. The cause is chained;
    ``otel-eval worker`` exits 1."""


class Worker:
    """One worker process: a member of the consumer group on the requests and/or ``otlp_spans`` topics.

    Lifecycle (uvicorn's ``Server``): :meth:`run` serves in a new event loop with SIGINT/SIGTERM captured;
    :meth:`serve` starts the worker's tasks (the main loop after :meth:`startup`, the heartbeat, the broker watch)
    under supervision and waits for the one exit request (:meth:`request_exit`, a signal, or a task that died), then
    drains the current batch and runs :meth:`shutdown`. A second SIGINT forces the exit: the batch is abandoned
    uncommitted and the Kafka clients are closed without waiting for the broker.

    Args:
        settings: the worker's settings.
        core: evaluates and emits requests; built from ``settings`` and ``telemetry`` when None. Any other
            :class:`~otel_eval.transport.RequestEvaluator` (the earlier form) is deprecated: it works until 0.3.0,
            with a ``DeprecationWarning``, scoring each request alone (no session held).
        telemetry: the providers the core emits through (flushed before every commit); none when None.

    Raises:
        ConfigurationError: a consumed source without a topic (:meth:`WorkerSettings.check_topics`), a bad setting.
    """

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        core: EvaluationCore | RequestEvaluator | None = None,
        telemetry: WorkerTelemetry | None = None,
    ) -> None:
        settings.check_topics()
        self.settings = settings
        self.telemetry = telemetry or WorkerTelemetry()
        self.metrics = WorkerMetrics(self.telemetry.meter_provider)
        self.core = worker_core(core) if core is not None else build_core(settings, self.telemetry, self.metrics)
        self.ledger = ResultLedger(settings.worker_dedup_cache_size)
        self.cpu = DeadlineExecutor(settings.worker_record_timeout, name="OtelEvalWorkerCpu")
        """Decoding and rebuilding run here, off the event loop, each record within ``worker_record_timeout``."""
        self.assembler = TraceAssembler(
            settings.trace_idle_timeout,
            max_open_traces=settings.max_open_traces,
            max_spans_per_trace=settings.max_spans_per_trace,
            max_trace_age=settings.max_trace_age,
            max_open_traces_per_tenant=settings.max_open_traces_per_tenant,
        )
        self.started = asyncio.Event()
        """Set once the worker's clients are started and it has joined its group."""
        self.health = WorkerHealth()
        self._exports = ExportWatch(self.telemetry, self.health)
        self.force_exit = False
        """A second SIGINT arrived: stop now, abandoning the current batch uncommitted."""
        self.error: BaseException | None = None
        """After :meth:`serve`: why the worker stopped when one of its tasks failed (:meth:`serve` raised it)."""
        self.abandoned_uncommitted = False
        """After :meth:`serve`: whether the worker stopped with fetched records it had not committed (a batch it
        could not finish in time, or whose commit failed); the consumer group redelivers them."""
        self._exit = asyncio.Event()
        """The one exit request: set by :meth:`request_exit` (signals, a failed task, a caller)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._captured_signals: list[int] = []
        self._stopping: asyncio.Task[None] | None = None
        self._http: HealthServer | None = None
        self._clients = WorkerClients()
        self._batches = BatchPipeline(
            settings,
            telemetry=self.telemetry,
            metrics=self.metrics,
            core=self.core,
            ledger=self.ledger,
            cpu=self.cpu,
            assembler=self.assembler,
            health=self.health,
            fail=self.fail,
        )
        """Processes the fetched batches and keeps the partitions' offsets."""
        self._topics = settings.topics
        self._security = settings.security()
        self.broker = BrokerWatch(settings.servers, self._security, self.metrics, self.health)
        """Whether the broker is reachable, and the few log lines that say so."""
        self._rebalances = Rebalances(
            settings,
            batches=self._batches,
            clients=self._clients,
            ledger=self.ledger,
            metrics=self.metrics,
            health=self.health,
        )
        self._uncommitted = False
        self._exit_deadline: float | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[tuple[str, int]]:
        """The (topic, partition) pairs assigned to this worker by its group now (empty while rebalancing)."""
        return self._rebalances.assignment

    @property
    def stopped_by(self) -> int | None:
        """The signal that asked this worker to stop (the first caught), or None. :meth:`run` raises it again after a
        graceful stop; a process that inherited it ignored (a non-interactive shell's background job ignores SIGINT)
        is not ended by that, so its caller exits as the signal would have (the CLI's 130 or 143)."""
        return self._captured_signals[0] if self._captured_signals else None

    @property
    def should_exit(self) -> bool:
        """Whether an exit was requested (the worker finishes its current batch, then stops)."""
        return self._exit.is_set()

    def run(self) -> None:
        """The process's main: :meth:`serve` in a new event loop with SIGINT/SIGTERM captured, then the telemetry
        shut down. After a graceful stop the caught signal is raised again with the previous handlers restored
        (so the process ends as that signal says); after a stop that left fetched records uncommitted
        (:attr:`abandoned_uncommitted`) it is not, and ``run`` returns.

        Raises:
            WorkerFailed: a task of the worker failed (the worker was shut down first).
        """
        with self.capture_signals():
            try:
                asyncio.run(self.serve())
            finally:
                self.telemetry.shutdown()

    async def serve(self) -> None:
        """Startup, the main loop and the background tasks until the exit request, then drain and shutdown.

        Raises:
            WorkerFailed: a task failed (startup, the main loop, the heartbeat, the broker watch); the worker was
                shut down first. Or the health endpoints could not be served (nothing was started).
        """
        self._loop = asyncio.get_running_loop()
        self._start_http()
        quiet_client_logs(self._loop, self.broker.on_client_record)
        self._exports.start()
        tasks = Supervisor(self.fail)
        main = tasks.start(self._consume(), "otel-eval-worker-main")
        tasks.start(self._heartbeat(), "otel-eval-worker-heartbeat")
        tasks.start(self.broker.watch(lambda: self._clients.consumer), "otel-eval-worker-broker-watch")
        try:
            await self._exit.wait()
            self._exit_deadline = time.monotonic() + self.settings.worker_shutdown_timeout
            stopping = self._stopping = asyncio.create_task(self._stop(main))
            if self.force_exit:
                stopping.cancel()
            await asyncio.wait([stopping])  # cancelled by a second SIGINT (_force), not by its own errors
            if stopping.cancelled():  # forced: close whatever is still open without waiting for the broker
                await cancel_and_wait(main)
                await self._close_clients(0.0)
            elif (error := stopping.exception()) is not None:  # the shutdown itself failed
                self.fail(error)
        finally:
            await tasks.stop()
            release_client_logs(self._loop)
            self._exports.stop()
            if self._http is not None:
                self._http.stop()
                self._http = None
            self.abandoned_uncommitted = self._uncommitted = self._uncommitted or self._batches.cut.left_uncommitted
            abandoned = "; fetched records left uncommitted for the group" if self._uncommitted else ""
            logger.info("worker stopped%s: %s", abandoned, self.metrics.snapshot())
            if self.error is not None:  # said now: the telemetry's last flush (to an absent collector) may take seconds
                reason = self.settings.security().redact(f"{type(self.error).__name__}: {self.error}")
                logger.error("worker failed: %s", reason)
        if self.error is not None:
            raise WorkerFailed(f"{type(self.error).__name__}: {self.error}") from self.error

    async def _consume(self) -> None:
        await self.startup()
        await self.main_loop()

    async def _stop(self, main: asyncio.Task[None]) -> None:
        """The graceful part of stopping: the current batch within its share of the time, then :meth:`shutdown`."""
        if self.health.started:
            await self._drain(main)
        else:  # still starting (joining the group): nothing fetched yet
            await cancel_and_wait(main)
        await self.shutdown()

    def _time_left(self) -> float:
        deadline = self._exit_deadline
        return self.settings.worker_shutdown_timeout if deadline is None else max(0.0, deadline - time.monotonic())

    def _start_http(self) -> None:
        """``/healthz``, ``/readyz`` and ``/metrics`` (see :mod:`otel_eval.worker.health`), unless the port is 0."""
        host, port = self.settings.metrics_host, self.settings.worker_metrics_port
        if not port:
            return
        try:
            self._http = HealthServer(self.health, host, port, metrics_text=self.telemetry.metrics_text).start()
        except OSError as exc:  # e.g. the port is taken
            raise WorkerFailed(f"cannot serve /healthz, /readyz, /metrics on {host}:{port}: {exc}") from exc

    async def _heartbeat(self) -> None:
        while True:
            self.health.beat()
            self._exports.check()
            await asyncio.sleep(HEARTBEAT_SECONDS)

    def request_exit(self) -> None:
        """Asks the worker to stop after its current batch. Thread-safe; also what SIGTERM and SIGINT do."""
        self._on_loop(self._exit.set)

    def fail(self, error: BaseException) -> None:
        """Stops the worker because of ``error`` (a task that died, or a failure its tasks cannot recover from):
        :meth:`serve` raises it after the shutdown. The first error wins. Thread-safe."""
        if self.error is None:
            self.error = error
        self.request_exit()

    def _force(self) -> None:
        """Stops waiting: the current batch and the graceful shutdown are abandoned."""
        self._exit.set()
        if self._stopping is not None:
            self._stopping.cancel()

    def _on_loop(self, callback: Callable[[], None]) -> None:
        """``callback()`` on the worker's loop, woken for it: from any thread, and from a signal handler (which may
        interrupt the loop's own code, so nothing is changed in place)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            callback()  # not serving: nothing waits on the event
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the worker has stopped
            loop.call_soon_threadsafe(callback)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Turns SIGINT/SIGTERM into an exit request while serving (a second SIGINT forces the exit), restores the
        previous handlers after, and then, after a graceful stop, raises the caught signals again (uvicorn's
        ``capture_signals``). Does nothing outside the main thread (signals are only delivered there)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in _HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
        if self.abandoned_uncommitted:
            return  # the caller reports the records left to the group (the CLI's exit code 75)
        for captured in reversed(self._captured_signals):  # last in, first out, as the kernel would deliver them
            signal.raise_signal(captured)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The handler of SIGINT and SIGTERM while serving: the first requests the exit; a second SIGINT forces it."""
        already = self.should_exit or bool(self._captured_signals)  # the event is set on the loop's next turn
        self._captured_signals.append(sig)
        name = signal.Signals(sig).name
        if already and sig == signal.SIGINT:
            logger.warning("received %s again: stopping now, the current batch is left uncommitted", name)
            self.force_exit = True
            self._on_loop(self._force)
        else:
            logger.info("received %s: finishing the current batch, then stopping", name)
            self.request_exit()

    async def startup(self) -> None:
        """Starts the producer, the read-back consumer and the group consumer (joining the group)."""
        settings = self.settings
        clients = self._clients
        clients.producer = create_producer(settings, self._security)
        await clients.producer.start()
        dead_letters = DeadLetters(clients.producer, settings.kafka_dead_letter_topic)
        if settings.kafka_results_topic:
            clients.publisher = ResultsPublisher(clients.producer, settings.kafka_results_topic)
            if settings.worker_dedup_readback > 0:
                clients.readback = create_readback_consumer(settings, self._security)
                await clients.readback.start()
        clients.consumer = create_consumer(settings, self._security, self._rebalances)
        self._batches.attach(clients.consumer, dead_letters, clients.publisher, clients.producer)
        await clients.consumer.start()
        logger.info(
            "worker started: group %s, topics %s, bootstrap %s", settings.kafka_group_id, self._topics, settings.servers
        )
        self.health.started = True
        self.started.set()

    async def _drain(self, main: asyncio.Task[None]) -> None:
        """Lets the current batch finish within the first part of the exit time; then cuts it short: what finished
        is published and committed (per partition, up to the first record not finished), the rest is left to the
        group. A batch that cannot even settle that in time is abandoned uncommitted."""
        timeout = self._time_left() * (1 - _CLIENT_STOP_SHARE / 2)
        done, _ = await asyncio.wait([main], timeout=timeout)
        if done:
            return
        logger.warning(
            "current batch did not finish within %.1f s: committing what finished, the rest is left to the group",
            timeout,
        )
        self._batches.cut.request()
        done, _ = await asyncio.wait([main], timeout=self._time_left() * _CUT_SHARE)
        if not done:
            logger.warning(
                "current batch could not be settled in time: abandoned uncommitted (the group redelivers it)"
            )
            await cancel_and_wait(main)

    async def shutdown(self) -> None:
        """Leaves the group and stops every client, then flushes the telemetry, within the time left to exit.

        A client whose broker does not answer is closed without waiting for it. Open Collector-path traces and open
        sessions are not evaluated: their offsets were not committed, so the next owner of the partition re-reads
        them."""
        await self._close_clients(self._time_left() * _CLIENT_STOP_SHARE)
        await asyncio.to_thread(
            self.telemetry.flush, max(0.1, min(self.settings.worker_flush_timeout, self._time_left()))
        )
        # the backend sinks (OTEL_EVAL_SINKS) deliver what they hold
        await asyncio.to_thread(self.core.shutdown, int(max(0.1, self._time_left()) * 1000))

    async def _close_clients(self, budget: float) -> None:
        self.health.group_member = False  # /readyz: draining, route nothing new here
        stops = [stop_client(c, budget, describe=self._security.describe_error) for c in self._clients.take()]
        if not all(await asyncio.gather(*stops)):
            logger.debug("a Kafka client was closed without a graceful stop (the broker did not answer)")

    # --- main loop ---------------------------------------------------------------------------------------------

    async def main_loop(self) -> None:
        """Fetch, process and commit batches until asked to exit (call after :meth:`startup`).

        A batch's results are published and its offsets committed while the next batch is fetched and evaluated;
        before the loop ends, the last batch is committed (or left uncommitted when that fails)."""
        from aiokafka.errors import KafkaError

        consumer = self._clients.consumer
        keeper = PollKeeper(consumer, max_poll_interval_ms(self.settings))
        try:
            while not self.should_exit and consumer is not None:
                try:
                    if (error := keeper.take_error()) is not None:  # a poll while the last batch ran failed
                        raise error
                    poll = self._batches.poll_timeout_ms(_POLL_MS)  # shorter when a session's idle deadline is nearer
                    batch = await consumer.getmany(timeout_ms=poll, max_records=self.settings.worker_max_batch_size)
                    await self._batches.observe_lag()
                except KafkaError as exc:  # e.g. a codec this process lacks: report it and keep trying, never skip
                    if is_retriable(exc):
                        self.broker.failed(exc)
                    else:
                        logger.error("fetching from Kafka failed: %s", self._security.describe_error(exc))
                    self.metrics.error(type(exc).__name__)
                    self.health.fetch_error = type(exc).__name__
                    await asyncio.sleep(_RETRY_BACKOFF_S)
                    continue
                if not self.broker.outage.unavailable:
                    self.health.fetch_error = None
                ready = [] if batch else await self._batches.idle_traces()  # with a batch: after adding its spans
                if batch or ready or self._batches.sessions_due:
                    # Records of newly assigned partitions wait for the read-back of their recent results.
                    await self._rebalances.readback_done.wait()
                    self._uncommitted = True
                    async with keeper.running():  # a batch longer than the max poll interval keeps the group
                        await self._retrying(self._batches.process(batch, ready))
                elif self._batches.settled_pending:  # idle: collect the last batch's commit (or its failure)
                    await self._retrying(self._batches.settled())
            if self._batches.settling:
                await self._retrying(self._batches.settled())
        finally:
            self._batches.cancel()  # cancelled (the batch abandoned): nothing more is committed

    async def _retrying(self, step: Coroutine[Any, Any, None]) -> None:
        """Runs ``step`` of the batch pipeline; when it fails, once nothing is being committed any more, re-reads from
        the last committed offsets (a failed batch is retried, never skipped)."""
        from aiokafka.errors import KafkaError

        self._rebalances.batch_idle.clear()
        try:
            await step
            if not self._batches.settling:
                self._uncommitted = False
        except Exception as exc:
            if isinstance(exc, KafkaError) and is_retriable(exc):
                self.broker.failed(exc)  # an outage: the watcher reports it once, not each retry
            elif isinstance(exc, KafkaError):
                logger.warning(
                    "batch failed: %s; re-reading from the last committed offsets", self._security.describe_error(exc)
                )
            else:
                logger.exception("batch failed; re-reading from the last committed offsets")
            self.metrics.error(type(exc).__name__)
            with contextlib.suppress(Exception):  # the batch before it, if still settling, settles or fails first
                await self._batches.settled()
            self._batches.rewind()
            await asyncio.sleep(_RETRY_BACKOFF_S)
        finally:
            self._rebalances.batch_idle.set()
