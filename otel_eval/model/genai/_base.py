"""The base model, enums and lazily validated fields shared by the ``google.genai.types`` stand-ins (see the package
docstring)."""

from __future__ import annotations

import enum
import functools
import importlib.util
import json
import re
import typing
import warnings
from pathlib import Path
from typing import Annotated, Any, Final, Self

import pydantic
from pydantic import BeforeValidator, ValidationInfo, alias_generators


class BaseModel(pydantic.BaseModel):
    """Base of the models here, configured exactly as ``google.genai._common.BaseModel``."""

    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        from_attributes=True,
        protected_namespaces=(),
        extra="forbid",
        arbitrary_types_allowed=True,
        ser_json_bytes="base64",
        val_json_bytes="base64",
        ignored_types=(typing.TypeVar,),
        defer_build=True,
    )

    def to_json_dict(self) -> dict[str, object]:
        """The JSON form without None fields, as google-genai's ``to_json_dict``."""
        return self.model_dump(exclude_none=True, mode="json")

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """``cls(**values)`` without validating, for values that already are what validating them gives (a ``str``
        for a ``str`` field, an instance for a model field, a new list for a list field): a trace rebuild makes its
        text parts and contents by the thousand. The object equals, dumps and prints as the validated one (same
        fields, same fields set); the values are kept, not copied.

        Raises:
            TypeError: the class has a field that does not default to None, or a private attribute.
        """
        return _trusted(cls, values)


_M = typing.TypeVar("_M", bound=BaseModel)
_UNSET_FIELDS: dict[type[BaseModel], dict[str, None]] = {}
"""Per model class, every field at its default (None), the ``__dict__`` of a :meth:`BaseModel.trusted` object."""
_set_attribute = object.__setattr__


def _trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    instance = object.__new__(cls)
    unset = _UNSET_FIELDS.get(cls)
    if unset is None:
        fields = cls.model_fields.values()
        if cls.__private_attributes__ or any(f.default is not None or f.default_factory for f in fields):
            raise TypeError(f"{cls.__name__} has a field not defaulting to None or a private attribute: validate it")
        unset = _UNSET_FIELDS[cls] = dict.fromkeys(cls.model_fields)
    _set_attribute(instance, "__dict__", {**unset, **values})
    _set_attribute(instance, "__pydantic_fields_set__", set(values))
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


class CaseInSensitiveEnum(str, enum.Enum):
    """A ``str`` enum that looks members up case-insensitively and keeps unknown values (``_common``'s)."""

    @classmethod
    def _missing_(cls, value: Any) -> Any:
        if isinstance(value, enum.Enum) and isinstance(value.value, str):
            # A member of google-genai's twin enum (e.g. an unknown value kept by genai): use its value, not the
            # "Type.X" that str() would give below.
            return cls(value.value)
        try:
            return cls[value.upper()]
        except KeyError:
            try:
                return cls[value.lower()]
            except KeyError:
                warnings.warn(f"{value} is not a valid {cls.__name__}", stacklevel=1)
                try:
                    unknown = super().__new__(cls, value)
                    unknown._name_ = str(value)
                    unknown._value_ = value
                    return unknown
                except Exception:  # noqa: BLE001 - as google-genai: a value str() cannot take is not a member
                    return None


class Type(CaseInSensitiveEnum):
    """Data type of a schema field."""

    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    STRING = "STRING"
    NUMBER = "NUMBER"
    INTEGER = "INTEGER"
    BOOLEAN = "BOOLEAN"
    ARRAY = "ARRAY"
    OBJECT = "OBJECT"
    NULL = "NULL"


class Behavior(CaseInSensitiveEnum):
    """Whether a function call blocks the conversation."""

    UNSPECIFIED = "UNSPECIFIED"
    BLOCKING = "BLOCKING"
    NON_BLOCKING = "NON_BLOCKING"


class TrafficType(CaseInSensitiveEnum):
    """The traffic type of a request (Vertex AI)."""

    TRAFFIC_TYPE_UNSPECIFIED = "TRAFFIC_TYPE_UNSPECIFIED"
    ON_DEMAND = "ON_DEMAND"
    ON_DEMAND_PRIORITY = "ON_DEMAND_PRIORITY"
    ON_DEMAND_FLEX = "ON_DEMAND_FLEX"
    ON_DEMAND_OFFPEAK = "ON_DEMAND_OFFPEAK"
    PROVISIONED_THROUGHPUT = "PROVISIONED_THROUGHPUT"


class MediaModality(CaseInSensitiveEnum):
    """The modality a token count applies to."""

    MODALITY_UNSPECIFIED = "MODALITY_UNSPECIFIED"
    TEXT = "TEXT"
    IMAGE = "IMAGE"
    VIDEO = "VIDEO"
    AUDIO = "AUDIO"
    DOCUMENT = "DOCUMENT"


# --- fields validated by google-genai on first use ---------------------------------------------------------------


