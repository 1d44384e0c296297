"""What a judged metric needs from a judge: the :class:`Judge` protocol that :class:`~otel_eval.judge.JudgeClient`
implements. Metrics, the evaluation core, the worker and the processor depend on this, never on the client's class,
so a judge is checked by type (``mypy``) rather than probed with ``getattr``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

    from otel_eval.judge.budget import Admission, CallEstimate, Refusal
    from otel_eval.judge.client import JudgeReply, JudgeRequest
    from otel_eval.model import JudgeModelOptions


@runtime_checkable
class Judge(Protocol):
    """An LLM judge: generates verdicts for judge requests, with its configuration and accounting."""

    @property
    def not_configured_reason(self) -> str | None:
        """Why the judge cannot be used (no credentials, key rejected), or None when it can."""
        ...

    @property
    def configured(self) -> bool:
        """Whether the default judge model's provider has credentials (known without a network call)."""
        ...

    @property
    def uses_vertex(self) -> bool:
        """Whether the Gemini judge calls Vertex AI (which also offers its own evaluation service)."""
        ...

    def model_for(self, options: JudgeModelOptions | None) -> str:
        """The judge model for a criterion's judge options."""
        ...

    def input_token_limit(self, model: str) -> int:
        """The input window of judge ``model``, in tokens: a prompt estimated over it is not sent
        (``context_overflow``)."""
        ...

    def num_samples_for(self, options: JudgeModelOptions | None, *, default: int | None = None) -> int:
        """Samples per judged item for a criterion's judge options."""
        ...

    def use_meter_provider(self, meter_provider: MeterProvider | None) -> None:
        """Reports the judge's calls, tokens, cost and latency on ``meter_provider`` from now on."""
        ...

    def admit(
        self, metric: str, calls: Sequence[CallEstimate], *, priority: bool = False
    ) -> Admission | Refusal | None:
        """Asks the judge budget for one evaluation's ``calls``: None (no budget for ``metric``), an admission to
        run them under, or a refusal (counted). See :mod:`otel_eval.judge.budget`."""
        ...

    async def generate(self, request: JudgeRequest, *, metric: str, sample: int = 0) -> JudgeReply:
        """One judge call (with its retries, cache and accounting) for ``metric``."""
        ...

    async def evaluate_instances(self, body: dict[str, Any], *, metric: str) -> dict[str, Any]:
        """One call of Vertex AI's evaluation service."""
        ...

    def summary_line(self) -> str:
        """Calls, cache hits, tokens and cost so far, in one line."""
        ...


_JUDGE_MEMBERS = tuple(name for name in vars(Judge) if not name.startswith("_"))
_MISSING = object()


def is_judge(value: object) -> bool:
    """Whether ``value`` has every member of :class:`Judge`, told as ``isinstance(value, Judge)`` tells it on Python
    3.12+: without reading its properties (3.11's check reads each one, and :attr:`Judge.uses_vertex` makes a
    google-genai client: an import of about half a CPU-second in a process that runs no judged metric)."""
    return all(inspect.getattr_static(value, name, _MISSING) is not _MISSING for name in _JUDGE_MEMBERS)


@runtime_checkable
class ModelAwareJudge(Judge, Protocol):
    """A judge that knows, per judge model, whether it can serve it (:class:`~otel_eval.judge.JudgeClient`: each
    model's provider has its own credentials). A :class:`Judge` without it is asked :attr:`Judge.configured`."""

    def problem_for(self, model: str) -> str | None:
        """Why judge ``model`` cannot be served (its provider has no credentials, its extra is missing, it does not
        resolve), or None when it can; known without a network call."""
        ...
