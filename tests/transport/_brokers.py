"""Broker faults for outage tests: a tansu broker that keeps its data across a restart, and a hung broker.

:class:`DurableTansu` stores topics, records and group offsets in S3 served by ``moto_server`` (moto's standalone
server, a separate process), so stopping and starting the broker keeps them, as a real Kafka broker's log does.
:func:`hung` freezes a broker with SIGSTOP (its port still accepts connections, nothing answers) and thaws it with
SIGCONT: the process and its state are kept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests._kafka import TansuBroker, free_port, stop_process, tansu_binary

BUCKET = "tansu"


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


class MotoS3:
    """``moto_server`` on a loopback port with one bucket for tansu (data in the server's memory)."""

    def __init__(self) -> None:
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoS3:
        binary = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
        self._process = subprocess.Popen(
            [binary, "-H", "127.0.0.1", "-p", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_for_port(self.port, self._process, 30, "moto_server")
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{BUCKET}", method="PUT"), timeout=10).close()
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        stop_process(process)


class DurableTansu(TansuBroker):
    """A tansu broker on ``s3://`` storage in :class:`MotoS3`: restartable on the same port with its data."""

    def __init__(self, s3: MotoS3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.s3 = s3

    def start(self, timeout: float = 10.0) -> None:
        """Starts the broker on the S3 storage and waits until its port accepts connections."""
        cmd = [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{self.port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{self.advertised_port}",
            "--storage-engine",
            f"s3://{BUCKET}/",
        ]
        env = {
            **os.environ,
            "RUST_LOG": os.environ.get("TANSU_TEST_LOG", "warn"),
            "AWS_ENDPOINT": self.s3.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        self._process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            _wait_for_port(self.port, self._process, timeout, "tansu")
        except RuntimeError:
            self.stop()
            raise


@contextlib.contextmanager
def durable_broker() -> Iterator[DurableTansu]:
    """A started :class:`DurableTansu` with its S3 server; both stopped on exit."""
    s3 = MotoS3().start()
    broker = DurableTansu(s3)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
        s3.stop()


def _pid(broker: TansuBroker) -> int:
    process = broker._process
    assert process is not None and process.poll() is None, "the broker is not running"
    return process.pid


@contextlib.contextmanager
def hung(broker: TansuBroker) -> Iterator[None]:
    """The broker frozen (SIGSTOP) inside the block: connections are accepted, no request is answered."""
    pid = _pid(broker)
    os.kill(pid, signal.SIGSTOP)
    _wait_for_state(pid, "T")  # the signal is delivered asynchronously: a loaded machine may still answer a request
    try:
        yield
    finally:
        os.kill(_pid(broker), signal.SIGCONT)


def _wait_for_state(pid: int, state: str, timeout: float = 10.0) -> None:
    """Waits until ``/proc/<pid>/stat`` reports ``state`` (``T``: stopped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == state:
                return
        time.sleep(0.005)
    raise AssertionError(f"process {pid} did not reach state {state!r} within {timeout} s")
