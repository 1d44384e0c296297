"""The judge budget: USD per hour, enforced before calls by a continuously refilling token bucket.

A budget buys whole evaluations, never halves of them. A judged metric asks :meth:`JudgeBudget.admit` once per
invocation (per conversation for conversation-level metrics) with an estimate of *all* the calls it will make
(``hallucinations_v1``: a segmenter and a validator call per step; sampled metrics: ``num_samples`` calls). The
estimated cost is taken from the bucket up front; the real cost of each call (from the reply's token counts) is
charged to the admission as it arrives, and when the admission closes the difference is given back (or, when the
estimate was low, taken). A refused admission makes no call: the metric reports NOT_EVALUATED with
``error.type=budget_exhausted``.

Estimates: input tokens from the prompt's length (:func:`estimate_tokens`, four characters a token, the same
estimate the honest-context check uses); output tokens per call learned per judge model from the replies' reported
usage, starting from 1,024 (:mod:`otel_eval.judge.output_estimate`). Prices are the
judge's price table (``OTEL_EVAL_JUDGE_PRICES``); a call to a model without a price is never admitted under a budget
(its cost could not be bounded), and a budget whose default judge model has no price is refused at start-up.

Each bucket holds at most one hour's budget and refills continuously at the hourly rate, so over any T hours a
process spends at most budget × (T + 1), plus what the estimates fell short of. Priority: a normal invocation is
admitted only while the bucket keeps :data:`PRIORITY_RESERVE` of its capacity after the draw; a priority one (see
:mod:`otel_eval.judge.priority`) may draw the bucket down to zero. The bucket is per process: N workers (or N agent
processes) spend up to N times the configured budget, so give each the budget divided by N.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from otel_eval import environment_variables as env
from otel_eval.errors import ConfigurationError
from otel_eval.judge.output_estimate import OutputEstimates

if TYPE_CHECKING:
    from otel_eval.judge.settings import PriceTable
    from otel_eval.metrics import MetricRegistry

PRIORITY_RESERVE = 0.2
"""Share of each bucket's capacity only priority invocations may spend."""
CHARS_PER_TOKEN = 4
"""Characters per token of the input estimate."""
ALL_METRICS = "*"
"""The budget entry shared by every judged metric not named on its own."""


