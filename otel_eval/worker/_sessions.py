"""``OpenSessions``: the Kafka worker's open sessions, and the offsets they hold back from the commit.

A request whose conversation-level metrics wait for its session (as the one pairing and planning of the request
says: :meth:`~otel_eval.evaluation.core.EvaluationCore.start` with ``sessions``) is scored at once on its
per-invocation metrics; its turns are held (:meth:`OpenSessions.hold`) in the embedded worker's
:class:`~otel_eval.evaluation.sessions.SessionStage`, with the worker's session settings, until the session's
window closes: idle for ``session_idle_timeout`` seconds, or ``session_max_turns`` reached. The batch during which a
window closes judges it (:meth:`OpenSessions.judge`, :meth:`~otel_eval.evaluation.core.EvaluationCore.evaluate_window`)
and publishes its results with the batch's own, before the batch's offsets are committed.

Offsets: a partition's commit is held at the first record of every window still open there
(:meth:`OpenSessions.committable`), so a worker that dies or loses the partition loses no session: the next owner
re-reads from there and rebuilds the window. Its turns are held again even when their per-invocation results are
known (those are not scored twice), and a turn read twice is held once. Revoked partitions and a rewind forget their
sessions (:meth:`OpenSessions.forget`); at shutdown open sessions are not judged but left uncommitted, for the next
owner. A window every turn of which was already judged in a published window (by a worker whose commit another open
session held back) is not judged again.

Sessions are keyed by (tenant, session id) (:mod:`otel_eval.worker._tenancy`): another tenant's turns with the same
session id are another session, and each tenant holds at most ``max_open_sessions_per_tenant`` sessions.

The Collector path reads a session's turns from trace-keyed partitions: its worker scores each rebuilt invocation at
once and re-keys those whose sessions are held to the sessions topic (:class:`SessionsTopic`), before committing the
spans; the ``sessions`` source holds them and judges their windows here (:meth:`OpenSessions.hold_rekeyed`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_eval import semconv
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionKey, SessionLimits, SessionStage, SessionWindow
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.worker._tenancy import DEFAULT_TENANT, worker_headers
from otel_eval.worker.results import ResultLedger, invocation_key

Routed = tuple[int, EvaluationRecord, str]
"""A result to publish: (the partition its request came from, the record, its tenant)."""

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Held:
    """Where an open window's records are: what holds the commit back, and which turns it holds."""

    offsets: dict[Any, int] = field(default_factory=dict)
    """Topic partition -> offset of the window's first record there."""
    turns: set[str] = field(default_factory=set)

    @property
    def partition(self) -> int:
        """The partition of the window's first record: where its results are published (read back from)."""
        return int(next(iter(self.offsets)).partition)


