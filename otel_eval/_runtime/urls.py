"""URLs from configuration, as they may be shown: never with the credentials a user may have written into them.

A URL's user info (``http://user:password@host``) and its query (``?key=...``, ``?api_key=...``) can carry secrets,
so what is logged, raised or reported is :func:`redact_url`'s form; :func:`split_url` turns the user info into a
basic-auth header for a client that needs it, and :func:`redact_userinfo` scrubs URLs inside a free text (an SDK's
exception message).
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

_USERINFO_IN_TEXT = re.compile(r"(?<=://)[^\s/@?#]+@")
_QUERY_IN_TEXT = re.compile(r"\?[^\s'\"()]*=[^\s'\"()]*")
_SHOWN = re.compile(r"(?P<scheme>(?:(?:[A-Za-z][\w+.\-]*:)?//)?)(?:[^/?#]*@)?(?P<host>[^/?#]*)(?P<path>[^?#]*)")
"""A URL (or ``host:port``) in parts: ``scheme://``, user info (left out), host and port, path; the rest is the query
and fragment (left out)."""


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its user info, query (and trailing slash), and a basic-auth header made of that user info."""
    parts = urlsplit(url.strip())
    headers: dict[str, str] = {}
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        headers["Authorization"] = basic_auth(*(unquote(p) for p in userinfo.partition(":")[::2]))
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), headers


def redact_url(url: str) -> str:
    """``url`` as it may be logged or raised: without user info, query or fragment (a trailing slash dropped), as
    written otherwise: a scheme-less ``host:port``, a scheme :func:`~urllib.parse.urlsplit` does not know
    (``SASL_SSL://user:password@broker:9093``), an empty authority (``sqlite:///x.db``)."""
    match = _SHOWN.match(url.strip())
    assert match is not None  # it matches every string: each part may be empty
    return match["scheme"] + match["host"] + match["path"].rstrip("/")


def redact_userinfo(text: str) -> str:
    """``text`` with the user info of every ``scheme://user:password@host`` in it replaced by ``***``."""
    return _USERINFO_IN_TEXT.sub("***@", text)


def redact_queries(text: str) -> str:
    """``text`` with every URL query in it (``?token=...``: it may carry a credential) replaced by ``?***``."""
    return _QUERY_IN_TEXT.sub("?***", text)


def basic_auth(user: str, password: str) -> str:
    """An ``Authorization`` header value for HTTP basic authentication."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


__all__ = ["basic_auth", "redact_queries", "redact_url", "redact_userinfo", "split_url"]