def format_usd(amount: float) -> str:
    """``amount`` in plain decimal notation, as short as it round-trips (``0.00001``, never ``1e-05``)."""
    text = format(Decimal(repr(float(amount))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def estimate_tokens(characters: int) -> int:
    """Tokens of a prompt of ``characters`` characters, estimated (:data:`CHARS_PER_TOKEN`)."""
    return math.ceil(characters / CHARS_PER_TOKEN)


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """USD per hour by metric name (``*``: every judged metric not named, sharing one bucket).

    Attributes:
        per_hour: USD per hour by metric name.
        source: Where the spec came from (``OTEL_EVAL_JUDGE_BUDGET``, ``--budget``), for error messages.
    """

    per_hour: Mapping[str, float]
    source: str = field(default=env.OTEL_EVAL_JUDGE_BUDGET, compare=False)

    @classmethod
    def parse(cls, text: str, *, source: str = env.OTEL_EVAL_JUDGE_BUDGET) -> BudgetSpec | None:
        """``2.5`` (same as ``*=2.5``) or ``metric=usd,...`` with an optional ``*=usd``; blank: None (no budget).

        Raises:
            ConfigurationError: naming ``source``, the entry and what is wrong with it.
        """
        raw = text.strip()
        if not raw:
            return None
        entries: dict[str, float] = {}
        for part in raw.split(","):
            entry = part.strip()
            name, sep, amount = entry.rpartition("=") if "=" in entry else ("", "", entry)
            name = name.strip() if sep else ALL_METRICS
            if not name:
                raise ConfigurationError(f"{source}={text!r}: entry {entry!r} has no metric name before '='")
            if name in entries:
                raise ConfigurationError(f"{source}={text!r}: {name!r} is given twice")
            entries[name] = _amount(amount, entry, text, source)
        return cls(entries, source)

    def check_metrics(self, registry: MetricRegistry) -> None:
        """Start-up check: every metric the spec names is one ``registry`` holds (the registry the process runs,
        custom metrics included), else a typo would leave the real metric without a limit.

        Raises:
            ConfigurationError: naming ``source`` and the unknown metric (with close names).
        """
        for name in self.per_hour:
            if name == ALL_METRICS:
                continue
            try:
                registry.get(name)
            except ConfigurationError as error:  # MetricNotFoundError: "unknown metric 'x'; did you mean y?"
                raise ConfigurationError(f"{self.source}: {error}") from None

    def bucket_name(self, metric: str) -> str | None:
        """The entry ``metric`` draws from: its own, else ``*``; None when it is not limited."""
        if metric in self.per_hour:
            return metric
        return ALL_METRICS if ALL_METRICS in self.per_hour else None

    def describe(self) -> str:
        """The spec as it was given, normalised (``hallucinations_v1=$1/h, *=$0.00001/h``)."""
        return ", ".join(f"{name}=${format_usd(amount)}/h" for name, amount in self.per_hour.items())


def _amount(amount: str, entry: str, text: str, source: str) -> float:
    try:
        value = float(amount.strip().removeprefix("$"))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigurationError(
            f"{source}={text!r}: entry {entry!r}: expected a USD-per-hour amount >= 0 "
            "(e.g. '2.5' or 'hallucinations_v1=1.0,safety_v1=0.5,*=2')"
        )
    return value


@dataclass(frozen=True, slots=True)
class CallEstimate:
    """One judge call a metric is about to make: its model and prompt size in characters."""

    model: str
    prompt_characters: int


class TokenBucket:
    """USD that refill continuously at ``per_hour`` up to a capacity of one hour's worth. Thread-safe."""

    def __init__(self, per_hour: float, clock: Callable[[], float]) -> None:
        self.capacity = per_hour
        self._rate = per_hour / 3600.0
        self._clock = clock
        self._level = per_hour
        self._last = clock()
        self._lock = threading.Lock()

    @property
    def level(self) -> float:
        """USD available now (negative while repaying an estimate that fell short)."""
        with self._lock:
            self._refill()
            return self._level

    def take(self, usd: float, *, floor: float) -> bool:
        """Takes ``usd`` when the level stays at or above ``floor`` after it; False (nothing taken) otherwise."""
        with self._lock:
            self._refill()
            if self._level - usd < floor:
                return False
            self._level -= usd
            return True

    def give_back(self, usd: float) -> None:
        """Adds ``usd`` (negative: takes it) without exceeding the capacity."""
        with self._lock:
            self._refill()
            self._level = min(self.capacity, self._level + usd)

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._level = min(self.capacity, self._level + elapsed * self._rate)


@dataclass(slots=True)
class Admission:
    """An admitted evaluation: what was reserved, and what its calls really cost so far."""

    bucket: TokenBucket
    reserved: float
    spent: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def charge(self, usd: float) -> None:
        """Adds one call's real cost."""
        with self._lock:
            self.spent += usd

    def settle(self) -> None:
        """Gives back what was reserved and not spent (takes the excess when more was spent)."""
        with self._lock:
            difference, self.reserved = self.reserved - self.spent, self.spent
        self.bucket.give_back(difference)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an evaluation was not admitted."""

    reason: str


_CURRENT: ContextVar[Admission | None] = ContextVar("otel_eval_judge_admission", default=None)


def current_admission() -> Admission | None:
    """The admission the calling task runs under, if any."""
    return _CURRENT.get()


def charge_current(usd: float) -> None:
    """Charges one call's real cost to the admission the calling task runs under (if any)."""
    admission = _CURRENT.get()
    if admission is not None:
        admission.charge(usd)


@contextmanager
def spending(admission: Admission | None) -> Iterator[None]:
    """Runs the block's judge calls under ``admission`` (tasks started inside inherit it), then settles it."""
    if admission is None:
        yield
        return
    token = _CURRENT.set(admission)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        admission.settle()


class JudgeBudget:
    """The buckets of one process, one per entry of the :class:`BudgetSpec`.

    Args:
        spec: USD per hour by metric.
        prices: The judge's price table.
        clock: Seconds, monotonic (injectable for tests).
        outputs: Output tokens reserved per call, by model (default: learned from the replies, starting from
            :data:`~otel_eval.judge.output_estimate.OUTPUT_TOKEN_ALLOWANCE`; see :meth:`observe`).
        reserve: Share of each bucket kept for priority invocations.
    """

    def __init__(
        self,
        spec: BudgetSpec,
        prices: PriceTable,
        *,
        clock: Callable[[], float] = time.monotonic,
        outputs: OutputEstimates | None = None,
        reserve: float = PRIORITY_RESERVE,
    ) -> None:
        self.spec = spec
        self._prices = prices
        self.outputs = OutputEstimates() if outputs is None else outputs
        self._reserve = reserve
        self.buckets = {name: TokenBucket(usd, clock) for name, usd in spec.per_hour.items()}

    def check_priced(self, model: str) -> None:
        """Start-up check: the budget cannot bound calls to ``model`` when it has no price.

        Raises:
            ConfigurationError: ``model`` is not in the price table.
        """
        if self._prices.cost(model, 0, 0) is None:
            raise ConfigurationError(
                f"{self.spec.source} is set but judge model {model!r} has no price; "
                f"add it to {env.OTEL_EVAL_JUDGE_PRICES} (USD per million tokens) so its spend can be bounded"
            )

    def estimate(self, calls: Sequence[CallEstimate]) -> float | None:
        """The estimated USD of ``calls``; None when one of their models has no price."""
        total = 0.0
        for call in calls:
            cost = self._prices.cost(
                call.model, estimate_tokens(call.prompt_characters), self.outputs.tokens(call.model)
            )
            if cost is None:
                return None
            total += cost
        return total

    def observe(self, model: str, output_tokens: int) -> None:
        """Learns the output tokens (thinking included) of one reply of ``model``, for the estimates to come."""
        self.outputs.observe(model, output_tokens)

    def admit(
        self, metric: str, calls: Sequence[CallEstimate], *, priority: bool = False
    ) -> Admission | Refusal | None:
        """Reserves the estimated cost of ``calls`` (all of one evaluation) from ``metric``'s bucket.

        Returns None when ``metric`` is not limited, an :class:`Admission` to run the calls under (see
        :func:`spending`), or a :class:`Refusal` saying why not.
        """
        name = self.spec.bucket_name(metric)
        if name is None or not calls:
            return None
        bucket = self.buckets[name]
        cost = self.estimate(calls)
        if cost is None:
            models = sorted({c.model for c in calls if self._prices.cost(c.model, 0, 0) is None})
            return Refusal(f"judge model {', '.join(models)} has no price, so the judge budget cannot admit it")
        floor = 0.0 if priority else self._reserve * bucket.capacity
        if bucket.take(cost, floor=floor):
            return Admission(bucket, cost)
        kept = "" if priority else f" (the last {self._reserve:.0%} is kept for priority invocations)"
        return Refusal(
            f"judge budget exhausted: {metric} needs about ${cost:.6f} for {len(calls)} call(s), "
            f"${max(0.0, bucket.level):.6f} of ${format_usd(bucket.capacity)}/h left{kept}"
        )
