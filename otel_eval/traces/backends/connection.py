"""Reading a backend's URL and headers from its own environment variables, without ever logging a credential: what
the score sinks and the backend readers share."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

DEFAULT_TIMEOUT_S = 10.0
"""Seconds per HTTP request to a backend (connect, read, write)."""


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its user info (and trailing slash), and a basic-auth header made of that user info."""
    parts = urlsplit(url.strip())
    headers: dict[str, str] = {}
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        headers["Authorization"] = basic_auth(*(unquote(p) for p in userinfo.partition(":")[::2]))
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), headers


def basic_auth(user: str, password: str) -> str:
    """An ``Authorization`` header value for HTTP basic authentication."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


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
