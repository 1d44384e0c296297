"""Tenants: whose traces, sessions and quotas a record's content counts against.

A worker may read the spans and requests of several producers (teams, customers) from the same topics. Trace and
session ids are not secrets (a trace id travels in every ``traceparent``), so state keyed by a bare id lets one
producer add spans to another's trace, turns to another's session, or fill the bounds everyone shares. The worker
keys its state by (tenant, id) instead, and bounds each tenant's share (see ``docs/security.md``).

A record's tenant, by the worker's settings:

* ``OTEL_EVAL_TENANT_HEADER`` set: the value of that Kafka record header, which an authenticated Collector (or a
  trusted producer) sets; a record without it belongs to the default tenant ``""``. Nothing in the record's content
  is consulted.
* else ``OTEL_EVAL_TENANT_ATTRIBUTE`` set: on the Collector path, that resource attribute of each span (or content
  log record); the default tenant where absent. Requests (which carry no resource) belong to the default tenant.
* else: every record belongs to the default tenant (one tenant: the behaviour without tenancy).

The sessions and results topics are the workers' own: a re-keyed turn, and a result, of a tenant other than the default
one carries its tenant in :data:`WORKER_TENANT_HEADER` (a worker reading them back trusts it: only workers may write
these topics).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

DEFAULT_TENANT: Final = ""
"""The tenant of records that name none (and of every record when tenancy is not configured)."""
WORKER_TENANT_HEADER: Final = "otel_eval.tenant"
"""The header in which workers pass a tenant through their own topics (sessions, results)."""
MAX_TENANT_CHARS: Final = 128
"""A longer tenant value is kept as its SHA-256 digest (``sha256:<hex>``): keys stay small, distinct values distinct."""


def tenant_value(value: object) -> str:
    """A tenant from a header's bytes or an attribute's value: text, bounded (see :data:`MAX_TENANT_CHARS`)."""
    if value is None:
        return DEFAULT_TENANT
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
    if len(text) > MAX_TENANT_CHARS:
        return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return text


def header_value(message: Any, name: str) -> bytes | None:
    """The value of header ``name`` of Kafka record ``message`` (the first one), or None."""
    for key, value in getattr(message, "headers", None) or ():
        if key == name:
            return bytes(value) if value is not None else None
    return None


class Tenancy:
    """How a worker tells the tenant of a record (see the module's docstring).

    Args:
        header: the Kafka header naming the tenant (``OTEL_EVAL_TENANT_HEADER``), or None.
        attribute: the resource attribute naming the tenant (``OTEL_EVAL_TENANT_ATTRIBUTE``), or None.
    """

    def __init__(self, header: str | None = None, attribute: str | None = None) -> None:
        self.header = header or None
        self.attribute = None if self.header else (attribute or None)

    def of_message(self, message: Any) -> str | None:
        """The tenant of every item of ``message`` when its headers decide it; None when each span's resource does
        (:meth:`of_resource`)."""
        if self.header is not None:
            return tenant_value(header_value(message, self.header))
        return None if self.attribute is not None else DEFAULT_TENANT

    def of_request(self, message: Any) -> str:
        """The tenant of a requests-topic record (no resource: the header's, else the default tenant)."""
        tenant = self.of_message(message)
        return DEFAULT_TENANT if tenant is None else tenant

    def of_span(self, span: Any) -> str:
        """The tenant of a Collector-path span, by its resource (:meth:`of_resource`)."""
        return self.of_resource(span.resource)

    def of_resource(self, resource: Mapping[str, Any]) -> str:
        """The tenant named by ``resource``'s tenant attribute (the default tenant where absent)."""
        if self.attribute is None:
            return DEFAULT_TENANT
        return tenant_value(resource.get(self.attribute))


def worker_headers(tenant: str) -> list[tuple[str, bytes]]:
    """The headers of a sessions- or results-topic record of ``tenant`` (none for the default tenant)."""
    return [(WORKER_TENANT_HEADER, tenant.encode("utf-8", "surrogatepass"))] if tenant else []


def of_worker_record(message: Any) -> str:
    """The tenant of a sessions- or results-topic record (written by a worker, :func:`worker_headers`)."""
    return tenant_value(header_value(message, WORKER_TENANT_HEADER))
