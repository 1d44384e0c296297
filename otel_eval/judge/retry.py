"""Which judge failures are retried, and how long to wait: jittered exponential backoff honouring Retry-After.

Retried: HTTP 408/429/5xx (429 only while it is a rate limit, not an exhausted quota), timeouts and connection
errors. Not retried: 401/403 and invalid API keys, exhausted quotas (both fatal: the client stops calling and
reports them once), other 4xx, malformed bodies.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import pydantic_core

from otel_eval._runtime.exception_text import validation_outline, without_input_values
from otel_eval._runtime.urls import redact_queries, redact_userinfo
from otel_eval.errors import JudgeError

if TYPE_CHECKING:
    from google.genai import errors as genai_errors

# error.type values reported on NOT_EVALUATED results.
JUDGE_NOT_CONFIGURED = "judge_not_configured"
JUDGE_TIMEOUT = "judge_timeout"
JUDGE_RATE_LIMITED = "judge_rate_limited"
JUDGE_QUOTA_EXHAUSTED = "judge_quota_exhausted"
JUDGE_SERVER_ERROR = "judge_server_error"
JUDGE_CONNECTION = "judge_connection_error"
JUDGE_AUTH = "judge_auth"
JUDGE_BAD_REQUEST = "judge_bad_request"
JUDGE_BAD_RESPONSE = "judge_bad_response"
JUDGE_UNPARSEABLE = "judge_unparseable"
JUDGE_INJECTION_SUSPECTED = "judge_injection_suspected"
# The judge was never asked: what it would have seen was not the whole invocation (no final response, a tool call
# without its result, content truncated), or the prompt would not fit the judge model's input window.
INCOMPLETE_CONTEXT = "incomplete_context"
CONTEXT_OVERFLOW = "context_overflow"

NOT_THE_API_ANSWER = "judge answered a body that is not the provider's API answer (is the base URL the provider's API?)"
"""The reason of a 200 whose body is not the provider's JSON (a proxy's page, a base URL pointing at a web server)."""

_CAUSES_LOOKED_AT = 8
"""How far down an exception's causes the classification looks (a chain may be long, or a cycle)."""

