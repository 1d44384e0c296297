"""``otel_eval.model.genai`` accepts, rejects and dumps exactly as ``google.genai.types`` (2.34) does.

Inputs are generated from google-genai's own field annotations (so every field, nested model and enum of the real
types is exercised, lazily validated ones included), with snake_case and camelCase keys, unknown keys, wrong types,
base64 and raw bytes, None vs missing, and (in Python mode) nested google-genai and otel-eval objects.
"""

from __future__ import annotations

import base64
import datetime
import enum
import inspect
import json
import subprocess
import sys
import types
import typing
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pydantic
import pytest
from google.genai import _common
from google.genai import types as g
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from otel_eval.model import genai as o
from otel_eval.model._base import EvalBaseModel

MODELS = [
    "Content",
    "Part",
    "FunctionCall",
    "FunctionResponse",
    "Blob",
    "FileData",
    "Tool",
    "FunctionDeclaration",
    "Schema",
    "GroundingMetadata",
    "GenerateContentResponseUsageMetadata",
]
NATIVE = sorted(name for name in o.__all__ if isinstance(getattr(o, name), type) and name in vars(g))
EXAMPLES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_DEPTH = 3

# --- generated inputs, derived from google-genai's annotations ---------------------------------------------------

_json_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, width=64), st.text(max_size=6)
)
_json_value = st.recursive(
    _json_scalar,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=5,
)
_garbage = st.one_of(
    _json_value, st.sampled_from(["", "true", "1", "1.5", "NaN", "aGk=", "OBJECT", "text", {"x": {}}, [{}]])
)
_unknown_keys = st.sampled_from(["unknown", "Text", "TEXT", "function-call", "extra_field", "$ref", "type_"])


def _mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values of the right kind eight times in nine, else garbage (so that a good share of inputs is accepted)."""
    return st.integers(0, 8).flatmap(lambda pick: _garbage if pick == 0 else valid)


def _bytes_values(python: bool) -> st.SearchStrategy[Any]:
    b64 = st.binary(max_size=8).map(lambda raw: base64.b64encode(raw).decode())
    urlsafe = st.binary(max_size=8).map(lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="))
    choices = [b64, urlsafe, st.text(max_size=6)]
    if python:
        choices += [st.binary(max_size=8), st.binary(max_size=4).map(bytearray)]
    return st.one_of(*choices)


def _enum_values(enum_type: type[enum.Enum]) -> st.SearchStrategy[Any]:
    values = [member.value for member in enum_type]
    variants = values + [value.lower() for value in values] + [value.title() for value in values]
    return st.sampled_from([*variants, "bogus_value", ""])


def _strategy(annotation: Any, depth: int, python: bool) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _strategy(args[0], depth, python)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_strategy(arg, depth, python) for arg in args))
    if annotation is type(None):
        return st.none()
    return _mostly(_valid(annotation, depth, python))


def _valid(annotation: Any, depth: int, python: bool) -> st.SearchStrategy[Any]:
    """Values of ``annotation``'s kind, including ones pydantic's lax mode may or may not coerce."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return st.sampled_from([*args, "other"])
    if origin in (list, Sequence):
        return st.lists(_strategy(args[0], depth, python), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), _strategy(args[1], depth, python), max_size=2)
    if annotation is typing.Any or annotation is object:
        return _json_value
    if annotation is str:
        return st.text(max_size=8)
    if annotation is bool:
        return st.one_of(st.booleans(), st.sampled_from(["true", "no", "0", "1", 0, 1, 2, 1.0]))
    if annotation is int:
        return st.one_of(st.integers(), st.sampled_from([1.0, 1.5, "3", "3.0", " 4 ", True]))
    if annotation is float:
        return st.one_of(st.floats(allow_nan=False), st.integers(), st.sampled_from(["1.5", "inf", "1e3"]))
    if annotation is bytes:
        return _bytes_values(python)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_values(annotation)
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return _model_input(annotation, depth + 1, python)
    if annotation in (datetime.datetime, datetime.date):
        return st.sampled_from(["2024-01-01T00:00:00Z", "2024-01-01", 0])
    return _garbage


