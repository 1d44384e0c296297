"""What the evaluation process has done with what it was sent: the ended spans and log records it took, and those
of them it still holds (neither evaluated nor dropped), in a small file that both processes map, so that the agent's
process still reads them after the evaluation process was killed.

A batch written to the socket is not a batch taken: one written after the evaluation process was killed, but before
the kernel closed its socket (a dying process first unmaps its memory), is accepted by the socket and thrown away
with it. And a span taken is not a span evaluated: those of a trace whose root has not ended wait in the engine's
buffers. The evaluation process adds each batch's counts here once its engine has it, and what the engine holds
after each of its steps; when the process is lost, what the agent's process sent beyond what it took, and what it
held, are counted as lost with it (:class:`~otel_eval.processor._process.supervisor.ChildSupervisor`). Writing the
counts is a store to memory: no system call, no message.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
from typing import Final

_COUNTS: Final = struct.Struct("<QQQQ")
"""Spans taken, log records taken, spans held, log records held."""


class TakenCounts:
    """The evaluation process's side: what its engine took (:meth:`add`) and holds (:meth:`hold`)."""

    def __init__(self, fd: int) -> None:
        try:
            self._map = mmap.mmap(fd, _COUNTS.size)
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


class SentCounts:
    """The agent's process's side, one per evaluation process: what it sent (:meth:`sent`), and what of that the
    evaluation process did not finish with (:meth:`unfinished`).

    Raises:
        OSError: no file could be made or mapped.
    """

    def __init__(self) -> None:
        self.fd = _shared_file()
        """The file descriptor the evaluation process maps (passed to it at start-up)."""
        try:
            os.ftruncate(self.fd, _COUNTS.size)
            self._map = mmap.mmap(self.fd, _COUNTS.size)
        except BaseException:
            os.close(self.fd)
            raise
        self._spans = 0
        self._records = 0

    def sent(self, spans: int, records: int) -> None:
        """A batch of ``spans`` ended spans and ``records`` log records was written to the evaluation process."""
        self._spans += spans
        self._records += records

    def unfinished(self) -> tuple[int, int]:
        """The spans and log records sent that the evaluation process never took, or held when it last wrote its
        counts (read once it is gone: while it runs, they are still on their way)."""
        if self._map.closed:
            return 0, 0
        spans, records, held_spans, held_records = _COUNTS.unpack_from(self._map, 0)
        return max(0, self._spans - spans) + held_spans, max(0, self._records - records) + held_records

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
