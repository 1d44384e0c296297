"""The worker boundary around one request or session window: what fails inside is logged, counted and swallowed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import TracebackType

from otel_eval import semconv
from otel_eval._runtime.exception_text import exception_outline
from otel_eval.emit.pipeline import PipelineMetrics
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct.plain import PlainRequest

logger = logging.getLogger("otel_eval.evaluation.core")
"""The evaluation core's logger: the boundary is the core's."""

Request = EvaluationRequest | PlainRequest
"""What the core scores: a request, or (in process, from the span processor) a request of plain views."""


@dataclass(slots=True)
class Boundary:
    """The worker boundary around one request or window: an exception is logged, counted as ``evaluation_error``
    for its invocations and swallowed (one bad request must not stop the others; the caller returns no records)."""

    pipeline: PipelineMetrics | None
    request: Request
    what: str | None
    """What it is for the log; None: the request's trace (worked out only when it fails)."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if not isinstance(error, Exception):
            return False
        what = self.what if self.what is not None else f"trace {self.request.trace_id}"
        # The exception's message may quote the invocations' content: the type and place only, the whole at DEBUG.
        logger.error("evaluation of %s failed: %s", what, exception_outline(error))
        logger.debug("evaluation of %s failed", what, exc_info=(kind, error, traceback))  # type: ignore[arg-type]
        if self.pipeline is not None:
            request = self.request
            count = len(request.plain) if isinstance(request, PlainRequest) else len(request.invocations)
            self.pipeline.invocations_dropped(semconv.DROP_EVALUATION_ERROR, count)
        return True
