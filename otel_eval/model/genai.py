"""Lightweight, wire-identical stand-ins for the ``google.genai.types`` models otel-eval's data model uses.

Importing ``google.genai.types`` costs about a second (it imports the whole client, aiohttp and httpx, and defines
several hundred models). The offline path only needs a handful of them, so this module re-declares those with the
same class names, field names, field order, field types and model configuration as google-genai 2.34, which makes
validation and serialisation identical (proved by ``tests/model/test_genai_models.py``)::

    from otel_eval.model import genai as genai_types  # instead of: from google.genai import types as genai_types

Rarely used nested fields (code execution, server-side tool calls, built-in tools, grounding chunks, ...) are typed
``Any`` here: when such a field is present and not None it is validated by the real google-genai type, imported on
first use, and holds the validated genai object, so it accepts, compares and dumps exactly as in google-genai.

Differences from google-genai: an object of this module never equals the google-genai object with the same content
(pydantic compares classes), the enums here are their own ``str`` enums (their members equal genai's members and
strings), and genai-only helpers (``FunctionDeclaration.from_callable``, ``Schema.json_schema``, pretty ``repr``, the
mismatched-model warning log) are absent.
"""

from __future__ import annotations

import enum
import functools
import json
import typing
import warnings
from typing import Annotated, Any, Literal, Self

import pydantic
from pydantic import BeforeValidator, ValidationInfo, alias_generators

__all__ = [
    "BaseModel",
    "Behavior",
    "Blob",
    "CaseInSensitiveEnum",
    "Content",
    "FileData",
    "FunctionCall",
    "FunctionDeclaration",
    "FunctionResponse",
    "GenerateContentConfig",
    "GenerateContentResponseUsageMetadata",
    "GroundingMetadata",
    "MediaModality",
    "ModalityTokenCount",
    "Part",
    "PartialArg",
    "Schema",
    "SpeechMetadata",
    "Tool",
    "TrafficType",
    "Type",
    "VideoMetadata",
]


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

GenerateContentConfig = Annotated[Any, _genai_validator("GenerateContentConfig")]
"""Annotation only (not a class): a field that holds a real google-genai ``GenerateContentConfig``, imported and
validated when the field is present; e.g. the judge model's config in an eval config."""


# --- contents ----------------------------------------------------------------------------------------------------


class FileData(BaseModel):
    """URI-based data."""

    display_name: str | None = None
    file_uri: str | None = None
    mime_type: str | None = None


class Blob(BaseModel):
    """Inline bytes of a media type."""

    data: bytes | None = None
    display_name: str | None = None
    mime_type: str | None = None

    def as_image(self) -> Any:
        """The blob as a google-genai ``Image``, or None if it is not an image (imports google.genai)."""
        from google.genai import types as real_types

        return real_types.Blob(data=self.data, display_name=self.display_name, mime_type=self.mime_type).as_image()


class PartialArg(BaseModel):
    """A partial (streamed) argument value of a function call."""

    bool_value: bool | None = None
    json_path: str | None = None
    null_value: Literal["NULL_VALUE"] | None = None
    number_value: float | None = None
    string_value: str | None = None
    will_continue: bool | None = None


class FunctionCall(BaseModel):
    """A function call predicted by the model: its name and JSON arguments."""

    id: str | None = None
    args: dict[str, Any] | None = None
    name: str | None = None
    partial_args: list[PartialArg] | None = None
    will_continue: bool | None = None


class FunctionResponse(BaseModel):
    """The result of a function call, sent back to the model."""

    will_continue: bool | None = None
    scheduling: _FunctionResponseScheduling = None
    parts: _FunctionResponseParts = None
    id: str | None = None
    name: str | None = None
    response: dict[str, Any] | None = None


class VideoMetadata(BaseModel):
    """Clipping offsets and frame rate of a video."""

    end_offset: str | None = None
    fps: float | None = None
    start_offset: str | None = None


class SpeechMetadata(BaseModel):
    """Speaker and style of a text part for speech synthesis."""

    speaker: str | None = None
    style: str | None = None


