"""Reading a backend's URL and headers from its own environment variables, without ever logging a credential: what
the score sinks and the backend readers share."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from otel_eval._runtime.urls import redact_url
from otel_eval.errors import ConfigurationError

DEFAULT_TIMEOUT_S = 10.0
"""Seconds per HTTP request to a backend (connect, read, write)."""


def parse_headers(value: str) -> dict[str, str]:
    """``k=v,k2=v2`` (URL-encoded values, as the OTLP header variables) as a dict; malformed pairs are skipped."""
    headers: dict[str, str] = {}
    for pair in value.split(","):
        key, sep, item = pair.partition("=")
        if sep and key.strip():
            headers[key.strip()] = unquote(item.strip())
    return headers


def first(environ: Mapping[str, str], *names: str) -> str:
    """The first non-blank value among ``names``, stripped; empty when none is set."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return ""


def backend_url(environ: Mapping[str, str], *names: str, default: str, needed_by: str, server: str) -> str:
    """The backend URL in the first of ``names`` set (stripped), else ``default``: the one rule for every URL the
    score sinks and the backend readers read, so a malformed one is bad input at start-up, not a backend that is down.

    Args:
        environ: The environment.
        names: The variables that may hold the URL, in order of precedence.
        default: The URL when none is set.
        needed_by: Who needs the server, for the error (``the phoenix sink``).
        server: What the server is, for the error (``a Phoenix server``).

    Raises:
        ConfigurationError: a URL that is not ``http://`` or ``https://`` with a host (and a valid port), naming the
            variable and showing the URL redacted (no user info or query).
    """
    for name in names:
        url = environ.get(name, "").strip()
        if url:
            break
    else:
        return default
    try:
        parts = urlsplit(url)
        valid = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError:
        valid = False
    if not valid:
        raise ConfigurationError(
            f"{name}={redact_url(url)!r}: {needed_by} needs {server} (an http:// or https:// URL with a host)"
        )
    return url