def _model_dict(model: type[pydantic.BaseModel], depth: int, python: bool) -> st.SearchStrategy[dict[str, Any]]:
    if depth > MAX_DEPTH:
        return st.just({})
    fields = list(model.model_fields.items())

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        data: dict[str, Any] = {}
        chosen = draw(st.lists(st.sampled_from(fields), max_size=4, unique_by=lambda f: f[0])) if fields else []
        for name, info in chosen:
            style = draw(st.sampled_from(["snake", "snake", "snake", "camel", "camel", "camel", "both", "none"]))
            value = None if style == "none" else draw(_strategy(info.annotation, depth, python))
            if style in ("snake", "none", "both"):
                data[name] = value
            if style in ("camel", "both"):
                data[to_camel(name)] = draw(_strategy(info.annotation, depth, python)) if style == "both" else value
        if draw(st.integers(0, 9)) == 0:
            data[draw(_unknown_keys)] = draw(_json_scalar)
        return data

    return build()


def _model_input(model: type[pydantic.BaseModel], depth: int, python: bool) -> st.SearchStrategy[Any]:
    """A dict for ``model``; in Python mode sometimes the google-genai or otel-eval object built from it."""
    data = _model_dict(model, depth, python)
    if not python:
        return data
    ours = getattr(o, model.__name__, None)
    builders: list[type[pydantic.BaseModel]] = [model] + ([ours] if isinstance(ours, type) else [])

    def as_object(pair: tuple[dict[str, Any], int]) -> Any:
        raw, choice = pair
        if choice >= len(builders):
            return raw
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                built = builders[choice].model_validate(raw)
        except Exception:  # invalid input stays a dict (genai's enums may raise AttributeError)
            return raw
        # An unknown enum value read from a foreign object warns again (and google-genai mangles ours into "Type.X",
        # str() of the member), so such objects are only handed over as dicts here; round trips cover them.
        return raw if _has_unknown_enum(built) else built

    return st.tuples(data, st.integers(0, 3)).map(as_object)


def _has_unknown_enum(model: pydantic.BaseModel) -> bool:
    def walk(value: Any) -> bool:
        if isinstance(value, enum.Enum):
            return value.name not in type(value).__members__
        if isinstance(value, dict):
            return any(walk(item) for item in value.values())
        if isinstance(value, list):
            return any(walk(item) for item in value)
        return False

    return walk(model.model_dump())


def _has_objects(value: Any) -> bool:
    if isinstance(value, pydantic.BaseModel):
        return True
    if isinstance(value, dict):
        return any(_has_objects(item) for item in value.values())
    return isinstance(value, list) and any(_has_objects(item) for item in value)


def _inputs(name: str, python: bool) -> st.SearchStrategy[Any]:
    return _mostly(_model_dict(getattr(g, name), 0, python))


# --- comparing outcomes ----------------------------------------------------------------------------------------

DUMPS: list[tuple[str, Callable[[pydantic.BaseModel], Any]]] = [
    ("python", lambda m: m.model_dump()),
    ("json", lambda m: m.model_dump(mode="json")),
    ("exclude_none", lambda m: m.model_dump(exclude_none=True)),
    ("by_alias", lambda m: m.model_dump(by_alias=True)),
    ("json alias exclude_none", lambda m: m.model_dump(mode="json", by_alias=True, exclude_none=True)),
    ("json exclude_unset", lambda m: m.model_dump(mode="json", exclude_unset=True)),
    ("dump_json", lambda m: m.model_dump_json()),
    ("dump_json exclude_none", lambda m: m.model_dump_json(exclude_none=True)),
    ("dump_json alias exclude_none", lambda m: m.model_dump_json(by_alias=True, exclude_none=True)),
    ("to_json_dict", lambda m: m.to_json_dict() if hasattr(m, "to_json_dict") else None),
]


