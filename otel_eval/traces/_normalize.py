"""Value normalisation shared by the readers: ids, times, status, kind, and the per-file warning sink."""

from __future__ import annotations

import binascii
import functools
import hashlib
import reprlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

TRACE_ID_HEX_DIGITS = 32
SPAN_ID_HEX_DIGITS = 16
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_LOWER_HEX_DIGITS = frozenset("0123456789abcdef")
_ID_CACHE_SIZE = 4096
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
_PREVIEW_CHARS = 60

STATUS_BY_INT = {0: "UNSET", 1: "OK", 2: "ERROR"}
"""An OTLP status code int -> its name (:func:`status_code` of an int)."""
_STATUS_BY_NAME = {
    "UNSET": "UNSET",
    "OK": "OK",
    "ERROR": "ERROR",
    "STATUS_CODE_UNSET": "UNSET",
    "STATUS_CODE_OK": "OK",
    "STATUS_CODE_ERROR": "ERROR",
    "STATUSCODE.UNSET": "UNSET",
    "STATUSCODE.OK": "OK",
    "STATUSCODE.ERROR": "ERROR",
}
_KINDS = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
KIND_BY_INT: dict[int, str | None] = {0: None, **{i + 1: k for i, k in enumerate(_KINDS)}}
"""An OTLP span kind int -> its name (:func:`span_kind` of an int)."""
_KIND_BY_NAME: dict[str, str | None] = {
    **{k: k for k in _KINDS},
    **{f"SPAN_KIND_{k}": k for k in _KINDS},
    **{f"SPANKIND.{k}": k for k in _KINDS},
    "SPAN_KIND_UNSPECIFIED": None,
    "UNSPECIFIED": None,
}


class SpanProblem(ValueError):
    """One span cannot be used; the reader skips it and records a warning naming ``field``."""

    def __init__(self, field_name: str, problem: str) -> None:
        super().__init__(f"field {field_name!r}: {problem}")
        self.field_name = field_name


@dataclass(slots=True)
class Problems:
    """Warnings met while reading one source, each prefixed with the source name."""

    source: str
    warnings: list[str] = field(default_factory=list)

    def warn(self, where: str, message: str) -> None:
        """Records ``<source>: <where>: <message>``."""
        self.warnings.append(f"{self.source}: {where}: {message}")

    def skipped(self, where: str, problem: SpanProblem | str) -> None:
        """Records that the span at ``where`` was skipped, and why."""
        self.warn(where, f"span skipped: {problem}")


_REPR = reprlib.Repr()
_REPR.maxstring = _PREVIEW_CHARS
_REPR.maxother = _PREVIEW_CHARS
_REPR.maxlevel = 2


def preview(value: Any) -> str:
    """A short ``repr`` of ``value`` for messages (huge attribute values must never be copied into warnings)."""
    text = _REPR.repr(value)
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


@functools.lru_cache(maxsize=_ID_CACHE_SIZE)
def _id_from_text(value: str, digits: int) -> str | None:
    # Cached: every span of a trace repeats its trace id, and every parent id is another span's id.
    if len(value) == digits and _LOWER_HEX_DIGITS.issuperset(value):
        return value  # the common case, already normalised
    return _hex_from_text(value.strip(), digits)


def _hex_from_text(value: str, digits: int) -> str | None:
    if len(value) > 2 * digits:
        return None  # longer than hex and than base64 of the right size; also keeps huge values cheap
    if len(value) == digits and _HEX_DIGITS.issuperset(value):
        return value.lower()
    if value and not _HEX_DIGITS.issuperset(value) and _BASE64_CHARS.issuperset(value):
        # proto-JSON (MessageToJson) writes bytes ids as base64, padded or not, standard or URL-safe alphabet
        text = value.replace("-", "+").replace("_", "/").rstrip("=")
        text += "=" * (-len(text) % 4)
        try:
            raw = binascii.a2b_base64(text)
        except (binascii.Error, ValueError):
            return None
        return raw.hex() if len(raw) * 2 == digits else None
    if 0 < len(value) < digits and _HEX_DIGITS.issuperset(value):
        return value.lower().zfill(digits)  # Jaeger drops leading zeros and writes 64-bit trace ids
    return None


