"""Lightweight, wire-identical stand-ins for the ``google.genai.types`` models otel-eval's data model uses.

Importing ``google.genai.types`` costs about a second (it imports the whole client, aiohttp and httpx, and defines
several hundred models). The offline path only needs a handful of them, so this module re-declares those with the
same class names, field names, field order, field types and model configuration as the installed google-genai, which
makes validation and serialisation identical (proved by ``tests/model/test_genai_models.py`` on google-genai 2.34, which
google-adk 2.13 pins, and by ``tests/deploy/test_default_install.py`` on 3.6.1, which a default install resolves): the
fields google-genai 3.4 added are declared only where it is installed (``_base.GENAI_MEDIA_METADATA``)::

    from otel_eval.model import genai as genai_types  # instead of: from google.genai import types as genai_types

Rarely used nested fields (code execution, server-side tool calls, built-in tools, grounding chunks, ...) are typed
``Any`` here: when such a field is present and not None it is validated by the real google-genai type, imported on
first use, and holds the validated genai object, so it accepts, compares and dumps exactly as in google-genai.

Differences from google-genai: an object of this module never equals the google-genai object with the same content
(pydantic compares classes), the enums here are their own ``str`` enums (their members equal genai's members and
strings), and genai-only helpers (``FunctionDeclaration.from_callable``, ``Schema.json_schema``, pretty ``repr``, the
mismatched-model warning log) are absent.

The models are split by concept: ``_base`` (the base model, enums, fields validated by google-genai), ``_contents``
(``Content``, ``Part`` and what parts hold), ``_tools`` (``Tool``, ``FunctionDeclaration``, ``Schema``) and
``_metadata`` (grounding and usage metadata); import them from here (the modules import one another relatively,
so the package loads on its own, without ``otel_eval``).
"""

from __future__ import annotations

from ._base import (
    BaseModel,
    Behavior,
    CaseInSensitiveEnum,
    GenerateContentConfig,
    MediaModality,
    TrafficType,
    Type,
)
from ._contents import (
    Blob,
    Content,
    FileData,
    FunctionCall,
    FunctionResponse,
    Part,
    PartialArg,
    SpeechMetadata,
    VideoMetadata,
)
from ._metadata import GenerateContentResponseUsageMetadata, GroundingMetadata, ModalityTokenCount
from ._tools import FunctionDeclaration, Schema, Tool

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
