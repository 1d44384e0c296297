"""OpenLLMetry reconstruction on hand-typed attributes recorded through the real OpenTelemetry SDK.

The attributes here are typed by the tests: the indexed ``gen_ai.prompt.<i>.*`` / ``gen_ai.completion.<i>.*`` and
``traceloop.entity.*`` shapes of older OpenLLMetry releases and of its plain-client instrumentations, which none of
the current framework instrumentations recorded in ``tests/data/frameworks`` emits (OpenLLMetry's LangChain and OpenAI
Agents instrumentations now write GenAI messages, read as ``genai``). What the current instrumentations really emit
is proven in ``test_frameworks.py``.
"""

from __future__ import annotations

from typing import Any

from otel_eval.model import TracedInvocation
from otel_eval.traces import Span
from tests.reconstruct.sdk_traces import TraceRecorder, as_json, rebuilt_invocations, trajectory


def invocations(spans: list[Span]) -> list[TracedInvocation]:
    return rebuilt_invocations(spans, "openllmetry")


def openai_chat(prompts: list[dict[str, Any]], completion: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """``openai.chat`` attributes as opentelemetry-instrumentation-openai writes them."""
    attributes: dict[str, Any] = {"gen_ai.system": "openai", "llm.request.type": "chat", **extra}
    attributes["gen_ai.request.model"] = "gpt-4.1-mini"
    for index, prompt in enumerate(prompts):
        for key, value in prompt.items():
            attributes[f"gen_ai.prompt.{index}.{key}"] = value
    for key, value in completion.items():
        attributes[f"gen_ai.completion.0.{key}"] = value
    return attributes


SYSTEM = {"role": "system", "content": "You manage Helm."}
USER = {"role": "user", "content": "list all Helm releases"}
CALL = {
    "role": "assistant",
    "tool_calls.0.id": "call_P09",
    "tool_calls.0.name": "helm_list_releases",
    "tool_calls.0.arguments": as_json({"all_namespaces": "true"}),
}


def test_bare_openai_chat_tool_loop_is_one_turn() -> None:
    recorder = TraceRecorder()
    with recorder.span("request", {}, new_trace=True):
        first = openai_chat(
            [SYSTEM, USER],
            {"role": "assistant", "finish_reason": "tool_calls", **{k: v for k, v in CALL.items() if k != "role"}},
            **{"gen_ai.usage.prompt_tokens": 100, "gen_ai.usage.completion_tokens": 10},
            **{"llm.request.functions.0.name": "helm_list_releases", "llm.request.functions.0.parameters": "{}"},
        )
        with recorder.span("openai.chat", first):
            pass
        tool_message = {"role": "tool", "tool_call_id": "call_P09", "content": as_json([{"name": "web", "ns": "a"}])}
        second = openai_chat(
            [SYSTEM, USER, CALL, tool_message],
            {"role": "assistant", "content": "There is one release: web.", "finish_reason": "stop"},
            **{"gen_ai.usage.prompt_tokens": 150, "gen_ai.usage.completion_tokens": 12},
        )
        with recorder.span("openai.chat", second):
            pass
    (inv,) = invocations(recorder.spans())
    assert trajectory(inv) == {
        "user": "list all Helm releases",
        "calls": [("helm_list_releases", {"all_namespaces": "true"}, "call_P09")],
        "responses": [("helm_list_releases", {"result": [{"name": "web", "ns": "a"}]}, "call_P09")],
        "intermediate": [],
        "final": "There is one release: web.",
    }
    assert (inv.token_usage.input_tokens, inv.token_usage.output_tokens) == (250, 22)
    assert inv.model == "gpt-4.1-mini" and inv.model_call_count == 2
    app = inv.invocation.app_details
    assert app is not None
    details = next(iter(app.agent_details.values()))
    assert details.instructions == "You manage Helm."
    assert details.tool_declarations[0]["function_declarations"][0]["name"] == "helm_list_releases"


def test_second_turn_resending_history_is_its_own_invocation() -> None:
    recorder = TraceRecorder()
    answer = {"role": "assistant", "content": "Hello!"}
    with recorder.span("request", {}, new_trace=True):
        with recorder.span("openai.chat", openai_chat([{"role": "user", "content": "Hi"}], answer)):
            pass
        follow_up = [{"role": "user", "content": "Hi"}, answer, {"role": "user", "content": "What can you do?"}]
        with recorder.span("openai.chat", openai_chat(follow_up, {"role": "assistant", "content": "Helm things."})):
            pass
    first, second = invocations(recorder.spans())
    assert (trajectory(first)["user"], trajectory(first)["final"]) == ("Hi", "Hello!")
    assert (trajectory(second)["user"], trajectory(second)["final"]) == ("What can you do?", "Helm things.")


def test_workflow_with_traceloop_entities_and_a_tool_span() -> None:
    recorder = TraceRecorder()
    workflow = {
        "traceloop.span.kind": "workflow",
        "traceloop.workflow.name": "support",
        "traceloop.entity.input": as_json({"inputs": {"question": "Is web healthy?"}}),
        "traceloop.entity.output": as_json({"outputs": "web is healthy."}),
        "traceloop.association.properties.session_id": "sess-9",
    }
    with recorder.span("support.workflow", workflow, new_trace=True):
        call = {
            "role": "assistant",
            "tool_calls.0.id": "t1",
            "tool_calls.0.name": "check",
            "tool_calls.0.arguments": as_json({"name": "web"}),
        }
        with recorder.span("openai.chat", openai_chat([{"role": "user", "content": "Is web healthy?"}], call)):
            pass
        tool = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "check",
            "traceloop.entity.input": as_json({"args": [], "kwargs": {"name": "web"}}),
            "traceloop.entity.output": as_json({"status": "ok"}),
        }
        with recorder.span("check.tool", tool):
            pass
        with recorder.span("openai.chat", openai_chat([], {"role": "assistant", "content": "web is healthy."})):
            pass
    (inv,) = invocations(recorder.spans())
    assert trajectory(inv) == {
        "user": "Is web healthy?",
        "calls": [("check", {"name": "web"}, "t1")],
        "responses": [("check", {"status": "ok"}, "t1")],
        "intermediate": [],
        "final": "web is healthy.",
    }
    assert inv.session_id == "sess-9"


def test_legacy_function_call_and_malformed_arguments() -> None:
    recorder = TraceRecorder()
    completion = {"role": "assistant", "function_call.name": "lookup", "function_call.arguments": "{broken"}
    with recorder.span("openai.chat", openai_chat([{"role": "user", "content": "find x"}], completion), new_trace=True):
        pass
    (inv,) = invocations(recorder.spans())
    assert trajectory(inv)["calls"] == [("lookup", {"input": "{broken"}, None)]
    assert any("tool arguments are not valid JSON" in w for w in inv.warnings)
