"""A record sink for the examples: says at once, in one WARNING, when the judge cannot be reached, and gives the run
its exit code (1 when a judged evaluation failed to reach the judge, so a recipe whose judge is down never ends
quietly with 0).

    watch = JudgeWatch()
    processor = EvaluationSpanProcessor.from_env(sinks=[watch])
    ...                                    # the agent runs; the processor is shut down
    sys.exit(watch.summary())              # one line: judged / not judged, and the exit code

The WARNING names the judge's endpoint (``OTEL_EVAL_JUDGE_BASE_URL``, else google-genai's own) and the error, never
a key: the error text is the judge client's, which redacts keys.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Sequence

from otel_eval.model.messages import EvaluationRecord

logger = logging.getLogger("otel_eval.examples")

JUDGE_ERRORS = "judge_"
"""The prefix of the error types of a judged evaluation the judge gave no verdict for (``judge_connection_error``,
``judge_timeout``, ``judge_not_configured``, ...; a judge-budget refusal is the budget doing its job, not counted)."""


def judge_endpoint() -> str:
    """Where the judge's calls go, as a log line may show it (no credentials)."""
    return os.environ.get("OTEL_EVAL_JUDGE_BASE_URL") or "google-genai's default endpoint"


class JudgeWatch:
    """Counts the judged results and the judge's failures; the first failure logs one WARNING at once."""

    def __init__(self) -> None:
        self.judged = 0
        self.failures: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, records: Sequence[EvaluationRecord]) -> None:
        for record in records:
            if record.evaluator_type != "llm_judge":
                continue
            with self._lock:
                if record.error_type and record.error_type.startswith(JUDGE_ERRORS):
                    first = not self.failures
                    self.failures[record.error_type] += 1
                    if first:
                        logger.warning(
                            "the judge at %s gave no verdict for %s: %s (%s); judged metrics are NOT_EVALUATED",
                            judge_endpoint(),
                            record.metric_name,
                            record.explanation or "no explanation",
                            record.error_type,
                        )
                elif record.score is not None:
                    self.judged += 1

    def summary(self) -> int:
        """Logs what the judge did in this run; returns the exit code (1 when the judge failed any evaluation)."""
        if not self.failures:
            return 0
        counts = ", ".join(f"{name}: {count}" for name, count in sorted(self.failures.items()))
        logger.warning(
            "%d judged evaluation(s) got no verdict from the judge at %s (%s), %d judged: exit 1",
            sum(self.failures.values()),
            judge_endpoint(),
            counts,
            self.judged,
        )
        return 1
