"""The one rule for recorded tool arguments and results, and that every convention applies it (ADK included)."""

from __future__ import annotations

from typing import Any

import pytest

from otel_eval import semconv
from otel_eval.reconstruct._adk_spans import read_tool_run
from otel_eval.reconstruct._genai_messages import content_from_message
from otel_eval.reconstruct._values import MAX_LITERAL_CHARS, tool_call_args, tool_response_payload
from otel_eval.traces.span import Span


@pytest.mark.parametrize(
    ("recorded", "args"),
    [
        (None, {}),
        ("", {}),
        ("  ", {}),
        ("null", {}),
        ({"city": "Paris"}, {"city": "Paris"}),
        ('{"city": "Paris", "days": 2}', {"city": "Paris", "days": 2}),
        ("{'city': 'Alaska'}", {"city": "Alaska"}),  # Python-literal dict (LangChain exporters)
        ("[1, 2]", {"input": [1, 2]}),
        ("7", {"input": 7}),
        ('"Paris"', {"input": "Paris"}),
        ("ls -la", {"input": "ls -la"}),
        (3.5, {"input": 3.5}),
        (["a", "b"], {"input": ["a", "b"]}),
        ("{city: Paris", {"input": "{city: Paris"}),
    ],
)
def test_arguments_keep_the_data(recorded: Any, args: dict[str, Any]) -> None:
    assert tool_call_args(recorded, [], "here") == args


@pytest.mark.parametrize(
    ("recorded", "response"),
    [
        ({"temp": 21}, {"temp": 21}),
        ('{"temp": 21}', {"temp": 21}),
        ("[1, 2]", {"result": [1, 2]}),
        (["not", "an", "object"], {"result": ["not", "an", "object"]}),
        ("294.0", {"result": "294.0"}),  # the trace cannot tell a number from its text
        ("rain", {"result": "rain"}),
        (None, {"result": None}),
        ([{"type": "text", "text": "a"}, {"text": "b"}], {"result": "a\nb"}),
        ('[{"type": "text", "text": "{\\"k\\": 1}"}]', {"k": 1}),
        ("{truncated", {"result": "{truncated"}),
    ],
)
def test_results_keep_the_data(recorded: Any, response: dict[str, Any]) -> None:
    assert tool_response_payload(recorded, [], "here") == response


def test_only_text_that_looks_like_broken_json_warns() -> None:
    warnings: list[str] = []
    tool_call_args("{city: Paris", warnings, "span a: args")
    tool_response_payload('{"items": [1, 2', warnings, "span a: result")
    assert warnings == [
        "span a: args: tool arguments are not valid JSON; kept as text",
        "span a: result: tool result is not valid JSON; kept as text",
    ]
    quiet: list[str] = []
    for text in ("ls -la", "[INFO] done", "[1] first result", "294.0"):
        tool_call_args(text, quiet, "x")
        tool_response_payload(text, quiet, "x")
    assert quiet == []


def _python_literal_of(size: int) -> str:
    """A Python-literal dict (single quotes: not JSON) of exactly ``size`` characters."""
    head = "{'city': '"
    return head + "x" * (size - len(head) - 2) + "'}"


def test_python_literals_are_read_only_up_to_the_cap() -> None:
    at_cap = _python_literal_of(MAX_LITERAL_CHARS)
    assert len(at_cap) == MAX_LITERAL_CHARS == 64 * 1024
    warnings: list[str] = []
    assert tool_call_args(at_cap, warnings, "a") == {"city": "x" * (MAX_LITERAL_CHARS - 12)}
    assert tool_response_payload(at_cap, warnings, "r") == {"city": "x" * (MAX_LITERAL_CHARS - 12)}
    assert warnings == []
    over = _python_literal_of(MAX_LITERAL_CHARS + 1)
    assert tool_call_args(over, warnings, "a") == {"input": over}  # kept as recorded text, not evaluated
    assert tool_response_payload(over, warnings, "r") == {"result": over}
    too_long = f"{MAX_LITERAL_CHARS + 1} characters, too long to read as a Python literal (over {MAX_LITERAL_CHARS})"
    assert warnings == [
        f"a: {too_long}",
        "a: tool arguments are not valid JSON; kept as text",
        f"r: {too_long}",
        "r: tool result is not valid JSON; kept as text",
    ]


@pytest.mark.timeout(60)
def test_deeply_nested_literal_text_is_not_parsed() -> None:
    """800 KB of nested brackets, under the former 1 MB bound: ``ast.literal_eval`` would build a syntax tree for all
    of it before failing; now the text is kept as recorded and said to be too long, without being parsed."""
    nested = "{'a': " + "[" * 400_000 + "]" * 400_000 + "}"
    warnings: list[str] = []
    assert tool_response_payload(nested, warnings, "r") == {"result": nested}
    assert warnings[0].startswith(f"r: {len(nested)} characters, too long to read as a Python literal")


def _tool_span(**attributes: Any) -> Span:
    return Span(
        "ab" * 16, "0000000000000004", None, "execute_tool t", 1, 2, {semconv.GEN_AI_TOOL_NAME: "t", **attributes}
    )


@pytest.mark.parametrize(
    ("args_key", "result_key"),
    [
        (semconv.ADK_TOOL_CALL_ARGS, semconv.ADK_TOOL_RESPONSE),
        (semconv.GEN_AI_TOOL_CALL_ARGUMENTS, semconv.GEN_AI_TOOL_CALL_RESULT),
    ],
)
def test_both_adk_schemas_apply_the_rule(args_key: str, result_key: str) -> None:
    run = read_tool_run(_tool_span(**{args_key: "[1, 2]", result_key: '"done"'}), args_key, result_key, [])
    assert (run.args, run.response) == ({"input": [1, 2]}, {"result": '"done"'})
    placeholder = _tool_span(**{args_key: "{}", result_key: '{"result": "<not specified>"}'})
    run = read_tool_run(placeholder, args_key, result_key, [])
    assert (run.args, run.response) == ({}, None)  # the tool produced no function response


def test_tool_calls_inside_messages_apply_the_rule() -> None:
    warnings: list[str] = []
    content = content_from_message(
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "t", "arguments": "[1, 2]"},
                {"type": "tool_call", "id": "c2", "name": "t", "arguments": "{'city': 'Oslo'}"},
                {"type": "tool_call_response", "id": "c1", "response": [{"type": "text", "text": "ok"}]},
            ],
        },
        warnings,
    )
    assert content is not None and content.parts is not None
    calls = [p.function_call for p in content.parts if p.function_call]
    assert [c.args for c in calls] == [{"input": [1, 2]}, {"city": "Oslo"}]
    response = content.parts[2].function_response
    assert response is not None and response.response == {"result": "ok"}
    assert warnings == []
