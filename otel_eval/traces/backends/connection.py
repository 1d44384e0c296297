"""Reading a backend's URL and headers from its own environment variables, without ever logging a credential: what
the score sinks and the backend readers share."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

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
