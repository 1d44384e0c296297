"""The base of otel_eval's instrument holders (pipeline, worker service, judge): one meter, in-process totals.

A holder declares its instruments in ``__init__`` from :attr:`InstrumentHolder.meter` and records through
:meth:`InstrumentHolder._add`, which also keeps the in-process total that :meth:`InstrumentHolder.snapshot` returns
(tests, logs and the demo read those without a metric reader).

A counter added to once per evaluated invocation is declared with :meth:`InstrumentHolder._observed_counter`
instead: the holder only keeps its in-process total, and an observable counter reports the sum of those totals at
collection time (the same series, without an SDK measurement per invocation). Every holder of one meter provider
reports through one such instrument per name (:class:`_Totals`): the SDK keeps the first callbacks of a name only.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.util.types import Attributes

from otel_eval import semconv
from otel_eval._runtime.forking import reinit_after_fork
from otel_eval.version import __version__

HolderT = TypeVar("HolderT", bound="InstrumentHolder")


class _Totals:
    """One observable counter's value: the sum of the in-process totals ``key`` of every holder that reports it
    (dead holders' included: a counter never goes down)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.counts: list[Counter[str]] = []

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        key = self.key
        total = sum(counts.get(key, 0) for counts in list(self.counts))
        return [Observation(total)] if total else []


_OBSERVED: weakref.WeakKeyDictionary[MeterProvider, dict[str, _Totals]] = weakref.WeakKeyDictionary()
"""Meter provider -> its observable counters by name."""
_OBSERVED_LOCK = threading.Lock()


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

    def _counter(self, name: str, unit: str, description: str) -> metrics.Counter:
        return self.meter.create_counter(name, unit=unit, description=description)

    def _observed_counter(self, name: str, unit: str, description: str, key: str) -> None:
        """Reports the in-process total ``key`` (added to with :meth:`_add_observed`) as the counter ``name``."""
        self._unobserved.append((name, unit, description, key))
        self._observe()

    def _observe(self) -> None:
        """Registers the pending observable counters once a real meter provider is known (until then the global
        one is a proxy, and the SDK would keep only the first callbacks of a name once it is set)."""
        provider = self._meter_provider if self._meter_provider is not None else metrics.get_meter_provider()
        if isinstance(provider, _ProxyMeterProvider):
            return
        meter = provider.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__)
        with _OBSERVED_LOCK:
            by_name = _OBSERVED.setdefault(provider, {})
            for name, unit, description, key in self._unobserved:
                totals = by_name.get(name)
                if totals is None:
                    totals = by_name[name] = _Totals(key)
                    meter.create_observable_counter(name, [totals.observe], unit=unit, description=description)
                totals.counts.append(self._counts)
            self._unobserved = []

    def _add_observed(self, key: str, amount: int) -> None:
        """Adds ``amount`` to the in-process total ``key`` of an observed counter (:meth:`_observed_counter`)."""
        if amount:
            if self._unobserved:
                self._observe()
            with self._lock:
                self._counts[key] += amount

    def _failed_attempts_counter(self) -> metrics.Counter:
        """``otel_eval.transport.failed_attempts``: a transport's failed attempts to reach its broker."""
        description = "Failed attempts to reach the transport's broker (connections, metadata, sends)."
        return self._counter(semconv.METRIC_TRANSPORT_FAILED_ATTEMPTS, "{attempt}", description)

    def _add(self, counter: metrics.Counter, key: str, amount: float, attributes: Attributes = None) -> None:
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
