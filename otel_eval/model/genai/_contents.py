"""Message contents: ``Content``, ``Part`` and the values a part holds (stand-ins for ``google.genai.types``)."""

from __future__ import annotations

from typing import Any, Literal, Self

import pydantic
from pydantic import ValidationInfo

from ._base import (
    GENAI_MEDIA_METADATA,
    BaseModel,
    _AudioMetadata,
    _CodeExecutionResult,
    _DocumentMetadata,
    _ExecutableCode,
    _FunctionResponseParts,
    _FunctionResponseScheduling,
    _MediaProcessing,
    _PartMediaResolution,
    _SpreadsheetMetadata,
    _ToolCall,
    _ToolResponse,
    _Transcription,
    _trusted,
    _VideoContentLayers,
)


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
    if GENAI_MEDIA_METADATA:
        content_layers: _VideoContentLayers = None


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
    if GENAI_MEDIA_METADATA:
        document_metadata: _DocumentMetadata = None
        spreadsheet_metadata: _SpreadsheetMetadata = None
        audio_metadata: _AudioMetadata = None

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
