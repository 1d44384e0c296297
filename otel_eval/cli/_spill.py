"""``otel-eval run`` over many trace files in bounded memory: rebuild file by file, spill, score one at a time.

A first pass reads and rebuilds one file at a time and appends its invocations, pickled per conversation, to a
temporary file; only a small index stays in memory (per conversation: its first invocation's sort key and where its
chunks are, a few dozen bytes; per trace: its id, to notice a trace split across files). The second pass yields the conversations in
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

from otel_eval.cli._common import LoadedTraces, load_traces, read_input_file
from otel_eval.conversations import Conversation, group_conversations
from otel_eval.model import TracedInvocation
from otel_eval.reconstruct import group_by_trace, rebuild_trace


def _key(inv: TracedInvocation) -> tuple[str, str]:
    """Grouped as group_conversations groups: ``("session", session id)``, else ``("trace", trace id)``."""
    return ("session", inv.session_id) if inv.session_id else ("trace", inv.trace_id)


def _member_order(inv: TracedInvocation) -> tuple[int, str, str]:
    return (inv.start_time_ns, inv.trace_id, inv.span_id)


class _NeedsAllSpans(Exception):
    """The files hold a trace split over several files, or log records: they are rebuilt together."""


@dataclass(slots=True)
class _Spilled:
    """Where one conversation's chunks are in the spill, and its first invocation's sort key."""

    first: tuple[int, str]
    chunks: list[tuple[int, int]] = field(default_factory=list)
    """``(offset, length)`` of each pickled chunk, in spill order."""


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


def stream_traces(paths: Sequence[Path], spill: IO[bytes]) -> StreamedTraces:
    """The first pass over ``paths`` into ``spill`` (an empty binary file open for reading and writing).

    Falls back to :func:`load_traces` (everything in memory, as before) when the files need all their spans at once.
    """
    try:
        return _spilled(paths, spill)
    except _NeedsAllSpans:
        spill.seek(0)
        spill.truncate()
    loaded = load_traces(paths)  # reports the skipped files: the first pass had not printed them yet
    empty = [(t.trace_id, t.convention) for t in loaded.traces if not t.invocations]
    conversations = group_conversations(inv for t in loaded.traces for inv in t.invocations)
    loaded.traces = []
    return StreamedTraces(loaded, empty, len(conversations), iter(conversations))


def _spilled(paths: Sequence[Path], spill: IO[bytes]) -> StreamedTraces:
    conversations: dict[tuple[str, str], _Spilled] = {}  # in first-seen order
    trace_ids: set[str] = set()
    loaded = LoadedTraces()
    trace_warnings: list[tuple[int, str, list[str]]] = []
    empty: list[tuple[str, str]] = []
    for path in paths:
        result = read_input_file(path, loaded)
        if result is None:
            continue
        if result.log_records:
            raise _NeedsAllSpans
        loaded.warnings.extend(result.warnings)
        traces = group_by_trace(result.spans)
        if not trace_ids.isdisjoint(traces):  # a trace id already met in another file
            raise _NeedsAllSpans
        trace_ids.update(traces)
        chunks: dict[tuple[str, str], list[TracedInvocation]] = {}
        for trace_spans in traces.values():
            trace = rebuild_trace(trace_spans)
            if trace.warnings:
                trace_warnings.append((trace.start_time_ns, trace.trace_id, trace.warnings))
            if not trace.invocations:
                empty.append((trace.trace_id, trace.convention))
            for inv in trace.invocations:
                chunks.setdefault(_key(inv), []).append(inv)
        for key, members in chunks.items():
            first = min(map(_member_order, members))[:2]
            data = pickle.dumps(members, protocol=pickle.HIGHEST_PROTOCOL)
            spilled = conversations.setdefault(key, _Spilled(first))
            spilled.first = min(spilled.first, first)
            spilled.chunks.append((spill.tell(), len(data)))
            spill.write(data)
    for line in loaded.skipped:  # as load_traces prints them
        click.echo(f"warning: {line}", err=True)
    trace_warnings.sort(key=lambda item: (item[0], item[1]))
    for _, _, warnings in trace_warnings:
        loaded.warnings.extend(warnings)
    empty.sort()
    # group_conversations' order: by first invocation (start, trace id), ties in first-seen order (a stable sort).
    ordered = sorted(conversations.items(), key=lambda item: item[1].first)
    return StreamedTraces(loaded, empty, len(ordered), _read_back(ordered, spill))


def _read_back(ordered: list[tuple[tuple[str, str], _Spilled]], spill: IO[bytes]) -> Iterator[Conversation]:
    for (kind, group_id), spilled in ordered:
        members: list[TracedInvocation] = []
        for offset, length in spilled.chunks:
            spill.seek(offset)
            members.extend(pickle.loads(spill.read(length)))
        members.sort(key=_member_order)
        yield Conversation(invocations=members, session_id=group_id if kind == "session" else None)


def spill_file() -> IO[bytes]:
    """A private temporary file for :func:`stream_traces` (deleted when closed)."""
    return tempfile.TemporaryFile(prefix="otel-eval-run-", suffix=".spill")
