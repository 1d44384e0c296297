"""Per-metric judge accounting: calls, cache hits, retries, failures, tokens and cost."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace


@dataclass(slots=True)
class JudgeUsage:
    """Counters of one metric (or of all metrics, for the total).

    Attributes:
        calls: HTTP requests sent to the judge (retries included).
        cache_hits: Judge requests answered from the cache (or by joining an identical in-flight request).
        retries: Requests that were retries of a failed attempt.
        failures: Judge requests that finally failed (after retries).
        input_tokens: Prompt tokens reported by the judge.
        output_tokens: Candidate plus thinking tokens reported by the judge.
        cost_usd: Cost of the calls whose model has a price.
        unpriced_calls: Calls whose model has no price (their cost is unknown, not zero).
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def add(self, other: JudgeUsage) -> None:
        """Adds ``other``'s counters to this one."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, float | int]:
        """The counters as a JSON-ready dict (plus ``total_tokens``)."""
        data: dict[str, float | int] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["total_tokens"] = self.total_tokens
        return data


@dataclass
class JudgeAccounting:
    """Thread-safe usage counters by metric name, plus the fatal problems reported once."""

    _by_metric: dict[str, JudgeUsage] = field(default_factory=dict)
    _fatal: list[str] = field(default_factory=list)
    _refused: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, metric: str, **increments: float) -> None:
        """Adds ``increments`` (field name -> amount) to ``metric``'s counters."""
        with self._lock:
            usage = self._by_metric.setdefault(metric, JudgeUsage())
            for name, amount in increments.items():
                setattr(usage, name, getattr(usage, name) + amount)

    def record_refusal(self) -> None:
        """Counts one evaluation the judge budget refused."""
        with self._lock:
            self._refused += 1

    @property
    def budget_refusals(self) -> int:
        """Evaluations the judge budget refused so far."""
        with self._lock:
            return self._refused

    def report_fatal(self, message: str) -> bool:
        """Records a fatal judge problem (auth, quota) once; True if it was new."""
        with self._lock:
            if message in self._fatal:
                return False
            self._fatal.append(message)
            return True

    @property
    def fatal_errors(self) -> list[str]:
        """Fatal problems (e.g. rejected credentials), each once, in the order met."""
        with self._lock:
            return list(self._fatal)

    def by_metric(self) -> dict[str, JudgeUsage]:
        """A snapshot of every metric's counters."""
        with self._lock:
            return {name: replace(usage) for name, usage in self._by_metric.items()}

    def total(self) -> JudgeUsage:
        """The counters summed over all metrics."""
        total = JudgeUsage()
        for usage in self.by_metric().values():
            total.add(usage)
        return total

    def summary_line(self) -> str:
        """One line for humans, e.g. ``judge: 12 calls, 3 cache hits, 4,512 tokens (3,900 in, 612 out), $0.0021``."""
        total = self.total()
        cost = f"${total.cost_usd:.4f}"
        if total.unpriced_calls:
            cost += f" (+{_counted(total.unpriced_calls, 'call')} of unpriced models)"
        line = (
            f"judge: {_counted(total.calls, 'call')}, {_counted(total.cache_hits, 'cache hit')}, "
            f"{_counted(total.retries, 'retry', 'retries')}, {_counted(total.failures, 'failure')}, "
            f"{total.total_tokens:,} tokens ({total.input_tokens:,} in, {total.output_tokens:,} out), {cost}"
        )
        if self.budget_refusals:
            line += f"; {self.budget_refusals} evaluation(s) refused by the judge budget"
        fatal = self.fatal_errors
        if fatal:
            line += "; " + "; ".join(fatal)
        return line


def _counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 call``, ``2 calls`` (``plural`` when the noun does not just take an ``s``)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
