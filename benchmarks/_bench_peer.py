"""One fresh-process run of ``bench_processor``'s workload on the Splunk peer's side; prints one JSON line.

Runs in the peer's own virtualenv (``splunk-otel-util-genai-evals`` 0.1.8 and the OpenTelemetry SDK; no otel-eval),
created by ``bench_processor`` on first use. The same 5-span invocation as ours (``invoke_agent``, ``chat`` asking
for two tools, two ``execute_tool``, ``chat`` answering; the same messages, the tools really run), made the way the
peer is driven: through its ``TelemetryHandler`` (agent, LLM and tool-call invocations), on the global SDK providers
with the same counting exporters (:mod:`benchmarks._counting`). The peer evaluates in-process, on its completion
callback: ``--setup on`` configures one LLM-free metric, its built-in ``length`` evaluator on the LLM invocations
(the tool-calling one is skipped by the peer's own policy, so one result per invocation), reported as
``relevance``, one of the five names its score histogram records (others get an event but no histogram point);
``--setup off`` the same workload with evaluations off (``none``), the baseline. Queue as large as ours.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._counting import COUNTS_DIR, CountingProviders, collect, drive, settle

WARM_UP = 50
EVALUATORS = "length(LLMInvocation(relevance))"
USER_TEXT = "I'm flying to Rome with 200 EUR. What's the weather there and how much is that in dollars?"
ANSWER = "Rome is sunny at 24°C, and 200 EUR is 218 USD."
STEPS = (("get_weather", {"city": "Rome"}), ("convert_currency", {"amount": 200, "source": "EUR", "target": "USD"}))


def _tool(name: str, arguments: dict[str, object]) -> dict[str, object]:
    """The travel agent's two tools (small lookup tables, as in ``otel_eval.demo.workload``)."""
    if name == "get_weather":
        return {"city": arguments["city"], "condition": "sunny", "temperature_c": 24}
    return {"amount": round(float(arguments["amount"]) * 1.09, 2), "currency": str(arguments["target"])}  # type: ignore[arg-type]


def peer_workload(setup: str) -> tuple[CountingProviders, Callable[[int], None], Callable[[], None]]:
    """The peer's side set up on the global providers (``setup`` ``on`` or ``off``): the counting providers, one
    invocation (``invoke(index)``) and a wait for every offered invocation's evaluation (the manager's queue joined).
    Also run by ``benchmarks.instructions --setup peer-on|peer-off`` (under callgrind, in this virtualenv)."""
    os.environ["OTEL_INSTRUMENTATION_GENAI_EVALS_EVALUATORS"] = EVALUATORS if setup == "on" else "none"
    os.environ["OTEL_INSTRUMENTATION_GENAI_EVALS_QUEUE_SIZE"] = "1000000"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"  # messages on the spans, as ours
    providers = CountingProviders()
    from opentelemetry.util.genai.handler import get_telemetry_handler
    from opentelemetry.util.genai.types import (
        AgentInvocation,
        InputMessage,
        LLMInvocation,
        OutputMessage,
        Text,
        ToolCall,
        ToolCallResponse,
    )

    handler = get_telemetry_handler()

    def invoke(_: int) -> None:
        user = InputMessage(role="user", parts=[Text(content=USER_TEXT)])
        agent = AgentInvocation(name="travel_assistant", model="scripted-flash-1", input_messages=[user])
        agent.provider = "scripted"
        handler.start_agent(agent)
        first = LLMInvocation(request_model="scripted-flash-1", input_messages=[user], provider="scripted")
        handler.start_llm(first)
        calls = [ToolCall(name=name, arguments=arguments, id=f"call_{i}") for i, (name, arguments) in enumerate(STEPS)]
        first.output_messages = [OutputMessage(role="assistant", parts=list(calls), finish_reason="tool_calls")]
        first.input_tokens, first.output_tokens = 210, 48
        handler.stop_llm(first)
        responses = []
        for index, (name, arguments) in enumerate(STEPS):
            tool = ToolCall(name=name, arguments=arguments, id=f"call_{index}", tool_type="function")
            handler.start_tool_call(tool)
            tool.tool_result = _tool(name, arguments)
            handler.stop_tool_call(tool)
            responses.append(ToolCallResponse(response=tool.tool_result, id=f"call_{index}"))
        history = [user, InputMessage(role="assistant", parts=list(calls)), InputMessage(role="tool", parts=responses)]
        final = LLMInvocation(request_model="scripted-flash-1", input_messages=history, provider="scripted")
        handler.start_llm(final)
        final.output_messages = [OutputMessage(role="assistant", parts=[Text(content=ANSWER)], finish_reason="stop")]
        final.input_tokens, final.output_tokens = 210, 48
        handler.stop_llm(final)
        agent.output_messages = [OutputMessage(role="assistant", parts=[Text(content=ANSWER)], finish_reason="stop")]
        handler.stop_agent(agent)

    return providers, invoke, handler.wait_for_evaluations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup", choices=("on", "off"), required=True)
    parser.add_argument("--invocations", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=None)
    args = parser.parse_args()
    providers, invoke, wait_for_evaluations = peer_workload(args.setup)

    def flush() -> None:
        wait_for_evaluations()  # the manager's queue joined: every offered invocation evaluated
        providers.force_flush()

    drive(invoke, WARM_UP, args.rate)
    flush()
    settle()
    window_start_ns = time.time_ns()
    cpu_before, thread_before = time.process_time(), time.thread_time()
    started = time.perf_counter()
    drive(invoke, args.invocations, args.rate)
    thread_cpu = time.thread_time() - thread_before
    flush()
    cpu = time.process_time() - cpu_before
    wall = time.perf_counter() - started
    providers.shutdown()
    record = {
        "process_cpu": cpu,
        "thread_cpu": thread_cpu,
        "child_cpu": 0.0,
        "child_cpu_reaped_total": 0.0,
        "wall": wall,
        "window_start_ns": window_start_ns,
        "invocations": args.invocations,
        "warm_up": WARM_UP,
        "stats": {},
        "counts": collect(Path(os.environ[COUNTS_DIR])),
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
