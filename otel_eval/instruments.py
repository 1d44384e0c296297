"""The base of otel_eval's instrument holders (pipeline, worker service, judge): one meter, in-process totals.

A holder declares its instruments in ``__init__`` from :attr:`InstrumentHolder.meter` and records through
:meth:`InstrumentHolder._add`, which also keeps the in-process total that :meth:`InstrumentHolder.snapshot` returns
(tests, logs and the demo read those without a metric reader).

A counter added to once per evaluated invocation is declared with :meth:`InstrumentHolder._observed_counter`
instead: the holder only keeps its in-process total, and an observable counter reports the sum of those totals at
collection time (the same series, without an SDK measurement per invocation). Every holder of one meter provider
reports through one such instrument per name (:class:`_Totals`): the SDK keeps the first callbacks of a name only.
:class:`SeriesCounts` does the same for a counter with attributes (one plain int per attribute set, e.g. the
results counter, added to once per result), and :class:`ObservedCounter` for any other counter (``add(amount,
attributes)``, as a synchronous counter's).

Every series of these counters is reported at 0 in the first collection that sees it and at its total from the
next one on (a series is reported at its total at once in the meter provider's final collection, at its shutdown):
Prometheus' ``rate()`` and ``increase()`` count nothing of a series' first sample, so a series first sampled
already counted would lose its first counts (each new process', replica's or serverless instance's first results,
the first fail that should page).
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from functools import partial
from typing import Any, TypeVar

from opentelemetry import metrics
from opentelemetry.context import Context, get_current
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.metrics._internal import _PROXY_METER_PROVIDER, _ProxyMeterProvider
from opentelemetry.util.types import Attributes, AttributeValue

from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval.version import __version__

HolderT = TypeVar("HolderT", bound="InstrumentHolder")
SourceT = TypeVar("SourceT")


_SeriesRow = tuple[Hashable, Attributes, float, Context | None]
"""One series of an observed counter: its key (its attributes, frozen), attributes, total and the context of its
latest measurement (the exemplar's, when it has a sampled span)."""


class _Totals:
    """One observable counter's series: the sums of the in-process totals of every source that reports it (dead
    holders' included: a counter never goes down), each new series at 0 in the first collection that sees it."""

    def __init__(self, provider: MeterProvider) -> None:
        self.sources: list[Callable[[], Iterable[_SeriesRow]]] = []
        self._provider = weakref.ref(provider)
        self._reported: set[Hashable] = set()
        self._lock = threading.Lock()
        reinit_after_fork(self._at_fork_reinit)

    def _at_fork_reinit(self) -> None:
        self._lock = threading.Lock()

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        totals: dict[Hashable, list[Any]] = {}
        for source in list(self.sources):
            for key, attributes, value, context in source():
                entry = totals.get(key)
                if entry is None:
                    totals[key] = [attributes, value, context]
                else:
                    entry[1] += value
                    entry[2] = context or entry[2]
        # The SDK's MeterProvider sets _shutdown before its readers' last collection: no later one will report.
        final = getattr(self._provider(), "_shutdown", False) is True
        observations = []
        with self._lock:
            for key, (attributes, value, context) in totals.items():
                if key in self._reported or final:
                    observations.append(Observation(value, attributes, context))
                else:
                    self._reported.add(key)
                    observations.append(Observation(0, attributes))
        return observations


_OBSERVED: weakref.WeakKeyDictionary[MeterProvider, dict[str, _Totals]] = weakref.WeakKeyDictionary()
"""Meter provider -> its observable counters by name."""
_OBSERVED_LOCK = threading.Lock()


def _observe_counter(
    meter_provider: MeterProvider | None,
    name: str,
    unit: str,
    description: str,
    source: Callable[[], Iterable[_SeriesRow]],
) -> bool:
    """Reports the series ``source`` returns through the observable counter ``name`` of ``meter_provider`` (the
    global one when None), made at the first call for that provider and name. False (nothing done) while the global
    provider is not set yet: the SDK would keep only the first callbacks of a name once it is."""
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    if isinstance(provider, _ProxyMeterProvider):
        return False
    with _OBSERVED_LOCK:
        by_name = _OBSERVED.setdefault(provider, {})
        totals = by_name.get(name)
        if totals is None:
            totals = by_name[name] = _Totals(provider)
            meter = provider.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__)
            meter.create_observable_counter(name, [totals.observe], unit=unit, description=description)
        totals.sources.append(source)
    return True