def _nan_safe(value: Any) -> Any:
    """``value`` with NaN floats (from "NaN" strings) replaced by a marker, so that equal dumps compare equal."""
    if isinstance(value, float) and value != value:
        return "<nan>"
    if isinstance(value, dict):
        return {key: _nan_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nan_safe(item) for item in value]
    return value


def _outcome(validate: Callable[[], pydantic.BaseModel]) -> tuple[pydantic.BaseModel | None, Any, list[str]]:
    """(model or None, its dumps or the exception type, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = validate()
        except Exception as exc:  # google-genai's enums raise e.g. AttributeError for a list; so must ours
            return None, type(exc).__name__, [str(w.message) for w in caught]
        dumps = {label: _nan_safe(dump(model)) for label, dump in DUMPS}
    return model, dumps, [str(w.message) for w in caught]


def _assert_same(ours_cls: Any, genai_cls: Any, data: Any, *, as_json: bool) -> tuple[Any, Any]:
    """Both classes accept or both reject ``data`` (as JSON text or Python), with the same dumps and warnings."""
    if as_json:
        text = json.dumps(data)
        ours, ours_dumps, ours_warnings = _outcome(lambda: ours_cls.model_validate_json(text))
        genai, genai_dumps, genai_warnings = _outcome(lambda: genai_cls.model_validate_json(text))
    else:
        ours, ours_dumps, ours_warnings = _outcome(lambda: ours_cls.model_validate(data))
        genai, genai_dumps, genai_warnings = _outcome(lambda: genai_cls.model_validate(data))
    assert (ours is None) == (genai is None), f"ours accepts: {ours is not None}, genai accepts: {genai is not None}"
    if ours is not None and _has_objects(data):
        # pydantic marks every field of a model read from a foreign object (from_attributes) as set, in both
        # libraries, whereas an object of the model's own class is kept as is: exclude_unset cannot agree here.
        del ours_dumps["json exclude_unset"], genai_dumps["json exclude_unset"]
    assert ours_dumps == genai_dumps
    assert ours_warnings == genai_warnings
    return ours, genai


def _same(left: pydantic.BaseModel, right: pydantic.BaseModel) -> bool:
    """Pydantic equality, NaN-tolerant (a NaN field never equals itself)."""
    return left == right or (
        type(left) is type(right) and _nan_safe(left.model_dump()) == _nan_safe(right.model_dump())
    )


def _validated_json(cls: Any, text: str) -> Any:
    """``cls`` read from JSON ``text``, or where and why it refused it."""
    try:
        return cls.model_validate_json(text)
    except pydantic.ValidationError as error:
        return [(problem["loc"], problem["type"]) for problem in error.errors()]


def _same_outcome(left: Any, right: Any) -> bool:
    """Two reads' outcomes agree: equal models (NaN-tolerant), or the same refusal."""
    if isinstance(left, pydantic.BaseModel) and isinstance(right, pydantic.BaseModel):
        return _same(left, right)
    return bool(left == right)


