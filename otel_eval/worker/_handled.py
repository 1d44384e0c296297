"""Which of a batch's invocations the worker evaluates, at least once and no more than it must.

Not evaluated again: an invocation the ledger holds (handled before), one of the batch being settled (a copy of it
in the next batch), a copy within the same batch. One evaluated in an earlier attempt of this batch whose results
could not be published has them kept here, and they are published on the retry instead of being evaluated again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRecord
from otel_eval.worker._sessions import Routed
from otel_eval.worker.results import ResultLedger, invocation_key

InvocationKey = tuple[str, str, str]
"""(trace id, span id, tenant) of one invocation."""


@dataclass(slots=True)
class Sorted:
    """A batch's requests sorted by :meth:`HandledInvocations.sort` (each given as its position in the batch)."""

    new: list[int] = field(default_factory=list)
    """To evaluate."""
    again: list[int] = field(default_factory=list)
    """Not evaluated again: handled before, a copy in this batch, or with its records kept from an earlier attempt."""
    copies: int = 0
    """Invocations skipped as copies of ones handled."""
    kept: list[Routed] = field(default_factory=list)
    """The records kept from an earlier attempt, to publish."""
    evaluated: list[InvocationKey] = field(default_factory=list)
    """The invocations handled so far (those with records kept; :meth:`HandledInvocations.routed` adds the new)."""


class HandledInvocations:
    """The worker's view of what it already handled: the ledger, the batch being settled, and the records evaluated
    but not published yet (by invocation)."""

    def __init__(self, ledger: ResultLedger) -> None:
        self.ledger = ledger
        self._unpublished: dict[str, tuple[int, list[Routed]]] = {}
        """Invocation -> the partition it was read from and its records evaluated but not published yet."""
        self._in_settlement: set[str] = set()
        """Invocations of the batch being settled: a copy of one in the next batch is a duplicate, not new work."""

    def sort(self, batch: Sequence[tuple[str, Sequence[TracedInvocation]]]) -> Sorted:
        """Sorts a batch's requests, each given as (tenant, its invocations)."""
        ledger, settling, unpublished = self.ledger, self._in_settlement, self._unpublished
        in_batch: set[str] = set()
        found = Sorted()
        for index, (tenant, invocations) in enumerate(batch):
            keys = [invocation_key(i.trace_id, i.span_id, tenant) for i in invocations]
            known = all(ledger.has_invocation_key(k) or k in settling for k in keys)
            if not keys or known or all(k in in_batch for k in keys):
                found.copies += len(keys)
            elif all(k in unpublished for k in keys):
                in_batch.update(keys)
                found.kept.extend(routed for k in keys for routed in unpublished[k][1])
                found.evaluated.extend((i.trace_id, i.span_id, tenant) for i in invocations)
            else:
                in_batch.update(keys)
                found.new.append(index)
                continue
            found.again.append(index)
        return found

    def routed(
        self,
        partition: int,
        tenant: str,
        invocations: Sequence[TracedInvocation],
        records: list[EvaluationRecord],
        evaluated: list[InvocationKey],
    ) -> list[Routed]:
        """The records of a request just evaluated that were not published before, to publish; kept until
        :meth:`published`, and its invocations added to ``evaluated``."""
        has_result = self.ledger.has_result
        routed = [(partition, r, tenant) for r in records if not has_result(r.result_id, tenant)]
        if len(invocations) == 1:  # every record is the one invocation's
            trace_id, span_id = invocations[0].trace_id, invocations[0].span_id
            self._unpublished[invocation_key(trace_id, span_id, tenant)] = (partition, routed)
            evaluated.append((trace_id, span_id, tenant))
            return routed
        for invocation in invocations:
            trace_id, span_id = invocation.trace_id, invocation.span_id
            key = invocation_key(trace_id, span_id, tenant)
            mine = [p for p in routed if (p[1].trace_id, p[1].span_id) == (trace_id, span_id)]
            self._unpublished[key] = (partition, mine)
            evaluated.append((trace_id, span_id, tenant))
        return routed

    def settling(self, evaluated: Iterable[InvocationKey]) -> None:
        """Marks a batch's invocations as being settled."""
        self._in_settlement.update(invocation_key(t, s, tenant) for t, s, tenant in evaluated)

    def settled(self, evaluated: Iterable[InvocationKey]) -> None:
        """The batch whose invocations :meth:`settling` marked is committed, or abandoned."""
        self._in_settlement.difference_update(invocation_key(t, s, tenant) for t, s, tenant in evaluated)

    def published(self, evaluated: Iterable[InvocationKey]) -> None:
        """A batch's results are published: its invocations join the ledger, their kept records are dropped."""
        for trace_id, span_id, tenant in evaluated:
            self.ledger.add_invocation(trace_id, span_id, tenant)
            self._unpublished.pop(invocation_key(trace_id, span_id, tenant), None)

    def forget(self, partitions: Iterable[int]) -> None:
        """Drops the records kept for invocations read from ``partitions`` (revoked: their next owner evaluates
        them); kept, those of a batch whose publication failed before its partitions went elsewhere stayed for the
        process's life. By partition number (of any topic read): one of another topic with the same number is only
        evaluated again."""
        gone = set(partitions)
        for key in [key for key, (partition, _) in self._unpublished.items() if partition in gone]:
            del self._unpublished[key]

    def rewind(self) -> None:
        """The worker re-reads from its committed offsets: nothing is being settled."""
        self._in_settlement.clear()