class Part(BaseModel):
    """One piece of a message: text, a function call or response, inline or URI data, ..."""

    media_resolution: _PartMediaResolution = None
    code_execution_result: _CodeExecutionResult = None
    executable_code: _ExecutableCode = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    text: str | None = None
    thought: bool | None = None
    thought_signature: bytes | None = None
    video_metadata: VideoMetadata | None = None
    tool_call: _ToolCall = None
    tool_response: _ToolResponse = None
    part_metadata: dict[str, Any] | None = None
    audio_transcription: _Transcription = None
    media_processing: _MediaProcessing = None
    speech_metadata: SpeechMetadata | None = None

    def __init__(
        self,
        value: Any = None,
        /,
        *,
        video_metadata: VideoMetadata | None = None,
        thought: bool | None = None,
        inline_data: Blob | None = None,
        file_data: FileData | None = None,
        thought_signature: bytes | None = None,
        function_call: FunctionCall | None = None,
        code_execution_result: Any = None,
        executable_code: Any = None,
        function_response: FunctionResponse | None = None,
        text: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Builds a part from keyword fields, or from one positional str, dict, ``Part``, genai ``File`` or image."""
        # The keywords that are not None, in google-genai's order: a part built by keywords (every part a rebuild
        # builds) is validated at once, without the copies the other forms need.
        part_dict: dict[str, Any] = {}
        if video_metadata is not None:
            part_dict["video_metadata"] = video_metadata
        if thought is not None:
            part_dict["thought"] = thought
        if inline_data is not None:
            part_dict["inline_data"] = inline_data
        if file_data is not None:
            part_dict["file_data"] = file_data
        if thought_signature is not None:
            part_dict["thought_signature"] = thought_signature
        if function_call is not None:
            part_dict["function_call"] = function_call
        if code_execution_result is not None:
            part_dict["code_execution_result"] = code_execution_result
        if executable_code is not None:
            part_dict["executable_code"] = executable_code
        if function_response is not None:
            part_dict["function_response"] = function_response
        if text is not None:
            part_dict["text"] = text
        if value is None and not kwargs:
            self.__pydantic_validator__.validate_python(part_dict, self_instance=self, context=_FROM_INIT)
            return
        if part_dict and value is not None:
            raise ValueError("Positional and keyword arguments can not be combined when initializing a Part.")
        if value is None:
            pass
        elif isinstance(value, str):
            part_dict["text"] = value
        elif isinstance(value, dict):
            try:
                Part.model_validate(value)
                part_dict.update(value)
            except pydantic.ValidationError:
                part_dict["file_data"] = FileData.model_validate(value)
        elif isinstance(value, Part):
            part_dict.update(value.model_dump())
        else:
            # A genai File, a PIL image, or something google-genai rejects with its own error.
            from google.genai import types as real_types

            real = real_types.Part(value)
            part_dict.update({name: getattr(real, name) for name in real.model_fields_set})
        # BaseModel.__init__'s validation, told that the None keywords are dropped already (a positional part keeps
        # the None fields it has set, as in google-genai).
        self.__pydantic_validator__.validate_python(dict(**part_dict, **kwargs), self_instance=self, context=_FROM_INIT)

    # Validation (``Content.model_validate``, a part given as a dict) does not call this ``__init__``: pydantic would
    # otherwise call it from Rust for every part and re-enter the validator from Python, twice the cost of validating
    # the part. All it adds to validating a mapping is dropping its None keywords, which ``_drop_none_keywords``
    # does. Marked as pydantic marks ``BaseModel.__init__`` (``__pydantic_base_init__``), read when the class is made.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @pydantic.model_validator(mode="before")
    @classmethod
    def _drop_none_keywords(cls, data: Any, info: ValidationInfo) -> Any:
        """A mapping without the None values of ``__init__``'s keywords, as ``Part(**mapping)`` leaves them unset."""
        if info.context is not _FROM_INIT and isinstance(data, dict) and None in data.values():
            return {key: item for key, item in data.items() if item is not None or key not in _INIT_KEYWORDS}
        return data

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """As :meth:`BaseModel.trusted`, the None values of ``__init__``'s keywords left unset as ``Part(...)`` does."""
        if None in values.values():
            values = {k: v for k, v in values.items() if v is not None or k not in _INIT_KEYWORDS}
        return _trusted(cls, values)

    def as_image(self) -> Any:
        """The inline data as a google-genai ``Image``, or None if the part is not an image (imports google.genai)."""
        if not self.inline_data:
            return None
        return self.inline_data.as_image()

    @classmethod
    def from_text(cls, *, text: str) -> Part:
        """A text part."""
        return cls(text=text)

    @classmethod
    def from_uri(cls, *, file_uri: str, mime_type: str | None = None, media_resolution: Any = None) -> Part:
        """A file-data part; the MIME type is guessed from the URI when not given."""
        if mime_type is None:
            import mimetypes

            mime_type, _ = mimetypes.guess_type(file_uri)
            if not mime_type:
                raise ValueError(f"Failed to determine mime type for file: {file_uri}")
        return cls(
            file_data=FileData(file_uri=file_uri, mime_type=mime_type),
            media_resolution=_media_resolution(media_resolution),
        )

    @classmethod
    def from_bytes(cls, *, data: bytes, mime_type: str, media_resolution: Any = None) -> Part:
        """An inline-data part."""
        return cls(
            inline_data=Blob(data=data, mime_type=mime_type), media_resolution=_media_resolution(media_resolution)
        )

    @classmethod
    def from_function_call(cls, *, name: str, args: dict[str, Any]) -> Part:
        """A function-call part."""
        return cls(function_call=FunctionCall(name=name, args=args))

    @classmethod
    def from_function_response(cls, *, name: str, response: dict[str, Any], parts: list[Any] | None = None) -> Part:
        """A function-response part."""
        return cls(function_response=FunctionResponse(name=name, response=response, parts=parts))

    @classmethod
    def from_executable_code(cls, *, code: str, language: Any) -> Part:
        """An executable-code part."""
        return cls(executable_code={"code": code, "language": language})

    @classmethod
    def from_code_execution_result(cls, *, outcome: Any, output: str) -> Part:
        """A code-execution-result part."""
        return cls(code_execution_result={"outcome": outcome, "output": output})


_INIT_KEYWORDS = frozenset(
    {
        "video_metadata",
        "thought",
        "inline_data",
        "file_data",
        "thought_signature",
        "function_call",
        "code_execution_result",
        "executable_code",
        "function_response",
        "text",
    }
)
"""The keywords of ``Part.__init__`` whose None values it drops (they stay unset, as in google-genai)."""
_FROM_INIT = object()
"""Validation context of ``Part.__init__``: its data has the None keywords dropped already."""


def _media_resolution(value: Any) -> Any:
    """google-genai's ``Part._t_part_media_resolution``: a level (str) or dict as a ``PartMediaResolution``."""
    if isinstance(value, str):
        return {"level": value}
    return value


class Content(BaseModel):
    """The multi-part content of one message."""

    parts: list[Part] | None = None
    role: str | None = None


# --- tools -------------------------------------------------------------------------------------------------------


class Schema(BaseModel):
    """A subset of an OpenAPI 3.0 schema object, as function declarations' ``parameters`` use it."""

    additional_properties: Any | None = None
    defs: dict[str, Schema] | None = None
    ref: str | None = None
    any_of: list[Schema] | None = None
    default: Any | None = None
    description: str | None = None
    enum: list[str] | None = None
    example: Any | None = None
    format: str | None = None
    items: Schema | None = None
    max_items: int | None = None
    max_length: int | None = None
    max_properties: int | None = None
    maximum: float | None = None
    min_items: int | None = None
    min_length: int | None = None
    min_properties: int | None = None
    minimum: float | None = None
    nullable: bool | None = None
    pattern: str | None = None
    properties: dict[str, Schema] | None = None
    property_ordering: list[str] | None = None
    required: list[str] | None = None
    title: str | None = None
    type: Type | None = None


class FunctionDeclaration(BaseModel):
    """A function the model may call: name, description and parameter/response schemas."""

    description: str | None = None
    name: str | None = None
    parameters: Schema | None = None
    parameters_json_schema: Any | None = None
    response: Schema | None = None
    response_json_schema: Any | None = None
    behavior: Behavior | None = None


class Tool(BaseModel):
    """Tools the model may use: function declarations or one of Gemini's built-in tools."""

    retrieval: _Retrieval = None
    computer_use: _ComputerUse = None
    file_search: _FileSearch = None
    google_search: _GoogleSearch = None
    google_maps: _GoogleMaps = None
    code_execution: _ToolCodeExecution = None
    enterprise_web_search: _EnterpriseWebSearch = None
    function_declarations: list[FunctionDeclaration] | None = None
    google_search_retrieval: _GoogleSearchRetrieval = None
    parallel_ai_search: _ToolParallelAiSearch = None
    url_context: _UrlContext = None
    mcp_servers: _McpServers = None
    exa_ai_search: _ToolExaAiSearch = None


# --- response metadata -------------------------------------------------------------------------------------------


class GroundingMetadata(BaseModel):
    """How a response was grounded (search queries, chunks, supports)."""

    image_search_queries: list[str] | None = None
    grounding_chunks: _GroundingChunks = None
    grounding_supports: _GroundingSupports = None
    retrieval_metadata: _RetrievalMetadata = None
    search_entry_point: _SearchEntryPoint = None
    web_search_queries: list[str] | None = None
    google_maps_widget_context_token: str | None = None
    retrieval_queries: list[str] | None = None
    source_flagging_uris: _SourceFlaggingUris = None


class ModalityTokenCount(BaseModel):
    """Tokens of one modality."""

    modality: MediaModality | None = None
    token_count: int | None = None


class GenerateContentResponseUsageMetadata(BaseModel):
    """Token usage of one model call."""

    cache_tokens_details: list[ModalityTokenCount] | None = None
    cached_content_token_count: int | None = None
    candidates_token_count: int | None = None
    candidates_tokens_details: list[ModalityTokenCount] | None = None
    prompt_token_count: int | None = None
    prompt_tokens_details: list[ModalityTokenCount] | None = None
    thoughts_token_count: int | None = None
    tool_use_prompt_token_count: int | None = None
    tool_use_prompt_tokens_details: list[ModalityTokenCount] | None = None
    total_token_count: int | None = None
    traffic_type: TrafficType | None = None
    _initial_prompt_token_count: int | None = pydantic.PrivateAttr(default=None)

    @property
    def initial_prompt_token_count(self) -> int | None:
        """The prompt token count of the initial request, before any continuation hops."""
        if self._initial_prompt_token_count is not None:
            return self._initial_prompt_token_count
        return self.prompt_token_count