def _assert_round_trips(name: str, ours: Any, genai: Any) -> None:
    ours_cls, genai_cls = getattr(o, name), getattr(g, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # ours from a google-genai object (from_attributes), and google-genai from ours
        from_genai = ours_cls.model_validate(genai)
        assert from_genai.model_dump_json() == genai.model_dump_json()
        assert _nan_safe(from_genai.model_dump()) == _nan_safe(genai.model_dump())
        # Both read back, or both refuse the same way: an infinite float is dumped as JSON null by both libraries,
        # which a list of floats then refuses.
        assert _same_outcome(
            _validated_json(genai_cls, ours.model_dump_json()), _validated_json(genai_cls, genai.model_dump_json())
        )
        if not _has_unknown_enum(ours):  # see _model_input: genai mangles unknown enum values of foreign objects
            assert _same(genai_cls.model_validate(ours), genai)
            assert _same(genai_cls.model_validate(ours.model_dump()), genai_cls.model_validate(genai.model_dump()))
        # equality is pydantic's: same class and same values
        assert _same_outcome(
            _validated_json(ours_cls, ours.model_dump_json()), _validated_json(ours_cls, genai.model_dump_json())
        )
        assert not _same(ours, genai)


@pytest.mark.parametrize("name", MODELS)
@EXAMPLES
@given(data=st.data())
def test_json_input_accepted_rejected_and_dumped_like_genai(name: str, data: st.DataObject) -> None:
    payload = data.draw(_inputs(name, python=False))
    ours, genai = _assert_same(getattr(o, name), getattr(g, name), payload, as_json=True)
    if ours is not None:
        _assert_round_trips(name, ours, genai)


@pytest.mark.parametrize("name", MODELS)
@EXAMPLES
@given(data=st.data())
def test_python_input_accepted_rejected_and_dumped_like_genai(name: str, data: st.DataObject) -> None:
    payload = data.draw(_inputs(name, python=True))
    ours, genai = _assert_same(getattr(o, name), getattr(g, name), payload, as_json=False)
    if ours is not None:
        _assert_round_trips(name, ours, genai)


class _OurHolder(EvalBaseModel):
    config: o.GenerateContentConfig | None = None
    content: o.Content | None = None


class _GenaiHolder(EvalBaseModel):
    config: g.GenerateContentConfig | None = None
    content: g.Content | None = None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.one_of(_model_input(g.GenerateContentConfig, 1, True), st.none()),
    content=st.one_of(_model_input(g.Content, 1, True), st.none()),
    as_json=st.booleans(),
)
def test_fields_inside_eval_models_behave_like_genai(config: Any, content: Any, as_json: bool) -> None:
    """As ``Invocation.user_content`` and ``JudgeModelOptions.judge_model_config`` use them (EvalBaseModel config)."""
    payload: dict[str, Any] = {"config": config, "content": content}
    if as_json and _has_objects(payload):
        return
    try:
        _assert_same(_OurHolder, _GenaiHolder, payload, as_json=as_json)
    except TypeError:  # bytes inside: not JSON
        assert as_json


# --- structure, constructors, equality -----------------------------------------------------------------------


