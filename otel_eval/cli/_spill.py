"""``otel-eval run`` over many trace files in bounded memory: rebuild file by file, spill, score one at a time.

A first pass reads and rebuilds one file at a time. Each file's invocations are kept in memory, per conversation,
until the files kept add up to ``held_bytes`` (:data:`HELD_BYTES`; a rebuilt invocation takes about as much memory
as its file); past that, everything kept so far and everything after goes, pickled per conversation, to a temporary
file, and only a small index stays in memory (per conversation: its first invocation's sort key and where its chunks
are, a few dozen bytes; per trace: its id, to notice a trace split across files). The second pass yields the
conversations in the order :func:`~otel_eval.conversations.group_conversations` gives, each loaded from the spill
only when it is scored, so memory holds at most ``held_bytes`` worth of files' invocations, one file's spans and the
conversations being scored, not the whole run. A run on files that fit never writes the spill.

Two inputs need every file's spans at once, and keep the former in-memory path (:func:`load_traces`): a trace whose
spans are spread over several files (rebuilt from all of them together) and OTLP log files (``EVENT_ONLY`` content,
joined onto spans of other files).

The spill is pickle: written and read back by this process only, in a private temporary file, it round-trips the
rebuilt models exactly and without validating them again.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from otel_eval.cli._common import LoadedTraces, load_traces, read_input_file
from otel_eval.conversations import Conversation, group_conversations
from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import Reads, group_by_trace, rebuild_trace, without_evaluator_spans

if TYPE_CHECKING:
    from otel_eval.traces import Span
    from otel_eval.traces.backends import TracePage

HELD_BYTES = 16 * 2**20
"""Bytes of trace files whose invocations the first pass keeps in memory before it starts spilling."""


def _key(inv: TracedInvocation) -> tuple[str, str]:
    """Grouped as group_conversations groups: ``("session", session id)``, else ``("trace", trace id)``."""
    return ("session", inv.session_id) if inv.session_id else ("trace", inv.trace_id)


def _member_order(inv: TracedInvocation) -> tuple[int, str, str]:
    return (inv.start_time_ns, inv.trace_id, inv.span_id)


class _NeedsAllSpans(Exception):
    """The files hold a trace split over several files, or log records: they are rebuilt together."""


_Chunk = list[TracedInvocation] | tuple[int, int]
"""One file's invocations of a conversation: kept in memory, or ``(offset, length)`` of their pickle in the spill."""


@dataclass(slots=True)
class _Spilled:
    """Where one conversation's chunks are, and its first invocation's sort key."""

    first: tuple[int, str]
    chunks: list[_Chunk] = field(default_factory=list)
    """In file order."""


class _Chunks:
    """The conversations' chunks, kept in memory until ``held_bytes`` of files, then written to ``spill``."""

    def __init__(self, spill: IO[bytes], held_bytes: int) -> None:
        self.conversations: dict[tuple[str, str], _Spilled] = {}  # in first-seen order
        self._spill, self._room = spill, held_bytes
        self._spilling = False

    def add_file(self, size: int, chunks: dict[tuple[str, str], list[TracedInvocation]]) -> None:
        """One file's invocations (``size`` bytes of it), per conversation."""
        if not self._spilling:
            self._room -= size
            if self._room < 0:
                self._spilling = True
                for spilled in self.conversations.values():
                    spilled.chunks = [self._write(c) if isinstance(c, list) else c for c in spilled.chunks]
        for key, members in chunks.items():
            first = min(map(_member_order, members))[:2]
            spilled = self.conversations.setdefault(key, _Spilled(first))
            spilled.first = min(spilled.first, first)
            spilled.chunks.append(self._write(members) if self._spilling else members)

    def _write(self, members: list[TracedInvocation]) -> tuple[int, int]:
        data = pickle.dumps(members, protocol=pickle.HIGHEST_PROTOCOL)
        offset = self._spill.tell()
        self._spill.write(data)
        return offset, len(data)

    def read_back(self, ordered: list[tuple[tuple[str, str], _Spilled]]) -> Iterator[Conversation]:
        """The conversations of ``ordered``, one at a time, each chunk read back (and let go) when reached."""
        for (kind, group_id), spilled in ordered:
            members: list[TracedInvocation] = []
            for chunk in spilled.chunks:
                if isinstance(chunk, list):
                    members.extend(chunk)
                else:
                    self._spill.seek(chunk[0])
                    members.extend(pickle.loads(self._spill.read(chunk[1])))
            spilled.chunks = []
            members.sort(key=_member_order)
            yield Conversation(invocations=members, session_id=group_id if kind == "session" else None)


@dataclass(slots=True)
class StreamedTraces:
    """What the first pass found: the problems to report, the traces without invocations, and the conversations."""

    loaded: LoadedTraces
    """Errors, warnings and skipped files as :func:`load_traces` reports them (``traces`` stays empty here)."""
    empty: list[tuple[str, str]]
    """``(trace id, convention)`` of every trace in which no invocation was found."""
    count: int
    """The number of conversations."""
    conversations: Iterator[Conversation]
    """The conversations in :func:`group_conversations` order, each read from the spill when reached."""


