"""``otel-eval run`` over many trace files in bounded memory: rebuild file by file, spill, score one at a time.

A first pass reads and rebuilds one file at a time and appends its invocations, pickled per conversation, to a
temporary file; only a small index stays in memory (per conversation: its first invocation's sort key and where its
chunks are; per trace: its id, to notice a trace split across files). The second pass yields the conversations in
the order :func:`~otel_eval.conversations.group_conversations` gives, each loaded from the spill only when it is
scored, so memory holds one file's spans and the conversations being scored, not the whole run.

Two inputs need every file's spans at once, and keep the former in-memory path (:func:`load_traces`): a trace whose
spans are spread over several files (rebuilt from all of them together) and OTLP log files (``EVENT_ONLY`` content,
joined onto spans of other files).

The spill is pickle: written and read back by this process only, in a private temporary file, it round-trips the
rebuilt models exactly and without validating them again.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import click

from otel_eval.cli._common import LoadedTraces, eval_file_kind, load_traces
from otel_eval.conversations import Conversation, group_conversations
from otel_eval.errors import InputError
from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import group_by_trace, rebuild_trace

_Key = tuple[str, str]
"""A conversation's key: ``("session", session id)`` or ``("trace", trace id)``, as group_conversations groups."""


def _key(inv: TracedInvocation) -> _Key:
    return ("session", inv.session_id) if inv.session_id else ("trace", inv.trace_id)


def _member_order(inv: TracedInvocation) -> tuple[int, str, str]:
    return (inv.start_time_ns, inv.trace_id, inv.span_id)


@dataclass(slots=True)
class _Entry:
    """One conversation in the spill: its first invocation's order key, first-seen rank, and chunk locations."""

    first: tuple[int, str, str]
    rank: int
    chunks: list[tuple[int, int]] = field(default_factory=list)


class _NeedsAllSpans(Exception):
    """The files hold a trace split over several files, or log records: they are rebuilt together."""


@dataclass(slots=True)
class StreamedTraces:
    """What the first pass found: the problems to report, the traces without invocations, and the conversations."""

    loaded: LoadedTraces
    """Errors, warnings and skipped files as :func:`load_traces` reports them (``traces`` stays empty here)."""
    empty: list[tuple[str, str]]
    """``(trace id, convention)`` of every trace in which no invocation was found."""
    count: int
    """The number of conversations."""
    _conversations: Iterator[Conversation]

    def conversations(self) -> Iterator[Conversation]:
        """The conversations in :func:`group_conversations` order, each read from the spill when reached."""
        return self._conversations


def stream_traces(paths: Sequence[Path], spill: IO[bytes]) -> StreamedTraces:
    """The first pass over ``paths`` into ``spill`` (an empty binary file open for reading and writing).

    Falls back to :func:`load_traces` (everything in memory, as before) when the files need all their spans at once.
    """
    try:
        return _spilled(paths, spill)
    except _NeedsAllSpans:
        spill.seek(0)
        spill.truncate()
    loaded = load_traces(paths)  # reports the skipped files again: the first pass did not print them
    empty = [(t.trace_id, t.convention) for t in loaded.traces if not t.invocations]
    conversations = group_conversations(inv for t in loaded.traces for inv in t.invocations)
    loaded.traces = []
    return StreamedTraces(loaded, empty, len(conversations), iter(conversations))


def _spilled(paths: Sequence[Path], spill: IO[bytes]) -> StreamedTraces:
    from otel_eval.traces import read_trace_file  # deferred: keeps `otel-eval --help` fast

    loaded = LoadedTraces()
    skipped: list[str] = []
    seen: set[str] = set()
    trace_warnings: list[tuple[int, str, list[str]]] = []
    empty: list[tuple[str, str]] = []
    entries: dict[_Key, _Entry] = {}
    for path in paths:
        try:
            result = read_trace_file(path)
        except InputError as exc:
            kind = eval_file_kind(path)
            if kind is None:
                loaded.errors.append(str(exc))
            else:
                skipped.append(f"skipped {path}: an ADK {kind}, not a trace file")
            continue
        if result.log_records:
            raise _NeedsAllSpans
        loaded.warnings.extend(result.warnings)
        traces = group_by_trace(result.spans)
        if not seen.isdisjoint(traces):
            raise _NeedsAllSpans
        seen.update(traces)
        chunks: dict[_Key, list[TracedInvocation]] = {}
        for trace_spans in traces.values():
            trace = rebuild_trace(trace_spans)
            if trace.warnings:
                trace_warnings.append((trace.start_time_ns, trace.trace_id, trace.warnings))
            if not trace.invocations:
                empty.append((trace.trace_id, trace.convention))
            for inv in trace.invocations:
                chunks.setdefault(_key(inv), []).append(inv)
        for key, members in chunks.items():
            first = min(map(_member_order, members))
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = _Entry(first, len(entries))
            elif first < entry.first:
                entry.first = first
            data = pickle.dumps(members, protocol=pickle.HIGHEST_PROTOCOL)
            entry.chunks.append((spill.tell(), len(data)))
            spill.write(data)
    for line in skipped:  # as load_traces prints them
        click.echo(f"warning: {line}", err=True)
    loaded.skipped = skipped
    trace_warnings.sort(key=lambda item: (item[0], item[1]))
    for _, _, warnings in trace_warnings:
        loaded.warnings.extend(warnings)
    empty.sort()
    order = sorted(entries.items(), key=lambda item: (item[1].first[0], item[1].first[1], item[1].rank))
    entries.clear()
    return StreamedTraces(loaded, empty, len(order), _read_back(order, spill))


def _read_back(order: list[tuple[_Key, _Entry]], spill: IO[bytes]) -> Iterator[Conversation]:
    order.reverse()  # popped from the end: an index entry is freed once its conversation is read
    while order:
        (kind, group_id), entry = order.pop()
        members: list[TracedInvocation] = []
        for offset, length in entry.chunks:
            spill.seek(offset)
            members.extend(pickle.loads(spill.read(length)))
        members.sort(key=_member_order)
        yield Conversation(invocations=members, session_id=group_id if kind == "session" else None)


def spill_file() -> IO[bytes]:
    """A private temporary file for :func:`stream_traces` (deleted when closed)."""
    return tempfile.TemporaryFile(prefix="otel-eval-run-", suffix=".spill")
