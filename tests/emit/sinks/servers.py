"""The real backends of the sink tests: Arize Phoenix and MLflow from PyPI, each in a venv of its own, on loopback.

Each venv is created on first use under ``.venv-backends/`` of the checkout (``OTEL_EVAL_TEST_BACKENDS`` moves it)
with a pinned version, so their dependency trees never touch the project's; a lock file keeps two pytest workers
from creating the same one at once. :class:`BackendServer` runs one server on a free loopback port with its data in a
temporary directory, and can be stopped and started again on the same port (the outage tests).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BACKENDS = Path(os.environ.get("OTEL_EVAL_TEST_BACKENDS") or ROOT / ".venv-backends")
PHOENIX_REQUIREMENT = "arize-phoenix==20.26.1"
MLFLOW_REQUIREMENT = "mlflow==3.17.2"
START_TIMEOUT_S = 300.0
"""A cold start of Phoenix (its database migrations) on a busy two-core machine takes minutes."""
POLL_S = 0.1
"""How often a starting server's health endpoint is asked (each ask costs the server little; a late answer costs a
test the rest of the interval)."""


def backend_venv(name: str, requirement: str) -> Path:
    """The ``bin`` directory of the venv ``name`` with ``requirement`` installed, created when missing or stale."""
    venv = BACKENDS / name
    stamp = venv / ".requirement"
    BACKENDS.mkdir(parents=True, exist_ok=True)
    with open(BACKENDS / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.exists() and stamp.read_text() == requirement):
            shutil.rmtree(venv, ignore_errors=True)
            started = time.monotonic()
            print(f"installing {requirement} into {venv}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            _install(venv / "bin", requirement)
            stamp.write_text(requirement)
            print(f"installed {requirement} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return venv / "bin"


def _install(bin_dir: Path, *requirements: str) -> None:
    """``requirements`` into the venv of ``bin_dir`` with uv (a fraction of pip's time and CPU, which the tests running
    beside it share), or with pip where uv cannot install them (uv does not read pip.conf), as the Makefile installs the
    project's venv. Not compiled to bytecode: the servers write it as they import (:class:`BackendServer`)."""
    python = str(bin_dir / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "uv"], check=True)
    uv = [str(bin_dir / "uv"), "pip", "install", "-q", "--python", python, *requirements]
    if subprocess.run(uv).returncode != 0:
        subprocess.run([*pip, *requirements], check=True)


def free_port() -> int:
    """A loopback port free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BackendServer:
    """One backend's server process on loopback: ``command`` with ``env``, ready when ``health`` answers 200.

    Args:
        name: For messages and the log file name.
        command: The server's command line.
        env: Variables added to this process's environment.
        port: Its HTTP port.
        health: The path answering 200 once it serves.
        workdir: Where its data and log live.
    """

    def __init__(
        self, name: str, command: Sequence[str], env: dict[str, str], port: int, health: str, workdir: Path
    ) -> None:
        self.name = name
        self._command = list(command)
        # Bytecode written as it imports, whatever the caller's PYTHONDONTWRITEBYTECODE: with it, every start compiled
        # all it imports again (Phoenix's took ~38 s of CPU instead of ~20 s).
        self._env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | env
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._health = health
        self._workdir = workdir
        self._process: subprocess.Popen[bytes] | None = None
        self._started = 0.0
        self.start_seconds: list[float] = []

    def start(self) -> None:
        """Starts the server and waits until it answers (:data:`START_TIMEOUT_S` at most)."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Starts the server's process without waiting for it (:func:`start_all` starts several at once)."""
        log = open(self._workdir / f"{self.name}.log", "ab")  # noqa: SIM115 - the child writes it until it stops
        self._started = time.monotonic()
        self._process = subprocess.Popen(
            self._command, env=self._env, cwd=self._workdir, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Waits until the launched server answers on its health path, ``timeout`` seconds after its launch at most
        (asked at least once, however long ago it was launched)."""
        import httpx2  # here, not at the top: `make backends` runs this module with the bare Python of a fresh machine

        process, started = self._process, self._started
        assert process is not None, f"{self.name} was not launched"
        deadline = started + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {process.returncode}: {self.log_tail()}")
            try:
                if httpx2.get(self.url + self._health, timeout=2.0).status_code == 200:
                    self.start_seconds.append(time.monotonic() - started)
                    return
            except httpx2.TransportError:
                pass
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {timeout:.0f} s: {self.log_tail()}")

    def stop(self) -> None:
        """Stops the server (SIGTERM, then SIGKILL after 15 s)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def log_tail(self, lines: int = 20) -> str:
        path = self._workdir / f"{self.name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def start_all(*servers: BackendServer) -> None:
    """Starts ``servers`` side by side (their cold starts overlap) and waits until each answers; when one fails, stops
    them all and raises. Each may take :data:`START_TIMEOUT_S` per server started: they share the cores."""
    try:
        for server in servers:
            server.launch()
        for server in servers:
            server.wait_ready(START_TIMEOUT_S * len(servers))
    except BaseException:
        for server in servers:
            server.stop()
        raise


def phoenix_server(workdir: Path) -> BackendServer:
    """``phoenix serve`` (Arize Phoenix from PyPI) on free loopback ports, its database under ``workdir``."""
    bin_dir = backend_venv("phoenix", PHOENIX_REQUIREMENT)
    port = free_port()
    env = {
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    return BackendServer("phoenix", [str(bin_dir / "phoenix"), "serve"], env, port, "/healthz", workdir)


def mlflow_server(workdir: Path) -> BackendServer:
    """``mlflow server`` (MLflow from PyPI) on a free loopback port, a SQLite store under ``workdir``."""
    bin_dir = backend_venv("mlflow", MLFLOW_REQUIREMENT)
    port = free_port()
    command = [
        str(bin_dir / "mlflow"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--backend-store-uri",
        f"sqlite:///{workdir / 'mlflow.db'}",
        "--default-artifact-root",
        str(workdir / "artifacts"),
        "--workers",
        "1",
    ]
    env = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    return BackendServer("mlflow", command, env, port, "/health", workdir)


class CuttableLink:
    """A loopback TCP proxy to ``port`` that can be cut (connections refused, open ones reset) and restored on
    the same port: a backend that is down for a while, without restarting it.

    Args:
        port: The backend's port on 127.0.0.1.
    """

    def __init__(self, port: int) -> None:
        self._target = port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def restore(self) -> None:
        """Accepts connections again, forwarding each to the backend."""
        listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Closes the listening socket and every open connection: the backend is unreachable."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: no connection gets through after
            listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    for sock in (source, sink):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


if __name__ == "__main__":  # `make backends`: both venvs up front, beside other work (the fixtures wait on the lock)
    threads = [
        threading.Thread(target=backend_venv, args=(name, requirement))
        for name, requirement in (("phoenix", PHOENIX_REQUIREMENT), ("mlflow", MLFLOW_REQUIREMENT))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
