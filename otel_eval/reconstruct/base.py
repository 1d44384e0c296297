"""The reconstruction interface: one :class:`Convention` per trace convention, chosen per trace."""

from __future__ import annotations

import abc
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from otel_eval.model import TracedInvocation
from otel_eval.reconstruct.plain import PlainInvocation
from otel_eval.reconstruct.reads import Reads
from otel_eval.traces.span import Span


@dataclass(slots=True, init=False)
class TraceInvocations:
    """The invocations rebuilt from one trace, in start-time order.

    Args:
        trace_id: The trace id.
        convention: The convention that rebuilt it.
        invocations: Its invocations (leave out with ``plain``: then made from the views when first asked for).
        warnings: One line per problem.
        plain: The invocations' plain views (see :attr:`plain`).
    """

    trace_id: str
    convention: str
    warnings: list[str]
    """One line per problem (malformed attribute, missing parent, content not captured, ...)."""
    plain: list[PlainInvocation] | None
    """The invocations' plain views (:mod:`otel_eval.reconstruct.plain`), in the same order, when the convention
    makes them (GenAI, OpenInference, OpenLLMetry; None for the ADK conventions, whose replay makes the models, for
    a trace no convention rebuilt, and for one whose root span ids or times are malformed)."""
    _invocations: list[TracedInvocation] | None

    def __init__(
        self,
        trace_id: str,
        convention: str,
        invocations: list[TracedInvocation] | None = None,
        warnings: list[str] | None = None,
        plain: list[PlainInvocation] | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.convention = convention
        self.warnings = [] if warnings is None else warnings
        self.plain = plain
        self._invocations = invocations if invocations is not None or plain is not None else []

    @property
    def invocations(self) -> list[TracedInvocation]:
        """The invocations (``TracedInvocation``), in start-time order: for a trace of plain views, their models, made
        when first asked for (then the same list)."""
        invocations = self._invocations
        if invocations is None:
            plain = self.plain or []
            invocations = self._invocations = [view.traced() for view in plain]
        return invocations

    @invocations.setter
    def invocations(self, invocations: list[TracedInvocation]) -> None:
        self._invocations = invocations

    def every_warning(self) -> list[str]:
        """The trace's warnings, then its invocations' (a malformed message, no user message found, content not
        captured), each once and in order: what a report of the whole trace shows."""
        if self._invocations is None and self.plain is not None:
            per_invocation = [view.facts["warnings"] for view in self.plain]
        else:
            per_invocation = [inv.warnings for inv in self.invocations]
        # An invocation's list may repeat its trace's or an earlier invocation's lines (one reader per trace).
        return list(dict.fromkeys(itertools.chain(self.warnings, *per_invocation)))

    @property
    def start_time_ns(self) -> int:
        """Start of the first invocation (0 when there is none)."""
        if self._invocations is None and self.plain is not None:
            return min((view.start_time_ns for view in self.plain), default=0)
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