_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_API_KEY_LIKE = re.compile(
    r"AIza[0-9A-Za-z_\-]{20,}|sk-[0-9A-Za-z_\-]{16,}|(?i:key=)[^&\s\"']+|(?i:bearer )[0-9A-Za-z._\-]{16,}"
)
_CONNECTION_HINTS = ("connecterror", "connection refused", "all connection attempts failed", "cannot connect")
"""What LiteLLM's 500 says when it never reached the provider (it reports a refused connection as a server error)."""
_QUOTA_EXHAUSTED_HINTS = ("perday", "per_day", "billing", "insufficient", "exhausted your", "check your plan")


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified judge failure."""

    error_type: str
    message: str
    retriable: bool
    fatal: bool = False
    retry_after: float | None = None

    def to_error(self) -> JudgeError:
        """The :class:`JudgeError` reported once retries are over."""
        return JudgeError(self.message, error_type=self.error_type, retriable=self.retriable)


def redact(text: str, secret: str | tuple[str, ...] | None = None) -> str:
    """``text`` with the API key(s), anything that looks like one, and the user info and queries of URLs replaced by
    ``***``, and pydantic's ``input_value=`` (a reply that failed validation, which quotes the user's text) left out."""
    for value in (secret,) if isinstance(secret, str) else secret or ():
        if value:
            text = text.replace(value, "***")
    return without_input_values(_API_KEY_LIKE.sub("***", redact_queries(redact_userinfo(text))))


def classify(exc: BaseException, *, secret: str | tuple[str, ...] | None = None) -> Failure:
    """Classifies an exception raised by one judge attempt."""
    if isinstance(exc, JudgeError):
        return Failure(exc.error_type, str(exc), exc.retriable)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "timeout" in type(exc).__name__.lower():
        return Failure(JUDGE_TIMEOUT, "judge call timed out", retriable=True)
    if _is_genai_api_error(exc):
        return _classify_api_error(exc, secret)
    status = getattr(exc, "status_code", None)
    if type(exc).__name__ == "APIConnectionError":  # openai's, anthropic's; LiteLLM's carries status_code 500
        causes = _causes(exc)
        answered = _answered_status(causes)
        if answered is not None:
            return _classify_status_error(exc, answered, secret)
        if any(isinstance(cause, json.JSONDecodeError) for cause in causes):
            return Failure(JUDGE_BAD_RESPONSE, NOT_THE_API_ANSWER, False)  # LiteLLM's for a body it could not decode
        return Failure(JUDGE_CONNECTION, redact(f"judge connection failed: {type(exc).__name__}: {exc}", secret), True)
    if isinstance(status, int) and not isinstance(status, bool) and status >= 400:
        return _classify_status_error(exc, status, secret)
    if isinstance(exc, (ConnectionError, OSError)) or _is_transport_error(exc) or "Connection" in type(exc).__name__:
        return Failure(JUDGE_CONNECTION, redact(f"judge connection failed: {type(exc).__name__}: {exc}", secret), True)
    if isinstance(exc, (ValueError, KeyError, TypeError)):
        detail = validation_outline(exc) if isinstance(exc, pydantic_core.ValidationError) else str(exc)
        return Failure(JUDGE_BAD_RESPONSE, redact(f"judge answered a malformed body: {detail}", secret), False)
    return Failure(JUDGE_BAD_RESPONSE, redact(f"judge call failed: {type(exc).__name__}: {exc}", secret), False)


def _answered_status(causes: list[BaseException]) -> int | None:
    """The HTTP 4xx a provider did answer with, when LiteLLM reports it as a connection error anyway (its Ollama
    routes wrap every error answer, a 404 for a model not pulled, a 429, a proxy's 401, in ``APIConnectionError``,
    the provider's own error, with its ``status_code``, being the exception it handled): the status of the nearest
    of ``causes`` that carries one, however many status-less wrappers lie between. Not a 5xx: LiteLLM gives its own
    client-side failures (a refused connection) that status too."""
    for cause in causes:
        status = getattr(cause, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status if 400 <= status < 500 else None
    return None


def _causes(exc: BaseException) -> list[BaseException]:
    """The exceptions ``exc`` was raised from or while handling, nearest first (at most :data:`_CAUSES_LOOKED_AT`)."""
    causes: list[BaseException] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < _CAUSES_LOOKED_AT and all(cause is not seen for seen in causes):
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    return causes


def _is_transport_error(exc: BaseException) -> bool:
    module = type(exc).__module__
    return module.startswith(("aiohttp", "httpx", "httpcore", "httpx2")) and "Timeout" not in type(exc).__name__


def _is_genai_api_error(exc: BaseException) -> TypeGuard[genai_errors.APIError]:
    """Whether ``exc`` is google-genai's ``APIError``: never when google-genai was not loaded (it is loaded for a
    Gemini call, not to classify another provider's failure)."""
    errors = sys.modules.get("google.genai.errors")
    return errors is not None and isinstance(exc, errors.APIError)


def _classify_api_error(exc: genai_errors.APIError, secret: str | tuple[str, ...] | None) -> Failure:
    code = int(exc.code or 0)
    status = exc.status or ""
    message = redact(f"judge HTTP {code} {status}: {exc.message or ''}".strip(), secret)
    details = exc.details if isinstance(exc.details, (dict, list)) else {}
    text = redact(str(details), secret).lower()
    if code in (401, 403) or "api_key_invalid" in text or "api key not valid" in text:
        return Failure(JUDGE_AUTH, f"judge rejected the credentials ({message})", retriable=False, fatal=True)
    if code == 429:
        retry_after = _retry_after(exc)
        if retry_after is None and any(hint in text for hint in _QUOTA_EXHAUSTED_HINTS):
            return Failure(JUDGE_QUOTA_EXHAUSTED, f"judge quota exhausted ({message})", retriable=False, fatal=True)
        return Failure(JUDGE_RATE_LIMITED, message, retriable=True, retry_after=retry_after)
    if code == 408:
        return Failure(JUDGE_TIMEOUT, message, retriable=True, retry_after=_retry_after(exc))
    if code >= 500:
        return Failure(JUDGE_SERVER_ERROR, message, retriable=True, retry_after=_retry_after(exc))
    if code == 404:
        return _not_found(message)
    return Failure(JUDGE_BAD_REQUEST, message, retriable=False)


def _classify_status_error(exc: BaseException, code: int, secret: str | tuple[str, ...] | None) -> Failure:
    """An HTTP error of the ``openai``, ``anthropic`` or ``litellm`` SDK (``status_code``, ``response.headers``),
    classified by the same rules as google-genai's."""
    message = redact(f"judge HTTP {code}: {type(exc).__name__}: {exc}", secret)
    text = message.lower()
    retry_after = _header_retry_after(getattr(exc, "response", None))
    if retry_after is None:  # LiteLLM keeps the provider's headers apart from its own response
        retry_after = _header_retry_after(_Headers(getattr(exc, "litellm_response_headers", None)))
    if code >= 500 and any(hint in text for hint in _CONNECTION_HINTS):
        return Failure(JUDGE_CONNECTION, f"judge connection failed ({message})", retriable=True)
    if code in (401, 403) or "invalid_api_key" in text or "authentication_error" in text:
        return Failure(JUDGE_AUTH, f"judge rejected the credentials ({message})", retriable=False, fatal=True)
    if code == 429:
        if retry_after is None and any(hint in text for hint in _QUOTA_EXHAUSTED_HINTS):
            return Failure(JUDGE_QUOTA_EXHAUSTED, f"judge quota exhausted ({message})", retriable=False, fatal=True)
        return Failure(JUDGE_RATE_LIMITED, message, retriable=True, retry_after=retry_after)
    if code == 408:
        return Failure(JUDGE_TIMEOUT, message, retriable=True, retry_after=retry_after)
    if code >= 500:
        return Failure(JUDGE_SERVER_ERROR, message, retriable=True, retry_after=retry_after)
    if code == 404:
        return _not_found(message)
    return Failure(JUDGE_BAD_REQUEST, message, retriable=False)


def _not_found(message: str) -> Failure:
    """A 404: the provider serves no such model (or endpoint), whatever the input: a configuration problem, reported
    as ``judge_not_configured`` (so ``otel-eval run`` cannot pass with nothing judged), not retried."""
    return Failure(JUDGE_NOT_CONFIGURED, f"judge model not found by its provider ({message})", retriable=False)


@dataclass(frozen=True, slots=True)
class _Headers:
    headers: Any


def _header_retry_after(response: Any) -> float | None:
    """Seconds from a response's ``Retry-After`` header (or ``retry-after-ms``, as OpenAI and Anthropic send it)."""
    headers: Any = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after") or headers.get("Retry-After")
    return parse_retry_after(str(value)) if value else None


def _retry_after(exc: genai_errors.APIError) -> float | None:
    """Seconds from a ``Retry-After`` header, else from a ``google.rpc.RetryInfo`` detail."""
    headers: Any = getattr(exc.response, "headers", None)
    if headers is not None:
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value:
            parsed = parse_retry_after(str(value))
            if parsed is not None:
                return parsed
    return _retry_info_delay(exc.details)


def parse_retry_after(value: str) -> float | None:
    """Seconds of a ``Retry-After`` value: delta-seconds or an HTTP date (None if neither)."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _retry_info_delay(details: Any) -> float | None:
    error = details.get("error", details) if isinstance(details, Mapping) else None
    entries = error.get("details") if isinstance(error, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and str(entry.get("@type", "")).endswith("RetryInfo"):
            match = _RETRY_DELAY.match(str(entry.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


@dataclass(frozen=True, slots=True)
class Backoff:
    """Full-jitter exponential backoff: attempt n waits uniform(0, min(cap, base * 2**(n-1))), or Retry-After."""

    initial_seconds: float
    max_seconds: float

    def delay(self, attempt: int, retry_after: float | None = None, *, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed ``attempt`` (1-based). A server's Retry-After wins (plus a little jitter)."""
        draw: float = (rng or random).random()
        if retry_after is not None:
            return retry_after + draw * min(1.0, self.initial_seconds)
        ceiling = min(self.max_seconds, self.initial_seconds * 2.0 ** (attempt - 1))
        return draw * ceiling
