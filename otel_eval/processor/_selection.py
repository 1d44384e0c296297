"""Which spans and invocations the processor evaluates: deterministic sampling by session or trace id, priority
sampling, filters, own traffic.

Sampling by session: a multi-turn session's turns are separate traces, and the conversation-level metrics judge the
session from the turns evaluated, so its turns are evaluated all or none. With priority sampling (the default) every
trace is buffered and decided when its local root ends: by the session id its spans name (the first of
:data:`~otel_eval.reconstruct.sessions.SESSION_ID_KEYS` on the root, then on the other spans buffered: the rule every
convention's reader follows), hashed (:func:`session_sampled`: the same answer in every process and run), else by its
trace id. Without priority sampling the decision is made in ``on_start``
and ``on_end``, where no session id is known: by trace id only.

Priority sampling: a trace the trace-id decision leaves out is still evaluated when its local root span ended in
error or carries negative user feedback (the invocations the judge budget also judges first,
:mod:`otel_eval.judge.priority`).

The processor then buffers left-out traces like the others (same limits) and decides when each local root ends, from
that span alone: its status, and one attribute (``OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE``, negative values
``OTEL_EVAL_PRIORITY_FEEDBACK_VALUES``). A rescued root is counted in ``otel_eval.invocations.priority_sampled``
(by ``otel_eval.priority.reason``), any other in ``otel_eval.invocations.sampled_out``; neither is a loss. A rescued
root's invocations carry the reason (:func:`mark_rescued`) to their results, so the results without it stay an
unbiased sample of the traffic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from otel_eval import semconv
from otel_eval.instruments import InstrumentHolder
from otel_eval.judge.priority import PriorityPolicy
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct.plain import PlainRequest
from otel_eval.reconstruct.sessions import session_id_of
from otel_eval.reconstruct.signals import feedback_attribute, feedback_text

_LOW_64_BITS = (1 << 64) - 1
_OWN_SCOPE_PREFIX = semconv.INSTRUMENTATION_SCOPE + "."


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


def session_sampled(session_id: str, bound: int | None) -> bool:
    """Whether the session ``session_id`` is evaluated: a 64-bit BLAKE2b hash of the id under ``bound`` (the bound a
    trace id's low 64 bits are compared with), so the same id gives the same answer in every process and run."""
    if bound is None:
        return True
    digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") < bound


def in_sample(trace_id: int, spans: Iterable[ReadableSpan], bound: int | None) -> bool:
    """Whether a trace whose buffered ``spans`` (its local root first, when it ended) are these is evaluated: by the
    session they name (:func:`session_sampled`), else by ``trace_id`` (:func:`is_sampled`)."""
    if bound is None:
        return True
    session = session_id_of(spans)
    return is_sampled(trace_id, bound) if session is None else session_sampled(session, bound)


def is_own_traffic(span: ReadableSpan) -> bool:
    """Spans otel-eval itself makes (scope ``otel_eval``) and Kafka client spans: never buffered or evaluated."""
    scope = span.instrumentation_scope
    if scope is None:
        return False
    # A tracer's spans share its scope object: decided once per scope (kept by the scope's identity, looked up here
    # without a call: this runs for every span).
    entry = _OWN_SCOPES.get(id(scope))
    if entry is not None and entry[0] is scope:
        return entry[1]
    name = scope.name
    own = (
        name.startswith(semconv.INSTRUMENTATION_SCOPE)
        and (name == semconv.INSTRUMENTATION_SCOPE or name.startswith(_OWN_SCOPE_PREFIX))
    ) or name in semconv.KAFKA_CLIENT_SCOPES
    if len(_OWN_SCOPES) >= _OWN_SCOPES_KEPT:  # a process has a few scopes: a full cache means they are not long-lived
        _OWN_SCOPES.clear()
    _OWN_SCOPES[id(scope)] = (scope, own)  # the entry holds its scope: its id is not reused while it lives
    return own


_OWN_SCOPES: dict[int, tuple[object, bool]] = {}
"""Whether an instrumentation scope's spans are own traffic, by the scope's id (each entry holds its scope)."""
_OWN_SCOPES_KEPT = 256


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


class SamplePriority(InstrumentHolder):
    """Decides whether a left-out local root is evaluated anyway, and counts the decisions.

    Args:
        meter_provider: Where the two counters go (the global provider when None).
        policy: The negative feedback values (the environment's when None).
        attribute: The feedback attribute's name (the environment's when None).
    """

    def __init__(
        self,
        meter_provider: MeterProvider | None = None,
        *,
        policy: PriorityPolicy | None = None,
        attribute: str | None = None,
    ) -> None:
        super().__init__(meter_provider)
        self._policy = policy or PriorityPolicy.from_env()
        self._attribute = attribute or feedback_attribute()
        self._sampled_out = self._counter(
            semconv.METRIC_INVOCATIONS_SAMPLED_OUT,
            "{invocation}",
            "Local roots left out by the sampling decision (session or trace id) and not evaluated (not a loss).",
        )
        self._rescued = self._counter(
            semconv.METRIC_INVOCATIONS_PRIORITY_SAMPLED,
            "{invocation}",
            "Local roots left out by the sampling decision (session or trace id) but evaluated: error or negative "
            "feedback.",
        )

    def reason(self, root: ReadableSpan) -> str | None:
        """Why ``root`` is evaluated although its trace was sampled out (a ``PRIORITY_REASON_*``), or None."""
        status = root.status
        if status is not None and status.status_code is StatusCode.ERROR:
            return semconv.PRIORITY_REASON_ERROR
        attributes = root.attributes
        if attributes and self._policy.is_negative(feedback_text(attributes.get(self._attribute))):
            return semconv.PRIORITY_REASON_NEGATIVE_FEEDBACK
        return None

    def decide(self, root: ReadableSpan) -> str | None:
        """Why the left-out ``root`` is evaluated (its :meth:`reason`), None when it is not; counts the decision."""
        reason = self.reason(root)
        if reason is None:
            self._add(self._sampled_out, "invocations.sampled_out", 1)
            return None
        attributes = {semconv.OTEL_EVAL_PRIORITY_REASON: reason}
        self._add(self._rescued, f"invocations.priority_sampled.{reason}", 1, attributes)
        return reason


def mark_rescued(requests: Iterable[EvaluationRequest | PlainRequest], reason: str) -> None:
    """Gives the invocations of ``requests`` (a rescued root's) the reason priority sampling evaluated them for: it
    travels to their results (``otel_eval.priority.reason``), which then tell them apart from the sample's."""
    for request in requests:
        request.rescued(reason)


@dataclass(frozen=True, slots=True)
class Sampling:
    """Which traces are evaluated: the session or trace-id decision (``bound``), and the rescue of left-out ones
    (``priority``).

    Args:
        bound: The sampling bound (:func:`~otel_eval.processor._selection.sampling_bound`; None: all).
        priority: With a bound, what rescues a left-out local root (None: head sampling by trace id, at intake).
    """

    bound: int | None
    priority: SamplePriority | None

    @classmethod
    def create(cls, sample_rate: float, sample_priority: bool, meter_provider: MeterProvider | None) -> Sampling:
        """The sampling of ``sample_rate`` (ValueError outside [0, 1]), with priority sampling when asked for and
        the rate leaves traces out."""
        bound = sampling_bound(sample_rate)
        return cls(bound, SamplePriority(meter_provider) if sample_priority and bound is not None else None)

    @property
    def intake_bound(self) -> int | None:
        """The bound the span intake applies: with priority sampling every trace gets in (decided at its root)."""
        return None if self.priority is not None else self.bound

    @property
    def session_in_sample(self) -> Callable[[str], bool] | None:
        """Whether a session is in the sample, when sessions are sampled (priority sampling below 1), else None: its
        turns that priority sampling rescued from a left-out session are not judged as a session of their own."""
        if self.priority is None or self.bound is None:
            return None
        return partial(session_sampled, bound=self.bound)

    @property
    def head_sampling(self) -> bool:
        """Traces are left out by their trace id at intake, where no session id is known (a rate below 1 without
        priority sampling): a session's turns are sampled one by one."""
        return self.bound is not None and self.priority is None

    def will_evaluate(self, span: ReadableSpan, trace_id: int) -> bool:
        """Whether ``span`` is a local root whose scores may come, decided from the root alone: sampled by its trace
        id (head sampling), rescued by priority sampling, in the sample by the session it names, or (it names none)
        maybe in it by a session a span under it names, decided when the engine takes the root (a root held for
        nothing is released then)."""
        if not is_local_root(span) or is_own_traffic(span):
            return False
        bound, priority = self.bound, self.priority
        if priority is None:
            return is_sampled(trace_id, bound)
        session = session_id_of((span,))
        if bound != 0 if session is None else session_sampled(session, bound):
            return True
        return priority.reason(span) is not None