class _Gauge:
    """One observable gauge's sources: every holder of one meter provider reporting it (the SDK keeps the first
    callbacks of a name only), the values of one attribute set combined (summed, or ``combine``d); a dead holder's
    dropped."""

    def __init__(self, combine: Callable[[float, float], float]) -> None:
        self._combine = combine
        self._sources: list[tuple[weakref.ref[Any], Callable[[Any, CallbackOptions], Iterable[Observation]]]] = []
        self._lock = threading.Lock()
        reinit_after_fork(self._at_fork_reinit)

    def _at_fork_reinit(self) -> None:
        self._lock = threading.Lock()

    def add(self, holder: Any, observe: Callable[[Any, CallbackOptions], Iterable[Observation]]) -> None:
        with self._lock:
            self._sources.append((weakref.ref(holder), observe))

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            self._sources = [source for source in self._sources if source[0]() is not None]
            sources = list(self._sources)
        combined: dict[Hashable, list[Any]] = {}
        for holder_ref, observe in sources:
            holder = holder_ref()
            if holder is None:
                continue
            for observation in observe(holder, options):
                key = frozenset((observation.attributes or {}).items())
                entry = combined.get(key)
                if entry is None:
                    combined[key] = [observation.attributes, observation.value]
                else:
                    entry[1] = self._combine(entry[1], observation.value)
        return [Observation(value, attributes) for attributes, value in combined.values()]


_GAUGES: weakref.WeakKeyDictionary[MeterProvider, dict[str, _Gauge]] = weakref.WeakKeyDictionary()
"""Meter provider -> its observable gauges by name."""


def observe_gauge(
    meter_provider: MeterProvider | None,
    name: str,
    unit: str,
    description: str,
    holder: SourceT,
    observe: Callable[[SourceT, CallbackOptions], Iterable[Observation]],
    combine: Callable[[float, float], float] = operator.add,
) -> None:
    """Reports ``observe(holder, options)`` through the observable gauge ``name`` of ``meter_provider`` (the global
    one when None) while ``holder`` lives: one gauge per provider and name, whose values of one attribute set are the
    holders' ``combine``d (summed: the items waiting in every processor's queue of the process)."""
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    with _OBSERVED_LOCK:
        by_name = _GAUGES.setdefault(provider, {})
        gauge = by_name.get(name)
        if gauge is None and provider is metrics.get_meter_provider():  # made through the proxy before it was set
            gauge = _GAUGES.get(_PROXY_METER_PROVIDER, {}).get(name)
        if gauge is None:
            gauge = _Gauge(combine)
            meter = provider.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__)
            meter.create_observable_gauge(name, [gauge.observe], unit=unit, description=description)
        by_name[name] = gauge
    gauge.add(holder, observe)


class CountedSeries:
    """One attribute set's count (:class:`SeriesCounts`)."""

    __slots__ = ("attributes", "context", "count", "key")

    def __init__(self, attributes: dict[str, AttributeValue]) -> None:
        self.attributes = attributes
        self.key: Hashable = frozenset(attributes.items())
        self.count: float = 0
        self.context: Context | None = None


class SeriesCounts:
    """A monotonic counter with attributes kept as plain ints, one per attribute set, and reported by an observable
    counter at collection time: the same series as a synchronous counter's, without an SDK measurement per add.

    Each series' exemplar is its latest measurement's (the context passed to :meth:`add`), as the SDK keeps for a
    synchronous counter's last measurement. Every instance of one name on one meter provider reports through one
    instrument (their counts summed, as the SDK sums a synchronous counter's adds).

    Args:
        meter_provider: Provider of the counter; the global one when None (the counter is made once it is set).
        name: The counter's name.
        unit: Its unit.
        description: Its description.
    """

    def __init__(self, meter_provider: MeterProvider | None, name: str, unit: str, description: str) -> None:
        self._instrument = (meter_provider, name, unit, description)
        self._cells: dict[Hashable, CountedSeries] = {}
        self._lock = threading.Lock()
        self._pending = True
        self._register()
        reinit_after_fork(self._at_fork_reinit)

    def _at_fork_reinit(self) -> None:
        self._lock = threading.Lock()

    def _register(self) -> None:
        meter_provider, name, unit, description = self._instrument
        if _observe_counter(meter_provider, name, unit, description, self._series):
            self._pending = False

    def series(self, attributes: dict[str, AttributeValue]) -> CountedSeries:
        """The series of ``attributes`` (kept: look it up once per attribute set, then :meth:`add` to it)."""
        cell = CountedSeries(attributes)
        with self._lock:
            return self._cells.setdefault(cell.key, cell)

    def add(self, series: CountedSeries, context: Context | None = None, amount: float = 1) -> None:
        """Adds ``amount`` to ``series``; ``context`` is its exemplar's until the next add."""
        if self._pending:
            self._register()
        with self._lock:
            series.count += amount
        series.context = context

    def _series(self) -> list[_SeriesRow]:
        with self._lock:
            return [(cell.key, cell.attributes, cell.count, cell.context) for cell in self._cells.values()]


