"""Response metadata: grounding and token usage (stand-ins for ``google.genai.types``)."""

from __future__ import annotations

import pydantic

from ._base import (
    BaseModel,
    MediaModality,
    TrafficType,
    _GroundingChunks,
    _GroundingSupports,
    _RetrievalMetadata,
    _SearchEntryPoint,
    _SourceFlaggingUris,
)


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
