"""Reading a fetched record of each source, off the event loop: a Collector message's spans or GenAI content log
records (``otlp_proto``), or a request's JSON. :func:`decoding` names the step (what a record past its deadline is
dead-lettered as) and gives the call that :class:`~otel_eval._runtime.deadline.DeadlineExecutor` runs."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from otel_eval.worker._tenancy import Tenancy
from otel_eval.worker.collector_path import parse_otlp_logs, parse_otlp_logs_by_resource, parse_otlp_spans
from otel_eval.worker.consumer import parse_request
from otel_eval.worker.settings import SOURCE_OTLP_LOGS, SOURCE_OTLP_SPANS


def decoding(message: Any, source: str, tenancy: Tenancy) -> tuple[str, Callable[[], Any]]:
    """The off-loop step that reads ``message`` of ``source``: its spans, its log records (in (tenant, records)
    groups), or its request."""
    where = f"{message.topic}/{message.partition}@{message.offset}"
    if source == SOURCE_OTLP_SPANS:
        return f"decoding {where}", partial(parse_otlp_spans, message.value, where)
    if source == SOURCE_OTLP_LOGS:
        tenant = tenancy.of_message(message)
        if tenant is None:  # by resource attribute
            return f"decoding {where}", partial(parse_otlp_logs_by_resource, message.value, where, tenancy.of_resource)
        return f"decoding {where}", partial(_logs_of, tenant, message.value, where)
    return f"parsing {where}", partial(parse_request, message.value, where)


def _logs_of(tenant: str, value: bytes | None, where: str) -> list[tuple[str, list[Any]]]:
    """The log records of a logs message, all of ``tenant``."""
    return [(tenant, parse_otlp_logs(value, where))]
