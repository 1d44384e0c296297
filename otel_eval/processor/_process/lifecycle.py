"""The evaluation process itself, as the agent's side of ``isolation="process"`` sees it: started with its settings
over a private socket, asked to flush or stop and waited for within a deadline, restarted with a backoff when lost.

:class:`~otel_eval.processor._process.feeder.EvaluationProcess` feeds it; this module only knows the process and
its socket, never the spans (what a lost child took with it is counted by
:class:`~otel_eval.processor._process.supervisor.ChildSupervisor`).
"""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from otel_eval.processor._process.framing import receive_message, send_message
from otel_eval.processor._process.messages import ChildSettings, Config, Flush, FromChild, Reply, Shutdown, ToChild
from otel_eval.processor._process.taken import SentCounts, Unfinished

CHILD_MODULE: Final = "otel_eval.processor._process.main"
SEND_TIMEOUT_SECONDS = 10.0
"""A child that reads nothing for this long is taken for hung: killed and restarted."""
RESTART_BACKOFF_SECONDS = (1.0, 30.0)
EXIT_WAIT_SECONDS: Final = 1.0
"""How long a child whose socket broke is given to exit on its own, so its exit code says why."""
EXIT_CANNOT_START: Final = 78
"""The evaluation process's exit code when its configuration cannot be used (``EX_CONFIG``: custom metric code it
cannot import, ...): it said why in one line, and it is not started again."""


def child_command(module: str, *args: str) -> list[str]:
    """The command line that runs ``python -m module args`` with a safe ``sys.path`` (``-P``): the working directory
    (the agent's, possibly writable by others) is not on it, so a module there cannot shadow a dependency of the
    process that holds the judge's key."""
    return safe_python("-m", module, *args)


def safe_python(*args: str) -> list[str]:
    """This interpreter with ``args``, started with the evaluation process's safe ``sys.path`` (``-P``)."""
    return [sys.executable, "-P", *args]


@dataclass(slots=True)
class Child:
    """A running evaluation process and this side of its socket."""

    process: subprocess.Popen[bytes]
    sock: socket.socket
    counts: SentCounts
    """What it was sent, and what of that it took (:mod:`~otel_eval.processor._process.taken`)."""
    requests: int = 0  # control messages sent: each one's sequence number

    @classmethod
    def spawn(cls, settings: ChildSettings, lost_traces: Sequence[int]) -> Child:
        """Starts ``python -m`` :data:`CHILD_MODULE` and sends it its settings, with the ids of traces it must drop
        whole (a lost predecessor had part of them).

        Raises:
            OSError, ValueError: the process could not be started or written to.
        """
        counts = SentCounts()
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                child_command(CHILD_MODULE, str(theirs.fileno()), str(counts.fd)),
                pass_fds=(theirs.fileno(), counts.fd),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            counts.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(SEND_TIMEOUT_SECONDS)
        try:
            send_message(ours, Config(settings, list(lost_traces)))
        except OSError:
            ours.close()
            counts.close()
            process.kill()
            process.wait()
            raise
        return cls(process, ours, counts)

    @property
    def running(self) -> bool:
        """Whether the process has not exited."""
        return self.process.poll() is None

    def behind(self) -> bool:
        """Whether it has not read enough of what was sent for another batch to go without waiting (the kernel's
        own test: a quarter of the socket's buffer holds what it has not read yet).

        Raises:
            OSError, ValueError: the socket is broken.
        """
        return not select.select([], [self.sock], [], 0)[1]

    def sent_on_its_own(self) -> list[ToChild | FromChild]:
        """What it sent besides replies (score attributes, records) and is waiting to be read, without waiting.

        Raises:
            OSError, WireError, ValueError: the socket is broken, or a frame cannot be read.
        """
        messages = []
        while select.select([self.sock], [], [], 0)[0]:
            messages.append(receive_message(self.sock))
        return messages

    def ask(
        self, message: Flush | Shutdown, deadline: float, other: Callable[[ToChild | FromChild], None]
    ) -> Reply | None:
        """Sends a control message and waits for its :class:`~otel_eval.processor._process.messages.Reply` until ``deadline``
        (None past it); what else arrives meanwhile goes to ``other``; older flushes' late replies are skipped.

        Raises:
            OSError, WireError, ValueError: the socket is broken, or a frame cannot be read.
        """
        try:
            send_message(self.sock, message)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.sock.settimeout(remaining)
                reply = receive_message(self.sock)
                if not isinstance(reply, Reply):
                    other(reply)
                elif reply.sequence == message.sequence:  # an older flush's late reply is skipped
                    return reply
        except TimeoutError:
            return None
        finally:
            with contextlib.suppress(OSError):
                self.sock.settimeout(SEND_TIMEOUT_SECONDS)

    def exited_with(self, code: int, wait: float = EXIT_WAIT_SECONDS) -> bool:
        """Whether the process exited with ``code``, waiting at most ``wait`` seconds for it to exit (its socket
        broke: it is going)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(wait)
        return self.process.returncode == code

    def kill(self) -> Unfinished:
        """Closes the socket and kills the process (reaped within a second); returns the ended spans and log records
        it was sent and did not finish with (never took: written while it was dying, or after; or held), and the
        invocations it had in flight."""
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1.0)
        unfinished = self.counts.unfinished()
        self.counts.close()
        return unfinished

    def close(self, deadline: float) -> None:
        """Waits until ``deadline`` for the process to exit (after its shutdown reply), then closes the socket."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(OSError):
            self.sock.close()
        self.counts.close()


class Restarts:
    """When a lost or unstartable child may be started again: after 1 s, doubling to 30 s while it keeps failing."""

    def __init__(self) -> None:
        self.backoff = RESTART_BACKOFF_SECONDS[0]
        self._at = 0.0

    def due(self, now: float) -> bool:
        """Whether a new child may start now."""
        return now >= self._at

    def stop(self) -> None:
        """No child starts again (one could not use its configuration: another would not either)."""
        self._at = float("inf")

    def failed(self, now: float) -> None:
        """A child was lost, or could not start: the next one waits :attr:`backoff` seconds, the one after longer."""
        self._at = now + self.backoff
        self.backoff = min(self.backoff * 2, RESTART_BACKOFF_SECONDS[1])

    def started(self) -> None:
        """A child started: the next failure waits the shortest backoff again."""
        self.backoff = RESTART_BACKOFF_SECONDS[0]
