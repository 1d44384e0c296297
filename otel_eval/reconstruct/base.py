"""The reconstruction interface: one :class:`Convention` per trace convention, chosen per trace."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from otel_eval.model import TracedInvocation
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span


@dataclass(slots=True)
class TraceInvocations:
    """The invocations rebuilt from one trace, in start-time order."""

    trace_id: str
    convention: str
    invocations: list[TracedInvocation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """One line per problem (malformed attribute, missing parent, content not captured, ...)."""
    plain: list[PlainInvocation] | None = None
    """The invocations' plain views (:mod:`otel_eval.reconstruct.plain`), in the same order, when the convention
    makes them (GenAI, OpenInference, OpenLLMetry; None for the ADK conventions, whose replay makes the models, and
    for a trace no convention rebuilt)."""

    @property
    def start_time_ns(self) -> int:
        """Start of the first invocation (0 when there is none)."""
        return min((inv.start_time_ns for inv in self.invocations), default=0)


class Convention(abc.ABC):
    """Rebuilds invocations from the spans of one trace written in one convention."""

    name: ClassVar[str]
    """Short name reported as ``convention`` (e.g. ``adk``, ``genai``, ``openinference``, ``openllmetry``)."""

    @abc.abstractmethod
    def detect(self, spans: Sequence[Span]) -> bool:
        """Whether ``spans`` (one trace) are written in this convention. Cheap: attribute and name checks only."""

    @abc.abstractmethod
    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        """Invocations of one trace with (at least) the parts ``reads`` asks for (:mod:`otel_eval.reconstruct.reads`).
        Never raises on malformed content: records a warning and goes on."""