def _shape(annotation: Any) -> Any:
    """An annotation with model/enum classes replaced by their names, for comparing ours with genai's."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return ("union", frozenset(_shape(arg) for arg in typing.get_args(annotation)))
    if origin is not None:
        return (origin, tuple(_shape(arg) for arg in typing.get_args(annotation)))
    if isinstance(annotation, type) and issubclass(annotation, (pydantic.BaseModel, enum.Enum)):
        return annotation.__name__
    return annotation


def _lazy_type(info: Any) -> str | None:
    for meta in info.metadata:
        if isinstance(meta, pydantic.BeforeValidator):
            found = inspect.getclosurevars(meta.func).nonlocals
            return f"{found['type_name']}{'[]' if found['many'] else ''}"
    return None


@pytest.mark.parametrize("name", NATIVE)
def test_same_fields_in_same_order_with_same_types(name: str) -> None:
    ours_cls, genai_cls = getattr(o, name), getattr(g, name)
    if issubclass(genai_cls, enum.Enum):
        assert [(m.name, m.value) for m in ours_cls] == [(m.name, m.value) for m in genai_cls]
        return
    assert list(ours_cls.model_fields) == list(genai_cls.model_fields)
    for field, genai_info in genai_cls.model_fields.items():
        ours_info = ours_cls.model_fields[field]
        assert ours_info.alias == genai_info.alias and ours_info.default is None
        lazy = _lazy_type(ours_info)
        if lazy is None:
            assert _shape(ours_info.annotation) == _shape(genai_info.annotation), field
        else:  # typed Any here, validated by the genai type it names
            inner = [arg for arg in typing.get_args(genai_info.annotation) if arg is not type(None)]
            (genai_type,) = inner
            many = typing.get_origin(genai_type) is list
            assert lazy == (typing.get_args(genai_type)[0] if many else genai_type).__name__ + ("[]" if many else "")
    assert list(ours_cls.__private_attributes__) == list(genai_cls.__private_attributes__)


def test_same_model_config_as_genai_base_model() -> None:
    assert o.BaseModel.model_config == _common.BaseModel.model_config


def test_validated_parts_set_the_fields_genai_sets() -> None:
    """Validation does not go through ``Part.__init__`` (it would re-enter the validator per part), yet a part given
    as a mapping leaves the None values of the constructor's keywords unset, as genai's constructor does."""
    parts: list[dict[str, Any]] = [
        {"text": None, "thought": True},
        {"functionCall": None, "text": "x"},
        {"function_call": {"name": "f", "args": {}}, "thought_signature": None, "part_metadata": None},
        {"text": "t"},
    ]
    for part in parts:
        ours, genai = o.Content.model_validate({"parts": [part]}), g.Content.model_validate({"parts": [part]})
        assert ours.parts is not None and genai.parts is not None
        assert ours.parts[0].model_fields_set == genai.parts[0].model_fields_set
        assert ours.model_dump() == genai.model_dump()


def test_part_constructor_like_genai() -> None:
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("hello",), {}),
        (({"text": "t", "thought": True},), {}),
        (({"file_uri": "gs://b/x.png", "mime_type": "image/png"},), {}),
        (({"fileUri": "gs://b/x.png", "displayName": "x"},), {}),
        ((), {"text": "t", "functionCall": {"name": "f"}}),
        ((), {"function_call": {"name": "f", "args": {"a": 1}}, "thought_signature": b"sig"}),
        ((), {"executable_code": {"code": "print(1)", "language": "python"}}),
        ((g.File(uri="gs://b/y.pdf", mime_type="application/pdf", display_name="y"),), {}),
    ]
    for args, kwargs in cases:
        ours, genai = o.Part(*args, **kwargs), g.Part(*args, **kwargs)
        assert ours.model_dump() == genai.model_dump()
        assert ours.model_fields_set == genai.model_fields_set
    assert o.Part(o.Part(text="x")).model_fields_set == g.Part(g.Part(text="x")).model_fields_set
    for bad_args, bad_kwargs in [
        (("x",), {"text": "y"}),
        ((3,), {}),
        (({"file_uri": 3},), {}),
        (({"fileUri": "gs://b", "bogus": 1},), {}),
    ]:
        with pytest.raises((ValueError, pydantic.ValidationError)) as ours_error:
            o.Part(*bad_args, **bad_kwargs)
        with pytest.raises((ValueError, pydantic.ValidationError)) as genai_error:
            g.Part(*bad_args, **bad_kwargs)
        assert type(ours_error.value) is type(genai_error.value)
    assert (
        o.Part.from_uri(file_uri="gs://b/a.png").model_dump() == g.Part.from_uri(file_uri="gs://b/a.png").model_dump()
    )
    assert o.Part.from_bytes(data=b"\x00", mime_type="image/png", media_resolution="media_resolution_low").model_dump(
        mode="json"
    ) == g.Part.from_bytes(data=b"\x00", mime_type="image/png", media_resolution="media_resolution_low").model_dump(
        mode="json"
    )
    assert o.Part.from_function_call(name="f", args={"a": 1}) == o.Part(
        function_call=o.FunctionCall(name="f", args={"a": 1})
    )
    assert o.Part.from_function_response(name="f", response={"r": 1}).to_json_dict() == (
        g.Part.from_function_response(name="f", response={"r": 1}).to_json_dict()
    )
    assert o.Part.from_executable_code(code="1", language="PYTHON").to_json_dict() == (
        g.Part.from_executable_code(code="1", language=g.Language.PYTHON).to_json_dict()
    )
    assert o.Part.from_code_execution_result(outcome="OUTCOME_OK", output="1").to_json_dict() == (
        g.Part.from_code_execution_result(outcome=g.Outcome.OUTCOME_OK, output="1").to_json_dict()
    )


def test_equality_is_pydantic_value_equality() -> None:
    assert o.FunctionCall(name="a", args={"x": 1}) == o.FunctionCall(name="a", args={"x": 1})
    assert o.FunctionCall(name="a", args={"x": 1}) != o.FunctionCall(name="a", args={"x": 2})
    assert o.Content(parts=[o.Part(text="a")]) == o.Content.model_validate({"parts": [{"text": "a"}]})
    assert o.Part(executable_code={"code": "1"}) == o.Part(executable_code=g.ExecutableCode(code="1"))
    usage = o.GenerateContentResponseUsageMetadata(prompt_token_count=3)
    assert usage.initial_prompt_token_count == 3
    assert o.Schema(type="object").type == g.Type.OBJECT == "OBJECT"


def test_eval_models_accept_genai_objects() -> None:
    genai_content = g.Content(role="model", parts=[g.Part(function_call=g.FunctionCall(name="f", args={"a": 1}))])
    holder = _OurHolder(content=genai_content)  # type: ignore[arg-type]
    assert isinstance(holder.content, o.Content)
    assert holder.model_dump() == _GenaiHolder(content=genai_content).model_dump()


# --- import cost ---------------------------------------------------------------------------------------------

_STANDALONE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location(
    "standalone_genai", sys.argv[1], submodule_search_locations=[sys.argv[1].rpartition("/")[0]]
)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
content = module.Content.model_validate_json(
    '{"role": "model", "parts": [{"text": "hi", "thoughtSignature": "c2ln"}, '
    '{"functionCall": {"name": "f", "args": {"a": 1}}}, {"functionResponse": {"name": "f", "response": {}}}]}'
)
tool = module.Tool.model_validate({"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT"}}]})
usage = module.GenerateContentResponseUsageMetadata.model_validate({"promptTokensDetails": [{"modality": "TEXT"}]})
dumps = [content.model_dump_json(), tool.model_dump_json(by_alias=True), usage.model_dump(mode="json")]
before = sorted(name for name in sys.modules if name.startswith(("google.genai", "google.adk", "otel_eval")))
module.Part.model_validate({"executableCode": {"code": "1"}})
print(json.dumps({"before": before, "after": "google.genai.types" in sys.modules}))
"""