def normalize_id(value: Any, field_name: str, digits: int) -> str:
    """A trace (32) or span (16 digits) id as lowercase hex, from hex text, base64 text or bytes.

    Raises:
        SpanProblem: the value is missing, of the wrong type, not hex/base64 of the right size, or all zeros.
    """
    if isinstance(value, str):
        result = _id_from_text(value, digits)
    elif isinstance(value, bytes):
        result = value.hex() if len(value) * 2 == digits else None
    elif value is None:
        raise SpanProblem(field_name, "missing")
    else:
        raise SpanProblem(field_name, f"expected a hex id string, got {type(value).__name__} {preview(value)}")
    if result is None:
        raise SpanProblem(field_name, f"not a {digits}-digit hex (or base64) id: {preview(value)}")
    if result.count("0") == digits:
        raise SpanProblem(field_name, "all-zero id is invalid")
    return result


def normalize_parent_id(value: Any, field_name: str) -> str | None:
    """A parent span id as lowercase hex, or None when absent/empty (a root span).

    Raises:
        SpanProblem: present but not a valid span id.
    """
    if value is None or value == "" or value == b"":
        return None
    if isinstance(value, str) and value.strip("0") == "":
        return None  # some exporters write an all-zero parent for roots
    return normalize_id(value, field_name, SPAN_ID_HEX_DIGITS)


def opaque_id(value: Any, field_name: str, digits: int) -> tuple[str, bool]:
    """Like :func:`normalize_id`, but a non-empty non-hex string becomes a stable hash of itself.

    Hand-written span-dict fixtures use readable ids such as ``"chain-root"``; hashing keeps the parent links
    intact. Returns the id and whether it was hashed.
    """
    try:
        return normalize_id(value, field_name, digits), False
    except SpanProblem:
        if isinstance(value, str) and value.strip():
            return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=digits // 2).hexdigest(), True
        raise


def to_int_ns(value: Any, field_name: str, scale: int = 1) -> int:
    """A Unix time as integer nanoseconds; ``value`` is an int/float/integral string in units of ``1/scale`` ns.

    ISO-8601 strings are accepted too. Raises:
        SpanProblem: missing, negative, or not a number/time.
    """
    if isinstance(value, bool) or value is None:
        raise SpanProblem(field_name, "missing" if value is None else f"expected a number, got {preview(value)}")
    if isinstance(value, int):
        result = value * scale
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise SpanProblem(field_name, f"not a finite number: {value!r}")
        result = round(value * scale)
    elif isinstance(value, str):
        text = value.strip()
        try:
            result = int(text) * scale
        except ValueError:
            result = _iso_to_ns(text, field_name)
    else:
        raise SpanProblem(field_name, f"expected a number, got {type(value).__name__} {preview(value)}")
    if result < 0:
        raise SpanProblem(field_name, f"negative time {value!r}")
    return result


def _iso_to_ns(text: str, field_name: str) -> int:
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise SpanProblem(field_name, f"not a time: {preview(text)}") from None
    if parsed.tzinfo is None:
        raise SpanProblem(field_name, f"time without a timezone: {preview(text)}")
    whole = int(parsed.timestamp())
    return whole * 1_000_000_000 + parsed.microsecond * 1000


def status_code(value: Any) -> str:
    """``"UNSET"``, ``"OK"`` or ``"ERROR"`` from an OTLP int, an enum name or a Jaeger/SDK string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return STATUS_BY_INT.get(value, "UNSET")
    if isinstance(value, str):
        return _STATUS_BY_NAME.get(value.strip().upper(), "UNSET")
    return "UNSET"


def span_kind(value: Any) -> str | None:
    """``"INTERNAL"``/``"SERVER"``/``"CLIENT"``/``"PRODUCER"``/``"CONSUMER"``, or None (unspecified/unknown)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return KIND_BY_INT.get(value)
    if isinstance(value, str):
        return _KIND_BY_NAME.get(value.strip().upper())
    return None
