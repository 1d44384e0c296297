"""Tools the model may use: function declarations and their schemas (stand-ins for ``google.genai.types``)."""

from __future__ import annotations

from typing import Any

from ._base import (
    BaseModel,
    Behavior,
    Type,
    _ComputerUse,
    _EnterpriseWebSearch,
    _FileSearch,
    _GoogleMaps,
    _GoogleSearch,
    _GoogleSearchRetrieval,
    _McpServers,
    _Retrieval,
    _ToolCodeExecution,
    _ToolExaAiSearch,
    _ToolParallelAiSearch,
    _UrlContext,
)


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
