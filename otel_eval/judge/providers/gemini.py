"""Gemini through google-genai (the Gemini API or Vertex AI), as ADK's ``Gemini`` model class calls it.

Credentials and the endpoint are google-genai's own configuration (``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``,
``GOOGLE_GENAI_USE_VERTEXAI`` with ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``, ``GOOGLE_GEMINI_BASE_URL``),
under the judge's own ``OTEL_EVAL_JUDGE_API_KEY`` / ``OTEL_EVAL_JUDGE_BASE_URL`` overrides.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from otel_eval.errors import JudgeError
from otel_eval.judge._loops import PerLoopClient, best_effort
from otel_eval.judge._request_reply import JudgeReply, JudgeRequest, reply_from
from otel_eval.judge.providers import OTHER_PROVIDERS
from otel_eval.judge.resolve import GEMINI
from otel_eval.judge.retry import JUDGE_NOT_CONFIGURED, redact
from otel_eval.judge.settings import JudgeSettings
from otel_eval.judge.tracing import GEMINI_PROVIDER, VERTEX_PROVIDER

if TYPE_CHECKING:
    from google import genai


class GeminiProvider:
    """google-genai's async client, one per event loop (or the ``client`` given).

    Args:
        settings: The judge's settings (key, endpoint, Vertex project and location overrides).
        client: A ready ``genai.Client`` (tests, custom auth), used on every loop and closed by :meth:`aclose`.
    """

    family = GEMINI

    def __init__(self, settings: JudgeSettings, client: genai.Client | None = None) -> None:
        self.settings = settings
        self._given = client
        self._probe = client
        self._probe_lock = threading.Lock()
        self._probe_taken = client is not None
        self._clients: PerLoopClient[genai.Client] = PerLoopClient(self._loop_client, _close)
        self._uses_vertex: bool | None = None
        self._problem = None if client is not None else self._configuration_problem()

    def provider_name(self, model: str) -> str:
        """``gcp.vertex_ai`` on Vertex AI, else ``gcp.gemini``."""
        return VERTEX_PROVIDER if self.uses_vertex else GEMINI_PROVIDER

    def configuration_problem(self, model: str) -> str | None:
        """Why google-genai cannot be called (no key, Vertex without a project), without a call."""
        return self._problem

    @property
    def uses_vertex(self) -> bool:
        """Whether the judge talks to Vertex AI (``vertexai=True`` or ``GOOGLE_GENAI_USE_VERTEXAI``)."""
        if self._uses_vertex is None:
            if self._problem is not None:
                return False
            try:
                self._uses_vertex = bool(self._probe_client()._api_client.vertexai)
            except JudgeError:
                return False
        return self._uses_vertex

    async def client(self) -> genai.Client:
        """The client to call with: the one given to the constructor, else the running loop's own."""
        if self._given is not None:
            return self._given
        return await self._clients.client()

    async def send(self, request: JudgeRequest, model: str, timeout_seconds: float) -> JudgeReply:
        """One ``generateContent`` call."""
        client = await self.client()
        response = await client.aio.models.generate_content(
            model=model, contents=request.contents(), config=request.generate_config(timeout_seconds)
        )
        return reply_from(response)

    def secrets(self) -> tuple[str, ...]:
        """The API key, from the settings or the client."""
        if self.settings.api_key:
            return (self.settings.api_key,)
        api_client = getattr(self._probe, "_api_client", None) if self._probe is not None else None
        key = getattr(api_client, "api_key", None)
        return (key,) if isinstance(key, str) and key else ()

    async def aclose(self) -> None:
        """Closes the running loop's client (and a given one)."""
        await self._clients.aclose()
        if self._given is not None:
            await best_effort(_close(self._given))

    def _probe_client(self) -> genai.Client:
        """A client for reading the configuration (it opens no connection)."""
        with self._probe_lock:
            if self._probe is None:
                self._probe = self._new_client()
            return self._probe

    def _loop_client(self) -> genai.Client:
        """A loop's client: the first loop takes the probe (unused: it opened no connection), so a start makes one
        client instead of two (each loads its own TLS trust store); later loops get new ones."""
        with self._probe_lock:
            if not self._probe_taken:
                if self._probe is None:
                    self._probe = self._new_client()
                self._probe_taken = True
                return self._probe
        return self._new_client()

    def _new_client(self) -> genai.Client:
        from google import genai  # deferred: importing google-genai takes about a second
        from google.genai import types as genai_types

        settings = self.settings
        http_options = genai_types.HttpOptions(
            base_url=settings.base_url,
            api_version=settings.api_version,
            retry_options=genai_types.HttpRetryOptions(attempts=1),
        )
        kwargs: dict[str, Any] = {"http_options": http_options}
        for name in ("api_key", "vertexai", "project", "location"):
            value = getattr(settings, name)
            if value is not None:
                kwargs[name] = value
        try:
            return genai.Client(**kwargs)
        except Exception as exc:  # noqa: BLE001 - reported as not configured
            self._problem = redact(f"judge not configured: {exc}", settings.api_key)
            raise JudgeError(self._problem, error_type=JUDGE_NOT_CONFIGURED) from None

    def _configuration_problem(self) -> str | None:
        settings = self.settings
        vertex = settings.vertexai
        if vertex is None:
            vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").strip().lower() in ("1", "true")
        has_key = bool(settings.api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY"))
        if vertex:
            if has_key or settings.project or os.environ.get("GOOGLE_CLOUD_PROJECT"):
                return None
            return (
                "judge not configured: GOOGLE_GENAI_USE_VERTEXAI is set but neither GOOGLE_CLOUD_PROJECT "
                "(with GOOGLE_CLOUD_LOCATION) nor an API key is"
            )
        if has_key:
            return None
        return (
            "judge not configured: set GOOGLE_API_KEY or GEMINI_API_KEY (Gemini, the default judge), or "
            "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (Vertex AI); "
            f"{OTHER_PROVIDERS}"
        )


async def _close(client: genai.Client) -> None:
    await client.aio.aclose()