class ObservedCounter:
    """A monotonic counter used as a synchronous one (``add(amount, attributes)``), kept in-process by a
    :class:`SeriesCounts` (each series' exemplar is the context current at its latest add).

    Args:
        meter_provider: Provider of the counter; the global one when None (the counter is made once it is set).
        name: The counter's name.
        unit: Its unit.
        description: Its description.
    """

    def __init__(self, meter_provider: MeterProvider | None, name: str, unit: str, description: str) -> None:
        self._counts = SeriesCounts(meter_provider, name, unit, description)
        self._series: dict[Hashable, CountedSeries] = {}

    def add(self, amount: float, attributes: Attributes = None) -> None:
        """Adds ``amount`` (>= 0) to the series of ``attributes``."""
        if not amount:
            return
        key = frozenset(attributes.items()) if attributes else frozenset()
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = self._counts.series(dict(attributes or {}))
        self._counts.add(series, get_current(), amount)


class InstrumentHolder:
    """A meter of the ``otel_eval`` scope on ``meter_provider`` (the global one, resolved lazily, when None).

    Its lock is re-created in a forked child (a fork while another thread held it would leave it held forever).
    """

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        self.meter = metrics.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__, meter_provider=meter_provider)
        self._meter_provider = meter_provider
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._unobserved: list[tuple[str, str, str, str]] = []
        """Observable counters not registered yet: the global meter provider is not set yet."""
        reinit_after_fork(self._at_fork_reinit)

    def _at_fork_reinit(self) -> None:
        self._lock = threading.Lock()

    def _counter(self, name: str, unit: str, description: str) -> ObservedCounter:
        return ObservedCounter(self._meter_provider, name, unit, description)

    def _observed_counter(self, name: str, unit: str, description: str, key: str) -> None:
        """Reports the in-process total ``key`` (added to with :meth:`_add_observed`) as the counter ``name``."""
        self._unobserved.append((name, unit, description, key))
        self._observe()

    def _observe(self) -> None:
        """Registers the pending observable counters once a real meter provider is known (until then the global
        one is a proxy, and the SDK would keep only the first callbacks of a name once it is set)."""
        while self._unobserved:
            name, unit, description, key = self._unobserved[0]
            if not _observe_counter(self._meter_provider, name, unit, description, partial(_total, self._counts, key)):
                return
            del self._unobserved[0]

    def _add_observed(self, key: str, amount: int) -> None:
        """Adds ``amount`` to the in-process total ``key`` of an observed counter (:meth:`_observed_counter`)."""
        if amount:
            if self._unobserved:
                self._observe()
            with self._lock:
                self._counts[key] += amount

    def _failed_attempts_counter(self) -> ObservedCounter:
        """``otel_eval.transport.failed_attempts``: a transport's failed attempts to reach its broker."""
        description = "Failed attempts to reach the transport's broker (connections, metadata, sends)."
        return self._counter(semconv.METRIC_TRANSPORT_FAILED_ATTEMPTS, "{attempt}", description)

    def _add(self, counter: ObservedCounter, key: str, amount: float, attributes: Attributes = None) -> None:
        """Adds ``amount`` (when not zero) to ``counter`` and to the in-process total ``key``."""
        if amount:
            counter.add(amount, attributes)
            self._count(key, amount)

    def _count(self, key: str, amount: float) -> None:
        with self._lock:
            self._counts[key] += int(amount)

    def snapshot(self) -> dict[str, int]:
        """In-process totals, e.g. ``{"spans.dropped.queue_full": 3, "invocations.evaluated": 10}``."""
        with self._lock:
            return dict(self._counts)


def _total(counts: Counter[str], key: str) -> list[_SeriesRow]:
    return [(None, None, counts.get(key, 0), None)]


def weak_callback(
    holder: HolderT, observe: Callable[[HolderT, CallbackOptions], Iterable[Observation]]
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    """A gauge callback calling ``observe(holder, options)`` while ``holder`` lives, observing nothing after.

    The meter (often the global one) lives forever; its callbacks must not keep the holder (and what it observes,
    such as a processor's queues) alive.
    """
    weak_holder = weakref.ref(holder)

    def callback(options: CallbackOptions) -> Iterable[Observation]:
        alive = weak_holder()
        return observe(alive, options) if alive is not None else ()

    return callback


class LogRecordDrops(InstrumentHolder):
    """A holder that also counts ``otel_eval.log_records.dropped``: GenAI content log records that joined no trace
    (the processor's in-process join and the worker's ``otlp_logs`` join report the same instrument)."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        super().__init__(meter_provider)
        self._log_records_dropped = self._counter(
            semconv.METRIC_LOG_RECORDS_DROPPED,
            "{log_record}",
            "GenAI content log records not joined to their trace, by otel_eval.drop.reason.",
        )

    def log_records_dropped(self, reason: str, count: int = 1) -> None:
        """Log records dropped for ``reason`` (``late``, ``no_trace``, a limit, ``shutdown``)."""
        attributes = {semconv.OTEL_EVAL_DROP_REASON: reason}
        self._add(self._log_records_dropped, f"log_records.dropped.{reason}", count, attributes)