def stream_traces(
    paths: Sequence[Path], spill: IO[bytes], *, held_bytes: int = HELD_BYTES, reads: Reads = Reads.ALL
) -> StreamedTraces:
    """The first pass over ``paths`` into ``spill`` (an empty binary file open for reading and writing), keeping the
    invocations of the first ``held_bytes`` of files in memory, rebuilt with the parts ``reads`` asks for.

    Falls back to :func:`load_traces` (everything in memory, as before) when the files need all their spans at once.
    """
    try:
        return _spilled(paths, _Chunks(spill, held_bytes), reads)
    except _NeedsAllSpans:
        spill.seek(0)
        spill.truncate()
    loaded = load_traces(paths, reads=reads)  # reports the skipped files: the first pass had not printed them yet
    empty = [(t.trace_id, t.convention) for t in loaded.traces if not t.invocations]
    conversations = group_conversations(inv for t in loaded.traces for inv in t.invocations)
    loaded.traces = []
    return StreamedTraces(loaded, empty, len(conversations), iter(conversations))


def _spilled(paths: Sequence[Path], store: _Chunks, reads: Reads) -> StreamedTraces:
    run = _FirstPass(store, reads)
    for path in paths:
        result = read_input_file(path, run.loaded)
        if result is None:
            continue
        if result.log_records:
            raise _NeedsAllSpans
        run.loaded.warnings.extend(result.warnings)
        run.add(result.spans, result.size)
    for line in run.loaded.skipped:  # as load_traces prints them
        click.echo(f"warning: {line}", err=True)
    return run.finish()


def stream_pages(
    pages: Iterable[TracePage], spill: IO[bytes], *, held_bytes: int = HELD_BYTES, reads: Reads = Reads.ALL
) -> StreamedTraces:
    """The first pass over a backend's pages (whole traces each, :mod:`otel_eval.traces.backends`), kept and spilled
    as :func:`stream_traces` keeps and spills files: memory holds one page's spans and ``held_bytes`` of invocations.
    A trace met again in a later page (a backend answering while spans still arrive) is left out, with a warning."""
    run = _FirstPass(_Chunks(spill, held_bytes), reads)
    for page in pages:
        run.loaded.warnings.extend(page.warnings)
        run.add(page.spans, page.size, again="skip")
    return run.finish()


class _FirstPass:
    """Rebuilds span batches (a file's, a page's) into the conversations' chunks."""

    def __init__(self, store: _Chunks, reads: Reads) -> None:
        self.store = store
        self.reads = reads
        self.loaded = LoadedTraces()
        self.trace_ids: set[str] = set()
        self.trace_warnings: list[tuple[int, str, list[str]]] = []
        self.empty: list[tuple[str, str]] = []

    def add(self, spans: list[Span], size: int, *, again: str = "all-spans") -> None:
        traces = group_by_trace(spans)
        if not self.trace_ids.isdisjoint(traces):  # a trace id already met in another file
            if again != "skip":
                raise _NeedsAllSpans
            for trace_id in self.trace_ids.intersection(traces):
                self.loaded.warnings.append(f"trace {trace_id}: read twice; its second reading is left out")
                del traces[trace_id]
        self.trace_ids.update(traces)
        chunks: dict[tuple[str, str], list[TracedInvocation]] = {}
        for all_spans in traces.values():
            trace_spans = without_evaluator_spans(all_spans)
            if not trace_spans:
                continue  # otel-eval's own trace (a judge's), as rebuild_traces leaves it out
            trace = rebuild_trace(trace_spans, reads=self.reads)
            warnings = trace.every_warning()
            if warnings:
                self.trace_warnings.append((trace.start_time_ns, trace.trace_id, warnings))
            if not trace.invocations:
                self.empty.append((trace.trace_id, trace.convention))
            for inv in trace.invocations:
                chunks.setdefault(_key(inv), []).append(inv)
        self.store.add_file(size, chunks)

    def finish(self) -> StreamedTraces:
        self.trace_warnings.sort(key=lambda item: (item[0], item[1]))
        for _, _, warnings in self.trace_warnings:
            self.loaded.warnings.extend(warnings)
        self.empty.sort()
        # group_conversations' order: by first invocation (start, trace id), ties in first-seen order (a stable sort).
        ordered = sorted(self.store.conversations.items(), key=lambda item: item[1].first)
        return StreamedTraces(self.loaded, self.empty, len(ordered), self.store.read_back(ordered))


def spill_file() -> IO[bytes]:
    """A private temporary file for :func:`stream_traces` (deleted when closed)."""
    return tempfile.TemporaryFile(prefix="otel-eval-run-", suffix=".spill")
