"""``JudgeWatch``: the few log lines that say the judge is failing (timeouts, 5xx, 429, refused connections) and when
it answers again.

The judge client retries each call and then gives its metric a ``NOT_EVALUATED`` result with the error type: a judge
outage shows in the results and metrics, and without this watch in no line of the worker's log. The watch reads each
request's records (a :data:`~otel_eval.emit.RecordSink`): one WARNING when judged results start failing, at most one
summary a minute while it lasts, one INFO when a metric that failed is judged again. The lines name error types and
metrics only, never the judge's error text (it may hold the endpoint).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

from otel_eval.judge import JUDGE_CONNECTION, JUDGE_RATE_LIMITED, JUDGE_SERVER_ERROR, JUDGE_TIMEOUT
from otel_eval.model.messages import EvaluationRecord

logger = logging.getLogger(__name__)

OUTAGE_ERRORS: Final = frozenset({JUDGE_TIMEOUT, JUDGE_SERVER_ERROR, JUDGE_RATE_LIMITED, JUDGE_CONNECTION})
"""The error types of a judge that is down, overloaded or out of reach (what retries could not get past)."""
SUMMARY_SECONDS: Final = 60.0


class JudgeWatch:
    """Logs judge outages from the records the worker evaluates (see the module's docstring). Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._last_line = 0.0
        self._failing: set[str] = set()
        self._recent: Counter[str] = Counter()
        self._total = 0

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        failed = [r for r in records if r.error_type in OUTAGE_ERRORS]
        with self._lock:
            if failed:
                self._failed(failed)
            elif self._since is not None and any(
                r.error_type is None and r.metric_name in self._failing for r in records
            ):
                self._back()

    def _failed(self, failed: list[EvaluationRecord]) -> None:
        now = self._clock()
        self._recent.update(r.error_type for r in failed if r.error_type)
        self._total += len(failed)
        self._failing.update(r.metric_name for r in failed)
        if self._since is None:
            self._since = self._last_line = now
            logger.warning(
                "judge failing (%s): %s NOT_EVALUATED until it answers again",
                _counts(self._recent),
                ", ".join(sorted(self._failing)),
            )
            self._recent.clear()
        elif now - self._last_line >= SUMMARY_SECONDS:
            logger.warning(
                "judge still failing after %.0f s: %d results NOT_EVALUATED since the last line (%s)",
                now - self._since,
                sum(self._recent.values()),
                _counts(self._recent),
            )
            self._last_line = now
            self._recent.clear()

    def _back(self) -> None:
        since = self._since if self._since is not None else self._clock()
        logger.info(
            "judge answering again after %.0f s; %d results were NOT_EVALUATED meanwhile",
            self._clock() - since,
            self._total,
        )
        self._since = None
        self._failing.clear()
        self._recent.clear()
        self._total = 0


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{error}: {count}" for error, count in sorted(counts.items()))
