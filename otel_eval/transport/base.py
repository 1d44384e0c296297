"""The interface between the span processor and whatever evaluates its requests, mirroring OTel's ``SpanExporter``.

The processor assembles :class:`~otel_eval.model.messages.EvaluationRequest` objects on its background thread
and hands them to an :class:`InvocationExporter`: the embedded in-process worker by default, Kafka when configured,
an in-memory list in tests.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Sequence
from typing import Protocol

from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct.plain import PlainRequest


class RequestEvaluator(Protocol):
    """What evaluates a request once it has been transported: the evaluation core of the embedded worker and of the
    Kafka worker (:class:`otel_eval.evaluation.core.EvaluationCore`), which also emits the results."""

    async def evaluate(self, request: EvaluationRequest) -> list[EvaluationRecord]:
        """Scores and emits ``request``; returns its records. Never raises."""
        ...


class ExportResult(enum.Enum):
    """Outcome of :meth:`InvocationExporter.export` (as ``SpanExportResult``)."""

    SUCCESS = 0
    FAILURE = 1


class InvocationExporter(abc.ABC):
    """Ships evaluation requests out of the span processor.

    Implementations must not block for long in :meth:`export` (they are called on the processor's background
    thread, never on the agent's) and must not raise: failures are reported as :attr:`ExportResult.FAILURE` and
    counted by the implementation.
    """

    @abc.abstractmethod
    def export(self, requests: Sequence[EvaluationRequest]) -> ExportResult:
        """Hands ``requests`` over for evaluation.

        Args:
            requests: Requests in the order their invocations finished.

        Returns:
            SUCCESS when every request was accepted, FAILURE when any was dropped.
        """

    def export_rebuilt(self, requests: Sequence[EvaluationRequest | PlainRequest]) -> ExportResult:
        """:meth:`export` of the span processor's requests, which may hold in-process plain requests
        (:class:`~otel_eval.reconstruct.plain.PlainRequest`): by default each made the full request it stands for
        (what a transport ships); an exporter that scores them here takes them as they are."""
        return self.export([r if isinstance(r, EvaluationRequest) else r.full() for r in requests])

    scores_here: bool = False
    """Whether the requests are scored in this process (the embedded worker): their records reach this process's
    sinks, and :meth:`drain` has something to wait for. A transport that ships them elsewhere (Kafka) leaves it
    False."""

    def drain(self, timeout_millis: int = 30000) -> bool:
        """Waits until every accepted request is scored and its records emitted, without flushing what lies beyond
        (sinks that deliver later). Only a transport that :attr:`scores_here` has anything to wait for; the others
        return True at once.

        Returns:
            False when ``timeout_millis`` passed first.
        """
        return True

    def report_unfinished(self, report: Callable[[int], None]) -> None:
        """Has ``report`` called with how many invocations this transport holds unscored (accepted, neither emitted
        nor counted as dropped), whenever that changes. Only a transport that :attr:`scores_here` holds any; the
        others never call it. The evaluation process stores the count where its parent reads it if it dies."""
        del report  # nothing held here, nothing to report

    def has_capacity(self) -> bool:
        """Whether :meth:`export` would accept another request now. The processor checks it before rebuilding a
        trace, so an overloaded transport sheds load before any reconstruction work is spent on it."""
        return True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Waits until accepted requests are delivered (or evaluated, for the embedded worker).

        Returns:
            False when ``timeout_millis`` passed first.
        """
        return True

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Stops accepting requests and drains what was accepted, within ``timeout_millis``. Idempotent."""
        return None