class OpenSessions:
    """The turns of the open sessions of one worker's partitions (see the module's docstring).

    Args:
        core: evaluates requests and says which wait for their sessions.
        limits: when windows close, and how much is held.
        ledger: the results already published (a window already judged is not judged again).
    """

    def __init__(self, core: EvaluationCore, limits: SessionLimits, ledger: ResultLedger) -> None:
        self._core = core
        self._stage = SessionStage(limits, core.pipeline)
        self._ledger = ledger
        self._held: dict[SessionKey, _Held] = {}
        self._closed: list[tuple[SessionWindow, _Held]] = []
        self._said_not_waiting = False

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, tp: Any, offset: int, request: EvaluationRequest, tenant: str = DEFAULT_TENANT) -> None:
        """Holds the turns of ``request`` (read at ``offset`` of partition ``tp``, of ``tenant``) in their sessions'
        windows."""
        for turn in request.invocations:
            session_id = turn.session_id
            if not session_id:
                continue
            session = (tenant, session_id)
            key = invocation_key(turn.trace_id, turn.span_id)
            held = self._held.get(session) or _Held()
            if key in held.turns:
                continue  # redelivered
            before = self._stage.held_turns(session_id, tenant)
            full = self._stage.hold([turn], tenant=tenant)
            if not full and self._stage.held_turns(session_id, tenant) == before:
                continue  # dropped by a bound (counted): neither remembered nor holding the commit back
            held.offsets[tp] = min(offset, held.offsets.get(tp, offset))
            held.turns.add(key)
            if full:
                self._held.pop(session, None)
                self._closed.extend((window, held) for window in full)
            elif self._stage.is_open(session_id, tenant):
                self._held[session] = held

    def hold_rekeyed(self, tp: Any, offset: int, request: EvaluationRequest, tenant: str = DEFAULT_TENANT) -> None:
        """Holds the turns of a sessions-topic ``request`` (scored where it was rebuilt: only its window is left).

        When its metrics no longer wait for its session (the criteria changed since it was re-keyed), nothing is left
        to do: its turns are counted as dropped (``otel_eval.invocations.dropped``, reason ``no_session_metrics``)
        and the first such request is logged at WARNING."""
        if self._core.holds_sessions(request):
            self.hold(tp, offset, request, tenant)
            return
        pipeline = self._core.pipeline
        if pipeline is not None:
            pipeline.invocations_dropped(semconv.DROP_NO_SESSION_METRICS, len(request.invocations))
        if not self._said_not_waiting:
            self._said_not_waiting = True
            logger.warning(
                "%s/%d@%d: turns re-keyed to the sessions topic have no conversation-level metric to wait for under "
                "this worker's criteria: skipped, counted as otel_eval.invocations.dropped{%s=%s} (said once)",
                tp.topic,
                tp.partition,
                offset,
                semconv.OTEL_EVAL_DROP_REASON,
                semconv.DROP_NO_SESSION_METRICS,
            )

    def seconds_to_next_close(self) -> float | None:
        """Seconds until a window may close (0: one is closed, to judge; None: none open)."""
        return 0.0 if self._closed else self._stage.seconds_to_next_close()

    async def judge(self, concurrency: int) -> tuple[list[Routed], int]:
        """Judges the windows closed (full, or idle now), ``concurrency`` at once, and releases their offsets.

        Returns:
            The (partition, record, tenant) triples to publish (records already published left out), and the turns
            of the windows not judged again (already judged in a published window).
        """
        closing, self._closed = self._closed, []
        closing += [(window, self._held.pop(window.key)) for window in self._stage.expire()]
        if not closing:
            return [], 0
        core, ledger = self._core, self._ledger
        semaphore = asyncio.Semaphore(concurrency)
        todo = [
            (w, h)
            for w, h in closing
            if not all(ledger.has_session_turn(t.trace_id, t.span_id, w.tenant) for t in w.turns)
        ]

        async def one(window: SessionWindow, held: _Held) -> list[Routed]:
            async with semaphore:
                records = await core.evaluate_window(window)
            tenant = window.tenant
            return [(held.partition, r, tenant) for r in records if not ledger.has_result(r.result_id, tenant)]

        judged = await asyncio.gather(*(one(w, h) for w, h in todo))
        skipped = sum(len(w.turns) for w, _ in closing) - sum(len(w.turns) for w, _ in todo)
        return [pair for pairs in judged for pair in pairs], skipped

    def committable(self, tp: Any, position: int) -> int:
        """The offset that may be committed on ``tp``: ``position``, held back by the windows open there."""
        return min([position, *(h.offsets[tp] for h in self._held.values() if tp in h.offsets)])

    def forget(self, partitions: Iterable[Any]) -> int:
        """Forgets, unjudged, the sessions with records on ``partitions`` (revoked, or re-read after a rewind):
        their next reader rebuilds them from the held-back offsets. Returns how many."""
        gone = set(partitions)
        lost = [session for session, held in self._held.items() if gone & held.offsets.keys()]
        self._stage.discard(lost)
        for session in lost:
            del self._held[session]
        self._closed = [(w, h) for w, h in self._closed if not gone & h.offsets.keys()]
        return len(lost)


class SessionsTopic:
    """The Collector path's sessions topic: rebuilt invocations whose conversation-level metrics wait for their
    session, keyed by session id, so that every turn of a session reaches the one worker (``sessions`` source) that
    holds it, whichever trace partition each turn was read from.

    Args:
        producer: a started ``AIOKafkaProducer``.
        topic: the sessions topic.
    """

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self.topic = topic

    async def publish(self, requests: Sequence[tuple[EvaluationRequest, str]]) -> None:
        """Sends the (request, tenant) pairs ``requests`` keyed by session id, each with its tenant in a header, and
        waits for every acknowledgement.

        Raises:
            aiokafka.errors.KafkaError: a send finally failed (the batch is then not committed, so it is retried).
        """
        futures = [
            await self._producer.send(
                self.topic,
                value=r.to_wire(),
                key=r.record_key.encode("utf-8", "surrogatepass"),
                headers=worker_headers(t),
            )
            for r, t in requests
        ]
        await asyncio.gather(*futures)
