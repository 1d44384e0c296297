"""Shared pydantic configuration for the ADK-compatible models."""

from __future__ import annotations

import pydantic
from pydantic import alias_generators


class EvalBaseModel(pydantic.BaseModel):
    """Base of the eval models: accepts snake_case and camelCase, rejects unknown keys (as ADK's ``EvalBaseModel``)."""

    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        extra="forbid",
        arbitrary_types_allowed=True,
        loc_by_alias=False,
    )
