"""Reading an :class:`~otel_eval.model.messages.EvaluationRequest` from its JSON with fewer calls into Python.

``EvaluationRequest.model_validate_json`` calls two kinds of Python validators from pydantic-core: :class:`Part`'s
``before`` validator, once per part (it makes a dict of the part's JSON object, and drops from it the None values of
``Part.__init__``'s keywords, which ``Part(**mapping)`` leaves unset as google-genai's does), and the validator of
each field google-genai validates, once per such field, null or not: eight calls per part.

:func:`validate_request_json` reads the JSON with a second validator of the same core schema but for the parts: a part
is validated straight from its JSON object by field *names* only (a camelCase alias is an unknown key, which ``Part``
forbids), a null google-genai field is None without its validator (which returns None for None), and one call once the
part is made unsets the None values of ``Part.__init__``'s keywords, which is all the ``before`` validator does with a
mapping keyed by field names. Everything else is the same schema. Anything the second validator rejects (an alias,
anything invalid) is read again by ``EvaluationRequest.model_validate_json``: the same request (same classes, values
and fields set), or the same error. The JSON otel-eval's own serializer writes is read by the second validator.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel
from pydantic_core import SchemaValidator

from otel_eval.model.genai import Part
from otel_eval.model.genai._base import is_genai_validator
from otel_eval.model.messages import EvaluationRequest


def validate_request_json(value: bytes | str) -> EvaluationRequest:
    """``EvaluationRequest.model_validate_json(value)``: the same request, or the same ``ValidationError``.

    Raises:
        pydantic.ValidationError: ``value`` is not an ``EvaluationRequest``'s JSON (or what the general path raises:
            google-genai's enums raise e.g. ``AttributeError`` for a list).
    """
    try:
        return _validator().validate_json(value)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - whatever it rejects (a ValidationError, a google-genai enum's own error): the
        # general path reads it, and says why
        return EvaluationRequest.model_validate_json(value)


_lock = threading.Lock()
_built: SchemaValidator | None = None


def _validator() -> SchemaValidator:
    global _built
    if _built is None:
        with _lock:
            if _built is None:
                schema = EvaluationRequest.__pydantic_core_schema__
                with _built_anew(_holding_parts(schema)):
                    _built = SchemaValidator(_transformed(schema))
    return _built


def _transformed(node: Any) -> Any:
    """The core schema ``node``, its parts validated by field names without the ``before`` validator (their None
    keywords unset by ``Part._unset_none_keywords`` once made), the google-genai fields' validators not called for
    null."""
    if isinstance(node, list):
        return [_transformed(item) for item in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind == "model" and node.get("cls") is Part:
        before = node["schema"]
        if before.get("type") != "function-before" or before["schema"].get("type") != "model-fields":
            raise TypeError("Part's core schema is not the one otel_eval.model.request_json knows")
        by_name = {
            name: {key: _transformed(item) for key, item in field.items() if key != "validation_alias"}
            for name, field in before["schema"]["fields"].items()
        }
        return {**node, "schema": {**before["schema"], "fields": by_name}, "post_init": "_unset_none_keywords"}
    if kind == "function-before" and is_genai_validator(node["function"]["function"]):
        return {"type": "nullable", "schema": {**node, "schema": _transformed(node["schema"])}}
    return {key: _transformed(item) for key, item in node.items()}


def _holding_parts(schema: Mapping[str, Any]) -> set[type[BaseModel]]:
    """The model classes whose core schemas (within ``schema``) hold a part."""
    definitions = {item["ref"]: item for item in schema.get("definitions", [])}
    memo: dict[int, bool] = {}
    classes: set[type[BaseModel]] = set()

    def holds(node: Any) -> bool:
        if isinstance(node, list):
            return any([holds(item) for item in node])  # every item looked at: each class holding a part is found
        if not isinstance(node, dict):
            return False
        key = id(node)
        if key not in memo:
            memo[key] = False  # a cycle back to this node adds nothing
            kind = node.get("type")
            if kind == "definition-ref":
                memo[key] = holds(definitions[node["schema_ref"]])
            else:
                found = any([holds(item) for name, item in node.items() if name not in ("cls", "ref", "metadata")])
                if kind == "model" and (node["cls"] is Part or found):
                    classes.add(node["cls"])
                    found = True
                memo[key] = found
        return memo[key]

    holds(schema)
    return classes


@contextmanager
def _built_anew(classes: set[type[BaseModel]]) -> Iterator[None]:
    """pydantic-core reuses a complete model class's own validator wherever that class's core schema appears: the
    classes whose schemas hold a part are marked incomplete while the second validator is built (as pydantic's
    ``model_rebuild(force=True)`` marks a class it rebuilds), so it builds them from the schema it is given."""
    complete = [cls for cls in classes if cls.__dict__.get("__pydantic_complete__")]
    try:
        for cls in complete:
            type.__setattr__(cls, "__pydantic_complete__", False)
        yield
    finally:
        for cls in complete:
            type.__setattr__(cls, "__pydantic_complete__", True)
