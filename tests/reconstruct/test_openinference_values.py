"""The rules of ``_openinference_values`` and the LlamaIndex ``ToolOutput`` envelope on the variants the recorded
frameworks do not emit (several kickoff inputs, a repr that is prose, lookalike objects); the recorded shapes are
proven in ``test_frameworks.py``."""

from __future__ import annotations

import json

from otel_eval.reconstruct._openinference_values import (
    crew_output_text,
    is_object_repr,
    kickoff_inputs_text,
    output_tool_calls,
    task_messages,
    value_text,
)
from otel_eval.reconstruct._values import tool_response_payload

TASKS = json.dumps([{"description": "Answer {question} for {user}", "expected_output": "A short answer."}])


def test_kickoff_inputs_are_the_ones_the_tasks_use_whatever_their_key() -> None:
    inputs = json.dumps({"question": "Weather in Paris?", "user": "Ada", "unused": "x"})
    assert kickoff_inputs_text({"crew_tasks": TASKS}, inputs) == "question: Weather in Paris?\nuser: Ada"
    one = json.dumps([{"description": "{ask}"}])
    assert kickoff_inputs_text({"crew_tasks": one}, json.dumps({"ask": "Hi", "other": "y"})) == "Hi"
    # crew_inputs wins over input.value; a task naming no input uses them all
    assert kickoff_inputs_text({"crew_inputs": json.dumps({"q": "Rome?"})}, "ignored") == "Rome?"


def test_a_span_that_is_no_kickoff_or_has_no_inputs_gives_no_text() -> None:
    assert kickoff_inputs_text({}, json.dumps({"request": "Hi"})) is None
    assert kickoff_inputs_text({"crew_tasks": TASKS}, None) is None
    assert kickoff_inputs_text({"crew_tasks": TASKS}, json.dumps({"question": "  "})) is None


def test_a_kickoff_without_inputs_is_its_first_task_unless_that_is_a_template() -> None:
    tasks = json.dumps([{"description": "Weather in Rome?"}, {"description": "Then the time."}])
    assert kickoff_inputs_text({"crew_tasks": tasks, "crew_inputs": ""}, None) == "Weather in Rome?"
    assert kickoff_inputs_text({"crew_tasks": TASKS, "crew_inputs": ""}, None) is None


def test_an_object_repr_is_no_text_but_prose_with_brackets_is() -> None:
    repr_text = "StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>..."
    assert is_object_repr(repr_text)
    assert value_text(repr_text, role="model", keys=("output",)) is None
    assert not is_object_repr("Paris (France) is cloudy.")
    assert value_text("Paris (France) is cloudy.", role="model", keys=("output",)) == "Paris (France) is cloudy."
    assert value_text("Result(x) is fine", role="model", keys=()) == "Result(x) is fine"


def test_raw_is_read_only_from_crewai_outputs() -> None:
    assert crew_output_text({"raw": "Done.", "tasks_output": []}) == "Done."
    assert crew_output_text({"raw": "Done.", "agent": "a", "expected_output": "e"}) == "Done."
    assert crew_output_text({"raw": "bytes"}) is None
    assert value_text(json.dumps({"raw": "bytes", "output": "Kept."}), role="model", keys=("output",)) == "Kept."


def test_tool_calls_in_output_value_only_when_every_item_is_a_call() -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    warnings: list[str] = []
    content = output_tool_calls(json.dumps(calls), warnings, "span x")
    assert content is not None and content.role == "model"
    (part,) = content.parts or []
    assert part.function_call is not None
    assert (part.function_call.name, part.function_call.args, part.function_call.id) == ("f", {"a": 1}, "c1")
    assert output_tool_calls(json.dumps([*calls, {"text": "hi"}]), warnings, "span x") is None
    assert output_tool_calls("assistant: hi", warnings, "span x") is None
    assert warnings == []


def test_task_messages_only_from_a_task_output_of_chat_messages() -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    task_output = {"raw": "Hello.", "agent": "a", "expected_output": "e", "output_format": "raw"}
    warnings: list[str] = []
    contents = task_messages(json.dumps(task_output | {"messages": messages}), warnings, "span x")
    assert [(c.role, (c.parts or [])[0].text) for c in contents] == [("user", "Hi"), ("model", "Hello.")]
    assert task_messages(json.dumps({"messages": messages}), warnings, "span x") == []
    odd = task_output | {"messages": [*messages, {"type": "human", "data": {}}]}
    assert task_messages(json.dumps(odd), warnings, "span x") == []
    assert warnings == []


def test_llama_index_tool_output_is_its_raw_output() -> None:
    envelope = {
        "blocks": [{"block_type": "text", "text": "21:05"}],
        "tool_name": "get_time",
        "raw_input": {"args": [], "kwargs": {"city": "Paris"}},
        "raw_output": "21:05",
        "is_error": False,
    }
    assert tool_response_payload(envelope) == {"result": "21:05"}
    as_dict = envelope | {"raw_output": {"city": "Paris"}}
    assert tool_response_payload(json.dumps(as_dict)) == {"city": "Paris"}
    lookalike = {"tool_name": "get_time", "raw_output": "21:05", "extra": 1}
    assert tool_response_payload(lookalike) == lookalike
