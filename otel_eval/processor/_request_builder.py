"""Finished subtrees -> evaluation requests: the spans converted, their content log records joined, the invocations
rebuilt (only what the metrics read) and filtered by agent name. Used by :class:`~otel_eval.processor._assembler.SpanAssembler`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from otel_eval.evaluation import GoldenIndex, pair_invocations
from otel_eval.model import BaseCriterion, EvalSet, TracedInvocation
from otel_eval.model.messages import EvaluationRequest
from otel_eval.processor._selection import InvocationFilters
from otel_eval.reconstruct import Reads, rebuild_traces
from otel_eval.reconstruct.plain import PLAIN_READS, PlainRequest
from otel_eval.traces import spans_from_readable
from otel_eval.traces.log_records import SpanLogRecord, attach_log_records

logger = logging.getLogger(__name__)

_ALL = Reads.ALL
"""Read once: looking an enum member up is a call of its metaclass (~100 ns, three times :func:`full_rebuild`'s)."""


def full_rebuild() -> Reads:
    """:attr:`Reads.ALL <otel_eval.reconstruct.reads.Reads.ALL>`: the reads of a builder whose requests a remote worker
    scores (it may score anything)."""
    return _ALL


@dataclass(frozen=True, slots=True)
class RequestBuilder:
    """Rebuilds invocations from spans and wraps each one that passes the filters in an :class:`EvaluationRequest`.

    Args:
        filters: Agent-name filter (the root-span-name filter is applied before rebuilding).
        criteria: Criteria sent with each request (None: the worker's own).
        eval_set: Golden cases; an invocation that pairs with a case (:func:`otel_eval.evaluation.pair_invocations`)
            carries that case, for a worker that does not hold the eval set. None with the embedded worker: its core
            holds the eval set and pairs each request once, together with its plan.
        reads: What the rebuild produces (:mod:`otel_eval.reconstruct.reads`): what the metrics that score the
            requests read (the full rebuild by default); with ``eval_set``, the user message pairing reads too.
            Reads that plain views hold (:data:`~otel_eval.reconstruct.plain.PLAIN_READS`), without ``eval_set``, are
            for the embedded core only: a trace rebuilt into plain views then gives
            :class:`~otel_eval.reconstruct.plain.PlainRequest`\\ s (no ADK model made; a transport that ships them
            makes each the full request, :meth:`~otel_eval.transport.base.InvocationExporter.export_rebuilt`).
            Asked at each build: the embedded core's ``reads`` is planned on the background thread.
    """

    filters: InvocationFilters
    criteria: dict[str, BaseCriterion] | None = None
    eval_set: EvalSet | None = None
    reads: Callable[[], Reads] = full_rebuild
    _golden: GoldenIndex | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.eval_set is not None:
            object.__setattr__(self, "_golden", GoldenIndex(self.eval_set))

    def build(
        self, spans: Sequence[ReadableSpan], log_records: Sequence[SpanLogRecord] = ()
    ) -> list[EvaluationRequest | PlainRequest]:
        """One request per rebuilt invocation that passes the filters, in start-time order; ``log_records`` (GenAI
        content log records of these spans) are joined onto their spans as events first.

        Raises:
            Exception: whatever conversion or reconstruction raised (the caller counts the trace as dropped).
        """
        converted = spans_from_readable(spans)
        if log_records:
            attach_log_records(converted, log_records)
        requests: list[EvaluationRequest | PlainRequest] = []
        criteria: dict[str, Any] | None = None
        if self.criteria is not None:
            criteria = {name: c.model_dump(mode="json", exclude_unset=True) for name, c in self.criteria.items()}
        reads = self.reads()
        if self.eval_set is not None:
            reads |= Reads.USER_CONTENT
        plain = reads in PLAIN_READS
        agent_allowed = self.filters.agent_allowed
        for trace in rebuild_traces(converted, reads=reads):
            for warning in trace.warnings:
                logger.debug("%s", warning)
            views = trace.plain if plain else None
            if views is not None:
                requests += [PlainRequest([view], criteria) for view in views if agent_allowed(view.agent_name)]
                continue
            for invocation in trace.invocations:
                if agent_allowed(invocation.agent_name):
                    requests.append(self._request(invocation, criteria))
        return requests

    def _request(self, invocation: TracedInvocation, criteria: dict[str, Any] | None) -> EvaluationRequest:
        eval_case = (
            pair_invocations([invocation], self.eval_set, index=self._golden).case
            if self.eval_set is not None
            else None
        )
        return EvaluationRequest(
            invocations=[invocation],
            criteria=criteria,
            eval_case=eval_case,
            eval_set_id=self.eval_set.eval_set_id if eval_case is not None and self.eval_set is not None else None,
        )
