"""Generated invocations for the efficiency-metric parity tests (ADK invocation events with usage and timing)."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.metrics._factories import Json, call, invocation

counts = st.none() | st.integers(0, 5000)


@st.composite
def usage_metadata(draw: st.DrawFn) -> Json:
    fields = {
        "prompt_token_count": draw(counts),
        "tool_use_prompt_token_count": draw(counts),
        "candidates_token_count": draw(counts),
        "thoughts_token_count": draw(counts),
        "cached_content_token_count": draw(counts),
        "total_token_count": draw(counts),
    }
    return {key: value for key, value in fields.items() if value is not None}


@st.composite
def event(draw: st.DrawFn) -> Json:
    data: Json = {"author": draw(st.sampled_from(["agent", "user", "tool"]))}
    if draw(st.booleans()):
        data["content"] = {"role": "model", "parts": [{"function_call": call(draw(st.sampled_from(["a", "b"])), {})}]}
    if draw(st.booleans()):
        data["usage_metadata"] = draw(usage_metadata())
    if draw(st.booleans()):
        data["model_version"] = "gemini-2.5-flash"
    return data


seconds = st.none() | st.floats(0, 100, allow_nan=False).map(lambda value: round(value, 4))


@st.composite
def adk_invocation(draw: st.DrawFn) -> Json:
    """An invocation with event-based or tool_uses-based intermediate data and optional ADK timings."""
    if draw(st.booleans()):
        data = invocation([call("a", {})] * draw(st.integers(0, 3)))
        if draw(st.booleans()):
            data["intermediate_data"] = None
    else:
        data = invocation()
        data["intermediate_data"] = {"invocation_events": draw(st.lists(event(), max_size=5))}
    for key in ("duration", "model_duration", "tool_duration"):
        value = draw(seconds)
        if value is not None:
            data[key] = value
    return data


conversations = st.lists(adk_invocation(), max_size=4)
