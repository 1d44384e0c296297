"""The shortcuts of the lean rebuild give what the general rules give: the tool calls matched by id without queues,
function calls made without validating again, outputs without a call word not walked, the span tree's pre-order made
on first use and its cycle cut skipped when no parent ranks after its child, and the feedback variable read at each
rebuild (``tests/reconstruct/test_rebuild_on_demand.py`` checks the whole rebuild on every trace)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_eval.model import genai as genai_types
from otel_eval.model import get_all_tool_calls
from otel_eval.reconstruct import Reads, _trajectory, rebuild_traces
from otel_eval.reconstruct._genai_calls import function_calls, may_hold_calls
from otel_eval.reconstruct._genai_messages import parse_messages, sound_message_list
from otel_eval.reconstruct._span_tree import SpanTree
from otel_eval.reconstruct.signals import DEFAULT_FEEDBACK_ATTRIBUTE, feedback_attribute
from otel_eval.traces import Span
from tests.reconstruct.recorded import demo_spans

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _span(span_id: str, parent: str | None, name: str, start: int, end: int, **attributes: Any) -> Span:
    return Span(TRACE, span_id, parent, name, start, end, attributes)


def _agent_trace(call_ids: list[str | None], run_ids: list[str | None], names: list[str]) -> list[Span]:
    """An agent whose model call makes calls with ``call_ids`` and whose tool spans carry ``run_ids``."""
    parts = [
        {"type": "tool_call", "id": call_id, "name": name, "arguments": {"city": name}}
        for call_id, name in zip(call_ids, names, strict=True)
    ]
    spans = [
        _span("a" * 16, None, "invoke_agent travel", 0, 100, **{"gen_ai.operation.name": "invoke_agent"}),
        _span(
            "b" * 16,
            "a" * 16,
            "chat m",
            1,
            10,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
            },
        ),
    ]
    for index, (run_id, name) in enumerate(zip(run_ids, names, strict=True)):
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        if run_id is not None:
            attributes["gen_ai.tool.call.id"] = run_id
        attributes["gen_ai.tool.call.result"] = json.dumps({"ok": index})
        spans.append(_span(f"{index + 1:016x}", "a" * 16, f"execute_tool {name}", 20 + index, 30 + index, **attributes))
    return spans


@pytest.mark.parametrize(
    ("call_ids", "run_ids", "names"),
    [
        (["c1", "c2"], ["c1", "c2"], ["x", "y"]),  # ids pair one to one: the shortcut
        (["c2", "c1"], ["c1", "c2"], ["x", "y"]),  # the same, runs in another order
        (["c1", "c1"], ["c1", "c2"], ["x", "y"]),  # a call id twice
        (["c1", None], ["c1", None], ["x", "y"]),  # a call without an id
        (["c1", "c2"], ["c1", "c3"], ["x", "y"]),  # a run answering no call: a leftover
        (["c1", "c2"], ["c1", "c1"], ["x", "x"]),  # a run id twice
        (["c1", "c2"], [None, None], ["x", "y"]),  # runs without ids: matched by name
    ],
)
@pytest.mark.parametrize("reads", [Reads.TOOL_CALLS, Reads.TOOL_CALLS | Reads.TOOL_RESPONSES, Reads.ALL])
def test_tool_calls_matched_by_id_equal_the_general_matching(
    monkeypatch: pytest.MonkeyPatch,
    call_ids: list[str | None],
    run_ids: list[str | None],
    names: list[str],
    reads: Reads,
) -> None:
    spans = _agent_trace(call_ids, run_ids, names)
    lean = rebuild_traces(spans, reads=reads)
    with monkeypatch.context() as patched:
        patched.setattr(_trajectory, "_steps_by_id", lambda draft, sent_back: None)
        general = rebuild_traces(spans, reads=reads)
    data = lean[0].invocations[0].invocation.intermediate_data
    assert data is not None and get_all_tool_calls(data)
    assert data == general[0].invocations[0].invocation.intermediate_data
    assert lean[0].invocations[0].model_dump() == general[0].invocations[0].model_dump()


def test_function_calls_made_without_validating_equal_validated_ones() -> None:
    messages = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": '{"a": [1]}'}]},
        {"role": "assistant", "tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": {"b": {"c": 2}}}}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "h"}]},
    ]
    calls = function_calls([parse_messages(json.dumps(messages), [], "out")], [])
    expected = [
        genai_types.FunctionCall(id="c1", name="f", args={"a": [1]}),
        genai_types.FunctionCall(id="c2", name="g", args={"b": {"c": 2}}),
        genai_types.FunctionCall(id=None, name="h", args={}),
    ]
    assert calls == expected
    assert [c.model_fields_set for c in calls] == [c.model_fields_set for c in expected]
    assert [repr(c) for c in calls] == [repr(c) for c in expected]
    assert [c.model_dump_json() for c in calls] == [c.model_dump_json() for c in expected]


def test_python_literal_arguments_with_keys_that_are_not_strings_are_still_validated() -> None:
    messages = [{"role": "assistant", "parts": [{"type": "tool_call", "name": "f", "arguments": "{1: 'x'}"}]}]
    with pytest.raises(ValueError, match="args"):  # pydantic's ValidationError, as before
        function_calls([parse_messages(messages, [], "out")], [])


@pytest.mark.parametrize(
    "output",
    [
        [{"role": "assistant", "parts": [{"type": "text", "content": "sunny"}]}],
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}}]}],
        [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f"}}]}],
        [{"role": "assistant", "parts": [{"type": "text", "content": "ResponseFunctionToolCall(name='f', id='c')"}]}],
    ],
)
def test_may_hold_calls_is_false_only_for_outputs_without_calls(output: list[dict[str, Any]]) -> None:
    raw = json.dumps(output)
    calls = function_calls([parse_messages(raw, [], "out")], [])
    assert may_hold_calls(raw) or not calls
    # JSON may spell a call word with escapes: such a text is always walked.
    escaped = raw.replace("_", "\\u005f").replace("(", "\\u0028")
    assert json.loads(escaped) == output
    assert may_hold_calls(escaped) or not calls
    assert function_calls([parse_messages(escaped, [], "out")], []) == calls


def test_an_output_that_is_not_json_warns_alike_when_no_call_can_be_in_it() -> None:
    spans = _agent_trace(["c1"], ["c1"], ["x"])
    spans.append(
        _span(
            "c" * 16,
            "a" * 16,
            "chat m",
            40,
            50,
            **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"role": "assistant", "parts": ['},
        )
    )
    lean = rebuild_traces(spans, reads=Reads.TOOL_CALLS)[0].invocations[0]
    full = rebuild_traces(spans)[0].invocations[0]
    not_json = [w for w in full.warnings if "not valid JSON" in w]
    assert not_json and [w for w in lean.warnings if "not valid JSON" in w] == not_json


@pytest.mark.parametrize(
    "output",
    [
        '[{"role": "assistant", "parts": [',  # not JSON
        '{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}',  # one message, not a list
        '{"messages": [{"role": "assistant", "parts": []}]}',  # a wrapper holding the list
        '"just text"',  # not a list of messages
        '[{"role": "assistant", "parts": []}, 3, "x", null]',  # items that are not objects
        "[" * 300 + "]" * 300,  # nested too deeply for pydantic-core: read by json, items not objects
        '[{"role": "assistant", "parts": [{"type": "text", "content": "fine"}]}]',  # sound
        "[]",
    ],
)
def test_an_output_without_a_call_word_reports_the_problems_its_full_parse_reports(output: str) -> None:
    """The tool-count rebuild checks such an output with :func:`sound_message_list` and parses it again only when it
    has problems: the same warnings as the full rebuild, and as parsing it whole."""
    assert not may_hold_calls(output)
    problems: list[str] = []
    parse_messages(output, problems, "out")
    assert sound_message_list(output) == (not problems)
    spans = _agent_trace(["c1"], ["c1"], ["x"])
    spans.append(
        _span(
            "c" * 16, "a" * 16, "chat m", 40, 50, **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}
        )
    )
    lean = rebuild_traces(spans, reads=Reads.TOOL_CALLS)[0].invocations[0]
    full = rebuild_traces(spans)[0].invocations[0]
    named = [w for w in full.warnings if f"span {'c' * 16}" in w]
    assert [w for w in lean.warnings if f"span {'c' * 16}" in w] == named
    assert bool(named) == bool(problems)


@pytest.mark.parametrize(
    "links",
    [
        {"a": None, "b": "a", "c": "b"},  # parents first
        {"a": "b", "b": None, "c": "a"},  # a parent ranked after its child, no cycle
        {"a": "c", "b": "a", "c": "b"},  # a cycle
        {"a": "a", "b": "a", "c": "zz"},  # self-parent, lost parent
    ],
)
def test_the_span_tree_is_the_same_whether_or_not_a_cycle_cut_is_needed(links: dict[str, str | None]) -> None:
    spans = [
        _span(name * 16, None if parent is None else parent * 16, name, index, 10, x=1)
        for index, (name, parent) in enumerate(links.items())
    ]
    tree = SpanTree(spans)
    order = [s.span_id for s in tree.order]
    assert sorted(order) == sorted(s.span_id for s in spans)  # every span reachable once
    for span in tree.order:
        parent = tree.parent(span)
        assert parent is None or order.index(parent.span_id) < order.index(span.span_id)
    cycle = links == {"a": "c", "b": "a", "c": "b"}
    assert any("cycle" in p for p in tree.problems) == cycle
    assert tree.subtree(tree.roots[0])[0] is tree.roots[0]


def test_tops_of_one_agent_is_that_agent_in_the_tree() -> None:
    tree = SpanTree([_span("a" * 16, None, "a", 0, 9), _span("b" * 16, "a" * 16, "b", 1, 2)])
    assert [s.span_id for s in tree.tops_of({"b" * 16})] == ["b" * 16]
    assert tree.tops_of({"f" * 16}) == []
    assert [s.span_id for s in tree.tops_of({"a" * 16, "b" * 16})] == ["a" * 16]


def test_the_feedback_variable_is_read_at_each_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE", raising=False)
    assert feedback_attribute() == DEFAULT_FEEDBACK_ATTRIBUTE
    monkeypatch.setenv("OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE", " app.rätïng ")
    assert feedback_attribute() == "app.rätïng"
    monkeypatch.setenv("OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE", "  ")
    assert feedback_attribute() == DEFAULT_FEEDBACK_ATTRIBUTE


def test_the_demo_tool_count_rebuild_is_the_full_rebuilds_tool_calls() -> None:
    for _key, spans in demo_spans():
        lean = rebuild_traces(spans, reads=Reads.TOOL_CALLS)
        full = rebuild_traces(spans)
        assert [get_all_tool_calls(i.invocation.intermediate_data) for t in lean for i in t.invocations] == [
            get_all_tool_calls(i.invocation.intermediate_data) for t in full for i in t.invocations
        ]


def test_a_call_spelled_with_escapes_is_found_by_the_tool_count_rebuild() -> None:
    spans = _agent_trace(["c1"], ["c1"], ["x"])
    output = spans[1].attributes["gen_ai.output.messages"]
    escaped = output.replace("tool_call", "tool\\u005fcall")
    assert escaped != output and json.loads(escaped) == json.loads(output)
    spans[1].attributes = {**spans[1].attributes, "gen_ai.output.messages": escaped}
    spans[2].attributes = {**spans[2].attributes, "gen_ai.tool.call.id": "other"}  # no run answers it: no leftover
    lean = get_all_tool_calls(
        rebuild_traces(spans, reads=Reads.TOOL_CALLS)[0].invocations[0].invocation.intermediate_data
    )
    full = get_all_tool_calls(rebuild_traces(spans)[0].invocations[0].invocation.intermediate_data)
    assert [c.id for c in lean] == ["c1", "other"]
    assert lean == full