@functools.cache
def _genai_adapter(type_name: str, many: bool) -> pydantic.TypeAdapter[Any]:
    from google.genai import types as real_types  # deferred: importing google.genai costs about a second

    genai_type: Any = getattr(real_types, type_name)
    return pydantic.TypeAdapter(list[genai_type] if many else genai_type)


def _genai_validator(type_name: str, *, many: bool = False) -> BeforeValidator:
    """A validator that validates a present value with the google-genai type ``type_name`` (a list of it if many)."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        adapter = _genai_adapter(type_name, many)
        try:
            if info.mode == "json":
                # The value was parsed from JSON; validating its JSON keeps genai's JSON-only rules (base64 bytes).
                return adapter.validate_json(json.dumps(value), context=info.context)
            return adapter.validate_python(value, context=info.context)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(item) for item in first["loc"])
            raise ValueError(
                f"not a valid google.genai {type_name}{' list' if many else ''}: {where + ': ' if where else ''}"
                f"{first['msg']}"
            ) from None

    return BeforeValidator(validate)


_PartMediaResolution = Annotated[Any, _genai_validator("PartMediaResolution")]
_CodeExecutionResult = Annotated[Any, _genai_validator("CodeExecutionResult")]
_ExecutableCode = Annotated[Any, _genai_validator("ExecutableCode")]
_ToolCall = Annotated[Any, _genai_validator("ToolCall")]
_ToolResponse = Annotated[Any, _genai_validator("ToolResponse")]
_Transcription = Annotated[Any, _genai_validator("Transcription")]
_MediaProcessing = Annotated[Any, _genai_validator("MediaProcessing")]
_FunctionResponseScheduling = Annotated[Any, _genai_validator("FunctionResponseScheduling")]
_FunctionResponseParts = Annotated[Any, _genai_validator("FunctionResponsePart", many=True)]
_Retrieval = Annotated[Any, _genai_validator("Retrieval")]
_ComputerUse = Annotated[Any, _genai_validator("ComputerUse")]
_FileSearch = Annotated[Any, _genai_validator("FileSearch")]
_GoogleSearch = Annotated[Any, _genai_validator("GoogleSearch")]
_GoogleMaps = Annotated[Any, _genai_validator("GoogleMaps")]
_ToolCodeExecution = Annotated[Any, _genai_validator("ToolCodeExecution")]
_EnterpriseWebSearch = Annotated[Any, _genai_validator("EnterpriseWebSearch")]
_GoogleSearchRetrieval = Annotated[Any, _genai_validator("GoogleSearchRetrieval")]
_ToolParallelAiSearch = Annotated[Any, _genai_validator("ToolParallelAiSearch")]
_UrlContext = Annotated[Any, _genai_validator("UrlContext")]
_McpServers = Annotated[Any, _genai_validator("McpServer", many=True)]
_ToolExaAiSearch = Annotated[Any, _genai_validator("ToolExaAiSearch")]
_GroundingChunks = Annotated[Any, _genai_validator("GroundingChunk", many=True)]
_GroundingSupports = Annotated[Any, _genai_validator("GroundingSupport", many=True)]
_RetrievalMetadata = Annotated[Any, _genai_validator("RetrievalMetadata")]
_SearchEntryPoint = Annotated[Any, _genai_validator("SearchEntryPoint")]
_SourceFlaggingUris = Annotated[Any, _genai_validator("GroundingMetadataSourceFlaggingUri", many=True)]

_DocumentMetadata = Annotated[Any, _genai_validator("DocumentMetadata")]
_SpreadsheetMetadata = Annotated[Any, _genai_validator("SpreadsheetMetadata")]
_AudioMetadata = Annotated[Any, _genai_validator("AudioMetadata")]
_VideoContentLayers = Annotated[Any, _genai_validator("VideoMetadataContentLayer", many=True)]

GenerateContentConfig = Annotated[Any, _genai_validator("GenerateContentConfig")]
"""Annotation only (not a class): a field that holds a real google-genai ``GenerateContentConfig``, imported and
validated when the field is present; e.g. the judge model's config in an eval config."""


def _installed_genai() -> tuple[int, int]:
    """The installed google-genai's major and minor version, read from its ``version.py`` without importing it (its
    package metadata takes ~8 ms to find in a large environment), or (0, 0) when it cannot be read."""
    try:
        spec = importlib.util.find_spec("google.genai")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        text = (Path(locations[0]) / "version.py").read_text(encoding="utf-8") if locations else ""
    except (ImportError, OSError, ValueError):
        return (0, 0)
    found = re.search(r"__version__\s*=\s*['\"](\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else (0, 0)


GENAI_MEDIA_METADATA: Final = _installed_genai() >= (3, 4)
"""Whether the installed google-genai (3.4 and later) has ``Part.document_metadata``, ``spreadsheet_metadata`` and
``audio_metadata`` and ``VideoMetadata.content_layers``: the stand-ins declare them only then, so that they accept,
reject and dump as the installed google-genai does (google-adk 2.13 pins google-genai below 3; a default install
resolves the newest)."""
