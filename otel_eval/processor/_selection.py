"""Which spans and invocations the processor evaluates: deterministic trace-id sampling, filters, own traffic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan

from otel_eval import semconv

_LOW_64_BITS = (1 << 64) - 1


def sampling_bound(sample_rate: float) -> int | None:
    """The bound the low 64 bits of a trace id must stay under, as ``TraceIdRatioBased`` computes it.

    None means "every trace" (rate 1), so the hot path can skip the comparison.

    Raises:
        ValueError: ``sample_rate`` outside [0, 1].
    """
    if not 0.0 <= sample_rate <= 1.0:
        raise ValueError(f"sample_rate must be between 0 and 1, got {sample_rate!r}")
    if sample_rate >= 1.0:
        return None
    return round(sample_rate * (1 << 64))


def is_sampled(trace_id: int, bound: int | None) -> bool:
    """Whether ``trace_id`` is evaluated: the same id gives the same answer in every process."""
    return bound is None or (trace_id & _LOW_64_BITS) < bound


def is_own_traffic(span: ReadableSpan) -> bool:
    """Spans otel-eval itself makes (scope ``otel_eval``) and Kafka client spans: never buffered or evaluated."""
    scope = span.instrumentation_scope
    name = scope.name if scope is not None else ""
    return (
        name == semconv.INSTRUMENTATION_SCOPE
        or name.startswith(semconv.INSTRUMENTATION_SCOPE + ".")
        or name in semconv.KAFKA_CLIENT_SCOPES
    )


def is_local_root(span: ReadableSpan) -> bool:
    """A span with no parent, or with a parent in another process: its end completes its subtree."""
    parent = span.parent
    return parent is None or parent.is_remote


@dataclass(frozen=True, slots=True)
class InvocationFilters:
    """Agent-name and root-span-name filters; empty means "everything"."""

    agent_names: frozenset[str] = frozenset()
    root_span_prefixes: tuple[str, ...] = ()

    @classmethod
    def create(cls, agent_names: Iterable[str] = (), root_span_names: Iterable[str] = ()) -> InvocationFilters:
        """Filters from name lists (blank entries ignored)."""
        return cls(
            agent_names=frozenset(n.strip() for n in agent_names if n.strip()),
            root_span_prefixes=tuple(n.strip() for n in root_span_names if n.strip()),
        )

    def root_allowed(self, span_names: Iterable[str]) -> bool:
        """Whether any of the subtree's top span names starts with an allowed prefix."""
        if not self.root_span_prefixes:
            return True
        return any(name.startswith(self.root_span_prefixes) for name in span_names)

    def agent_allowed(self, agent_name: str | None) -> bool:
        """Whether an invocation of ``agent_name`` is evaluated."""
        return not self.agent_names or (agent_name is not None and agent_name in self.agent_names)
