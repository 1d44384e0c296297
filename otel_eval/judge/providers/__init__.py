"""The judge's providers: each makes the one HTTP call of a judge request in its SDK, as ADK's model class for the
same family makes it, and reads the reply back. Retries, the cache, the concurrency limit, the budget, accounting and
spans are the :class:`~otel_eval.judge.JudgeClient`'s, the same for every provider.

A provider's SDK is imported when the provider is first used, so a missing optional extra is a clear "not
configured" reason naming the extra, never an import error at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from otel_eval.errors import JudgeError
from otel_eval.judge.retry import JUDGE_BAD_RESPONSE, NOT_THE_API_ANSWER

if TYPE_CHECKING:
    from otel_eval.judge._request_reply import JudgeReply, JudgeRequest


class Provider(Protocol):
    """One provider family's side of a judge call."""

    family: str
    """The family (:mod:`otel_eval.judge.resolve`) this provider serves."""

    def provider_name(self, model: str) -> str:
        """``gen_ai.provider.name`` of a call of ``model`` (``openai``, ``anthropic``, ``gcp.vertex_ai``, …)."""
        ...

    def configuration_problem(self, model: str) -> str | None:
        """Why ``model`` cannot be judged by this provider (no credentials, missing extra), known without a call."""
        ...

    async def send(self, request: JudgeRequest, model: str, timeout_seconds: float) -> JudgeReply:
        """One attempt of ``request`` to ``model`` (no retries; the SDK's own are off)."""
        ...

    def secrets(self) -> tuple[str, ...]:
        """The credentials this provider holds, redacted from every message."""
        ...

    async def aclose(self) -> None:
        """Closes the provider's connections on the running event loop."""
        ...


def missing_extra(extra: str, package: str, model: str) -> str:
    """The not-configured reason of a provider whose SDK is not installed."""
    return (
        f"judge not configured: judge model {model!r} needs the {package!r} package: pip install 'otel-eval[{extra}]'"
    )


def check_api_answer(response: object) -> None:
    """Raises when an SDK handed back the raw text of a body that is not its API's JSON (a proxy's page, a base URL
    pointing at a web server), rather than its response object."""
    if isinstance(response, (str, bytes)):
        raise JudgeError(NOT_THE_API_ANSWER, error_type=JUDGE_BAD_RESPONSE)


OTHER_PROVIDERS = (
    "or set OTEL_EVAL_JUDGE_MODEL and that provider's variables: OpenAI (gpt-4o-mini, ...): OPENAI_API_KEY "
    "(OPENAI_BASE_URL); Claude on Vertex AI (claude-sonnet-4-5, ...): GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION; "
    "LiteLLM routes: anthropic/ ANTHROPIC_API_KEY, bedrock/ AWS_ACCESS_KEY_ID..., ollama/ OLLAMA_API_BASE; or a server of your own: OTEL_EVAL_JUDGE_BASE_URL "
    "(OTEL_EVAL_JUDGE_API_KEY)"
)
"""What the reason of an unconfigured default (Gemini) judge adds: every other provider's variables, names only."""


__all__ = ["OTHER_PROVIDERS", "Provider", "check_api_answer", "missing_extra"]