@pytest.mark.integration
def test_module_never_imports_google_genai_until_a_rare_field_needs_it() -> None:
    path = Path(o.__file__)
    result = subprocess.run(
        [sys.executable, "-c", _STANDALONE, str(path)], capture_output=True, text=True, check=True, timeout=60
    )
    report = json.loads(result.stdout)
    assert report["before"] == []  # neither google-genai nor otel_eval (whose model package still imports genai)
    assert report["after"] is True


_OFFLINE_RUN = """
import contextlib, io, json, sys
from otel_eval.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main(["run", *sys.argv[1:], "--output", "json"], standalone_mode=False)
results = json.loads(out.getvalue())["results"]
print(json.dumps({"results": len(results), "genai": sorted(m for m in sys.modules if m.startswith("google.genai"))}))
"""


@pytest.mark.integration
def test_offline_run_never_imports_google_genai() -> None:
    """``otel-eval run`` with deterministic metrics rebuilds, scores and prints without loading google-genai."""
    data = Path(__file__).resolve().parents[1] / "data"
    traces = data / "traces" / "agentevals"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _OFFLINE_RUN,
            str(traces / "helm.json"),
            "--eval-set",
            str(data / "evalsets" / "eval_set_helm.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["results"] >= 1
    assert report["genai"] == []
