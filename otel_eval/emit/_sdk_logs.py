"""The one adapter to the OpenTelemetry SDK's logs internals: a record handed to an SDK logger ready-made.

Given an API :class:`~opentelemetry._logs.LogRecord`, the SDK's ``Logger.emit`` wraps it in a ``ReadWriteLogRecord``
whose default ``LogRecordLimits`` read four environment variables for every record (about a quarter of an event's
cost). :class:`LogRecordWriter` makes that ``ReadWriteLogRecord`` itself, with the limits read once (as the SDK's
``TracerProvider`` reads its span limits once); the SDK does the rest as for any record. When the record's attributes
are already what the SDK's ``BoundedAttributes`` would keep (non-empty string keys, string, bool, int or float values,
no value length limit, within the count limit) they are handed over as they are instead of being checked and copied
one by one (the other half of an event's cost). Any other logger (no SDK, a provider of another kind) gets the API
record. ``tests/emit/test_sdk_logs.py`` pins the two ways to the same
exported record.

:func:`prepared_log_record` makes the API record itself from values its caller holds (the span context of the
evaluated invocation: the API's ``LogRecord.__init__`` looks the current span up in the context again), and the
record copies itself field for field (``__copy__``, which the ``copy`` module calls): the SDK's
``BatchLogRecordProcessor`` copies every record it queues, and ``copy.copy`` of an object without ``__copy__`` goes
through ``__reduce_ex__`` and its reconstruction in Python.
"""

from __future__ import annotations

from time import time_ns
from typing import Any

from opentelemetry._logs import Logger, LoggerProvider, LogRecord, SeverityNumber, get_logger, get_logger_provider
from opentelemetry.context import Context
from opentelemetry.sdk._logs import Logger as SdkLogger
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk._logs import LogRecordLimits, ReadWriteLogRecord
from opentelemetry.trace import SpanContext
from opentelemetry.util.types import AttributeValue

_PLAIN_VALUES = frozenset((str, bool, int, float))
"""Attribute value types the SDK keeps as they are (without a value length limit)."""


class LogRecordWriter:
    """Emits log records through a logger of ``name`` and ``version`` on ``logger_provider``.

    Args:
        name: Instrumentation scope name.
        version: Instrumentation scope version.
        logger_provider: Provider to emit through; the global one when None, looked up until it is set (an agent
            sets it after making its processor).
    """

    def __init__(self, name: str, version: str, logger_provider: LoggerProvider | None = None) -> None:
        self._name, self._version, self._provider = name, version, logger_provider
        self._logger: Logger = get_logger(name, version, logger_provider=logger_provider)
        self._sdk: tuple[SdkLogger, LogRecordLimits] | None = None
        self._max_plain = -1
        """Attributes a record may carry to be handed over as they are (-1: never, a value length limit is set)."""
        self._settled = False
        self._settle()

    def emit(self, record: LogRecord, *, plain: bool = False) -> None:
        """Emits ``record`` (a record without an exception); ``plain``: the caller made its attributes for this record
        alone, a dict with non-empty string keys and string, bool, int or float values (not checked again, and handed
        to the SDK without a copy)."""
        if not self._settled:
            self._settle()
        sdk = self._sdk
        if sdk is None:
            self._logger.emit(record)
            return
        logger, limits = sdk
        attributes = record.attributes
        as_they_are = bool(
            attributes
            and len(attributes) <= self._max_plain
            and (
                plain
                or (
                    _PLAIN_VALUES.issuperset(map(type, attributes.values()))
                    and set(map(type, attributes)) == {str}
                    and "" not in attributes
                )
            )
        )
        if as_they_are:
            record.attributes = None  # the SDK wraps an empty BoundedAttributes, filled below as it would fill it
        made = ReadWriteLogRecord(record, logger.resource, logger.instrumentation_scope, limits)
        if as_they_are:
            inner = attributes if plain else dict(attributes)  # type: ignore[arg-type]
            made.log_record.attributes._dict = inner  # type: ignore[union-attr]
        # The SDK's Logger.emit takes a ReadWriteLogRecord as it is (its annotation names only the API record).
        logger.emit(made)  # type: ignore[arg-type]

    def _settle(self) -> None:
        """Finds the SDK logger once the provider is known: given, or the global one once set to an SDK provider (it
        is set once; until then, and for a provider of another kind, the API logger forwards the records)."""
        if self._provider is None and not isinstance(self._logger, SdkLogger):
            provider = get_logger_provider()
            if not isinstance(provider, SdkLoggerProvider):
                return
            self._logger = provider.get_logger(self._name, self._version)
        self._settled = True
        if isinstance(self._logger, SdkLogger):
            limits = LogRecordLimits()
            self._sdk = (self._logger, limits)
            if limits.max_log_record_attribute_length is None:
                count = limits.max_log_record_attributes
                self._max_plain = 1 << 30 if count is None else count


class _PreparedLogRecord(LogRecord):
    """An API :class:`LogRecord` whose fields were set at once (:func:`prepared_log_record`), copied field for field."""

    def __init__(self) -> None:  # the fields are set by prepared_log_record, as LogRecord.__init__ would set them
        pass

    def __copy__(self) -> _PreparedLogRecord:
        copied = _new_record(_PreparedLogRecord)
        copied.__dict__.update(self.__dict__)
        return copied


_new_record = object.__new__
_FIELDS: dict[str, Any] = dict(LogRecord(context=Context()).__dict__)
"""The API record's fields (this API version's), at the values ``LogRecord.__init__`` gives those not passed."""


def prepared_log_record(
    *,
    timestamp: int,
    context: Context,
    span_context: SpanContext,
    severity_number: SeverityNumber,
    attributes: dict[str, AttributeValue],
    event_name: str,
    severity_text: str | None = None,
) -> LogRecord:
    """The API record ``LogRecord(timestamp=, context=, severity_number=, severity_text=severity_number.name,
    attributes=, event_name=)`` would make, where ``span_context`` is the span ``context`` holds (valid: its ids are
    the record's), made without looking that span up again; it copies itself field for field. ``severity_text``:
    ``severity_number.name``, when the caller holds it."""
    record = _new_record(_PreparedLogRecord)
    record.__dict__.update(_FIELDS)
    record.__dict__.update(
        timestamp=timestamp,
        observed_timestamp=time_ns(),
        context=context,
        trace_id=span_context.trace_id,
        span_id=span_context.span_id,
        trace_flags=span_context.trace_flags,
        severity_text=severity_number.name if severity_text is None else severity_text,
        severity_number=severity_number,
        attributes=attributes,
        event_name=event_name,
    )
    return record
