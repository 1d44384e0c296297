"""Scoring a batch's requests: each new invocation evaluated once, at most ``worker_concurrency`` at once, the ones
already handled skipped (:mod:`otel_eval.worker._handled`), the turns of sessions held, and nothing new started once
the batch is cut short (:mod:`otel_eval.worker._cut`). :class:`~otel_eval.worker._batches.BatchPipeline` reads,
publishes and commits around it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

from otel_eval.evaluation.core import EvaluationCore, OnLoop
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker._cut import BatchCut, Start
from otel_eval.worker._handled import HandledInvocations, InvocationKey
from otel_eval.worker._metrics import WorkerMetrics
from otel_eval.worker._sessions import Routed
from otel_eval.worker._tenancy import DEFAULT_TENANT


@dataclass(frozen=True, slots=True)
class Work:
    """A request of the batch to score, with where it was read from and whose it is."""

    partition: int
    request: EvaluationRequest
    tenant: str = DEFAULT_TENANT
    on_session: Callable[[EvaluationRequest], None] | None = None
    """Given, when the request's conversation-level metrics wait for its session (which the one pairing and planning
    of the request says, :meth:`~otel_eval.evaluation.core.EvaluationCore.start` with ``sessions``): its turns are
    held in their sessions (requests), or re-keyed to the sessions topic (Collector path); only its per-invocation
    metrics are scored. None: every metric is scored."""
    starts: tuple[Start, ...] = ()
    """Where the request was read from: a batch cut short before it is scored commits nothing from there on."""


async def score(
    work: Sequence[Work],
    *,
    core: EvaluationCore,
    handled: HandledInvocations,
    cut: BatchCut,
    metrics: WorkerMetrics,
    concurrency: int,
) -> tuple[list[InvocationKey], list[Routed]]:
    """Evaluates the batch's new invocations (:mod:`~otel_eval.worker._handled` says which); returns the
    invocations handled and the records to publish.

    Each request is paired and planned once: a new one by :meth:`~otel_eval.evaluation.core.EvaluationCore.start`,
    which also says whether its turns wait for their session; one not evaluated again (its results known) by
    :meth:`~otel_eval.evaluation.core.EvaluationCore.holds_sessions`, when it carries session ids (its turns are
    held even so: a re-read rebuilds the session's window).
    """
    semaphore = asyncio.Semaphore(concurrency)
    found = handled.sort([(item.tenant, item.request.invocations) for item in work])
    evaluated = found.evaluated
    for index in found.again:
        item = work[index]
        if item.on_session is not None and core.holds_sessions(item.request):
            item.on_session(item.request)
    todo = [work[index] for index in found.new]
    if cut.requested:  # cut before scoring: nothing new starts
        cut.unfinished(start for item in todo for start in item.starts)
        todo = []

    def routed_of(item: Work, records: list[EvaluationRecord]) -> list[Routed]:
        return handled.routed(item.partition, item.tenant, item.request.invocations, records, evaluated)

    async def one(item: Work, on_loop: OnLoop) -> list[Routed]:
        async with semaphore:
            records = await on_loop()
        return routed_of(item, records)

    # A request whose metrics all run inline (no judge, no deadline) is scored here, without a task of its own;
    # the others are paired and planned once here, then scored on the loop, at most worker_concurrency at once.
    outcomes: list[list[Routed]] = []
    waiting: list[tuple[int, Work, Awaitable[list[Routed]]]] = []
    # The metrics scored here run with instrumentation suppressed (as scoring does per metric): said once for the
    # batch rather than attached and detached per metric. Nothing awaits in this loop; the coroutines made in it
    # start after it, under the loop's own context.
    token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        for item in todo:
            started = core.start(item.request, sessions=item.on_session is not None)
            if started.holds_session and item.on_session is not None:
                item.on_session(item.request)
            if started.on_loop is None:
                outcomes.append(routed_of(item, started.records))
                continue
            waiting.append((len(outcomes), item, one(item, started.on_loop)))
            outcomes.append([])
    finally:
        detach(token)
    finished = await cut.finish([(item.starts, scored) for _, item, scored in waiting])
    for (index, _, _), routed in zip(waiting, finished, strict=True):
        outcomes[index] = routed or []
    metrics.duplicates_skipped(found.copies)
    metrics.evaluated(len(todo) - finished.count(None))
    return evaluated, found.kept + [pair for records in outcomes for pair in records]
