"""Pydantic models the rebuild assembles from values it made itself, without validating them again.

Every rebuilt invocation is a :class:`~otel_eval.model.TracedInvocation` holding an ADK ``Invocation`` and its
``IntermediateData``; validating them re-checks values that are already what validation gives (the contents, calls
and responses were validated, or built from validated parts, when they were made; the rest are strings, numbers and
lists the rebuild typed itself), and it is most of the fixed cost of a rebuild whose parts are few. :func:`built`
makes such an object as validating it would (the same fields, in the same order, the same fields set; each unset
field at its default, a default factory called), without the check. pydantic's own ``model_construct`` does the same
in Python, field by field, and costs more than validating these models.

What a rebuild reads from the span itself and a model constrains is not trusted: :func:`traced_invocation` checks the
ids against the model's patterns and the times' types, and when one does not fit it validates, so a malformed value
fails as it always did.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pydantic

from otel_eval.model import TracedInvocation
from otel_eval.model.traced import SPAN_ID_PATTERN, TRACE_ID_PATTERN

M = TypeVar("M", bound=pydantic.BaseModel)

_IMMUTABLE_DEFAULTS = (type(None), str, int, float, bool)
_set_attribute = object.__setattr__
_HEX_DIGITS = "0123456789abcdef"
_TRACE_ID_DIGITS = 32
_SPAN_ID_DIGITS = 16
if TRACE_ID_PATTERN != r"^[0-9a-f]{32}$" or SPAN_ID_PATTERN != r"^[0-9a-f]{16}$":  # pragma: no cover - a model change
    raise ImportError("otel_eval.reconstruct._built: the id patterns changed; update traced_invocation's check")


@dataclass(frozen=True, slots=True)
class _Template:
    defaults: dict[str, Any]
    """Every field in declaration order, at its default (None for the ones with a factory)."""
    factories: tuple[tuple[str, Callable[[], Any]], ...]
    required: frozenset[str]


_TEMPLATES: dict[type[pydantic.BaseModel], _Template] = {}


def _template(cls: type[pydantic.BaseModel]) -> _Template:
    defaults: dict[str, Any] = {}
    required = frozenset(name for name, field in cls.model_fields.items() if field.is_required())
    factories: list[tuple[str, Callable[[], Any]]] = []
    if cls.__private_attributes__ or cls.model_config.get("extra") == "allow":
        raise TypeError(f"{cls.__name__} has private attributes or extra fields: validate it")
    for name, field in cls.model_fields.items():
        if field.default_factory is not None:
            factory = field.default_factory
            if _takes_data(factory):
                raise TypeError(f"{cls.__name__}.{name}: a default factory taking data: validate it")
            if isinstance(factory, type) and issubclass(factory, pydantic.BaseModel):
                if factory.model_config.get("frozen"):  # immutable: one model of its defaults (TokenUsage()) shared
                    factory = functools.partial(_shared, built(factory))
                else:
                    factory = functools.partial(built, factory)  # a model of its defaults
            factories.append((name, factory))  # type: ignore[arg-type]
            defaults[name] = None
        elif field.is_required() or isinstance(field.default, _IMMUTABLE_DEFAULTS):
            defaults[name] = None if field.is_required() else field.default
        else:
            raise TypeError(f"{cls.__name__}.{name}: a mutable default: validate it")
    template = _Template(defaults, tuple(factories), required)
    _TEMPLATES[cls] = template
    return template


def _shared(value: Any) -> Any:
    return value


def _takes_data(factory: Callable[..., Any]) -> bool:
    """Whether pydantic calls ``factory`` with the validated data: it has a parameter without a default."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: takes nothing
        return False
    return any(p.default is inspect.Parameter.empty for p in parameters)


def built(cls: type[M], **values: Any) -> M:
    """``cls(**values)`` without validating ``values``: for values that already are what validating them gives (a
    model instance for a model field, a new list of instances for a list field, a ``str`` for a ``str`` field), every
    required field among them. The object equals, dumps and prints as the validated one; the values are kept, not
    copied. :func:`built_from` is the same for a dict of the values.

    Raises:
        TypeError: ``cls`` has private attributes, extra fields, a mutable default or a factory taking data; or
            ``values`` leave out a required field or name one ``cls`` does not have.
    """
    return built_from(cls, values)


def built_from(cls: type[M], values: dict[str, Any]) -> M:
    """:func:`built` of the values in ``values`` (a dict of them, not changed): what the rebuild's hot path calls,
    since passing a dozen values as keywords costs more than the rest of the assembly (they are packed into a dict
    at every keyword call)."""
    template = _TEMPLATES.get(cls) or _template(cls)
    fields = template.defaults.copy()  # declaration order, then the values over the defaults
    fields.update(values)
    if len(fields) != len(template.defaults) or not values.keys() >= template.required:
        raise TypeError(f"{cls.__name__}: fields {sorted(values)} are not its fields with every required one")
    if len(values) < len(fields):  # some field left at its default: its factory, if it has one, makes it
        for name, factory in template.factories:
            if name not in values:
                fields[name] = factory()
    instance = object.__new__(cls)
    _set_attribute(instance, "__dict__", fields)
    _set_attribute(instance, "__pydantic_fields_set__", set(values))
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


def traced_invocation(values: dict[str, Any]) -> TracedInvocation:
    """A :class:`~otel_eval.model.TracedInvocation` of the values the rebuild made (see :func:`built`; a dict of them,
    not changed), validated when the values read from the root span -- its ids and times -- are not what the model
    takes (they fail as they did)."""
    if root_values_trusted(values):
        return built_from(TracedInvocation, values)
    return TracedInvocation(**values)


def root_values_trusted(values: dict[str, Any]) -> bool:
    """Whether the values read from the root span (its ids and times) are what ``TracedInvocation`` holds after
    validating them: then :func:`traced_invocation` builds it without validating, and the values are the model's."""
    trace_id, span_id = values["trace_id"], values["span_id"]
    return (
        type(values["start_time_ns"]) is int
        and type(values["end_time_ns"]) is int
        and type(trace_id) is str
        and type(span_id) is str
        and len(trace_id) == _TRACE_ID_DIGITS
        and len(span_id) == _SPAN_ID_DIGITS
        and not trace_id.strip(_HEX_DIGITS)  # only lowercase hex digits: what the patterns match, in one C call
        and not span_id.strip(_HEX_DIGITS)
    )
