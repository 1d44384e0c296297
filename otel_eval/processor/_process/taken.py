"""What the evaluation process has done with what it was sent: the ended spans and log records it took, those of
them it still holds (neither evaluated nor dropped), and the invocations it has in flight (handed to its evaluation,
neither emitted nor dropped yet), in a small file that both processes map, so that the agent's process still reads
them after the evaluation process was killed.

A batch written to the socket is not a batch taken: one written after the evaluation process was killed, but before
the kernel closed its socket (a dying process first unmaps its memory), is accepted by the socket and thrown away
with it. And a span taken is not a span evaluated: those of a trace whose root has not ended wait in the engine's
buffers; and an invocation rebuilt is not an invocation evaluated: it may wait on the judge. The evaluation process
adds each batch's counts here once its engine has it, and what the engine holds after each of its steps; its
evaluation stores how many invocations it has in flight whenever that changes. When the process is lost, what the
agent's process sent beyond what it took, what it held and what it had in flight are counted as lost with it
(:class:`~otel_eval.processor._process.supervisor.ChildSupervisor`). Writing the counts is a store to memory: no
system call, no message.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
from typing import Final, NamedTuple

_COUNTS: Final = struct.Struct("<QQQQ")
"""Spans taken, log records taken, spans held, log records held (written by the evaluation process's reader)."""
_IN_FLIGHT: Final = struct.Struct("<Q")
"""Invocations in flight (written by its evaluation, from whichever thread changes the count), after the rest."""
_SIZE: Final = _COUNTS.size + _IN_FLIGHT.size


class Unfinished(NamedTuple):
    """What a lost evaluation process did not finish with."""

    spans: int
    records: int
    invocations: int


class TakenCounts:
    """The evaluation process's side: what its engine took (:meth:`add`) and holds (:meth:`hold`), and what its
    evaluation has in flight (:meth:`in_flight`)."""

    def __init__(self, fd: int) -> None:
        try:
            self._map = mmap.mmap(fd, _SIZE)
        finally:
            os.close(fd)
        self._spans = 0
        self._records = 0

    def add(self, spans: int, records: int, held: tuple[int, int]) -> None:
        """The engine took ``spans`` ended spans and ``records`` log records more, and now holds ``held``."""
        self._spans += spans
        self._records += records
        self.hold(*held)

    def hold(self, spans: int, records: int) -> None:
        """The engine now holds ``spans`` ended spans and ``records`` log records, neither evaluated nor dropped."""
        _COUNTS.pack_into(self._map, 0, self._spans, self._records, spans, records)

    def in_flight(self, invocations: int) -> None:
        """Its evaluation now has ``invocations`` in flight: handed to it, neither emitted nor dropped yet."""
        _IN_FLIGHT.pack_into(self._map, _COUNTS.size, invocations)


class SentCounts:
    """The agent's process's side, one per evaluation process: what it sent (:meth:`sent`), and what of that the
    evaluation process did not finish with (:meth:`unfinished`), invocations in flight included.

    Raises:
        OSError: no file could be made or mapped.
    """

    def __init__(self) -> None:
        self.fd = _shared_file()
        """The file descriptor the evaluation process maps (passed to it at start-up)."""
        try:
            os.ftruncate(self.fd, _SIZE)
            self._map = mmap.mmap(self.fd, _SIZE)
        except BaseException:
            os.close(self.fd)
            raise
        self._spans = 0
        self._records = 0

    def sent(self, spans: int, records: int) -> None:
        """A batch of ``spans`` ended spans and ``records`` log records was written to the evaluation process."""
        self._spans += spans
        self._records += records

    def unfinished(self) -> Unfinished:
        """The spans and log records sent that the evaluation process never took, or held when it last wrote its
        counts, and the invocations it had in flight (read once it is gone: while it runs, they are on their way)."""
        if self._map.closed:
            return Unfinished(0, 0, 0)
        spans, records, held_spans, held_records = _COUNTS.unpack_from(self._map, 0)
        (invocations,) = _IN_FLIGHT.unpack_from(self._map, _COUNTS.size)
        return Unfinished(
            max(0, self._spans - spans) + held_spans, max(0, self._records - records) + held_records, invocations
        )

    def close(self) -> None:
        """Unmaps and closes the file (again: a no-op)."""
        if not self._map.closed:
            self._map.close()
            os.close(self.fd)


def _shared_file() -> int:
    """A new file in memory (no file system needed: the agent's may be read-only), else an unlinked temporary one."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("otel-eval-taken", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:
        return os.dup(file.fileno())
