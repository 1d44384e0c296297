"""Real google-adk agents driven by a scripted model, for tests that need a real ADK workload and its spans.

Everything here is real ADK (``LlmAgent``, ``Runner``, ``InMemorySessionService``, function tools, ``AgentTool``,
sub-agent transfer) except the model, a :class:`ScriptedLlm` that returns predetermined ``LlmResponse``s instantly.
ADK's spans go to the global OpenTelemetry tracer provider (``google.adk.telemetry.tracing.tracer`` is a proxy
tracer), so :func:`span_exporter` installs one in-memory exporter for the whole test session.

Typical use::

    exporter = span_exporter()
    with adk_telemetry(schema=2, capture_content=True):
        run = await run_turns(single_tool_scenario())
    spans = run.spans                 # otel_eval Span objects of this run only
    events = run.session_events       # ADK session events, for EvaluationGenerator

Scenario builders return a fresh :class:`Scenario` (root agent + user turns) on every call: ``single_tool_scenario``,
``sequential_tools_scenario``, ``parallel_tools_scenario``, ``no_tool_scenario``, ``transfer_scenario``,
``agent_tool_scenario``, ``tool_error_scenario``, ``tool_error_handled_scenario``, ``multi_turn_scenario``, ``sequential_agents_scenario``,
``parallel_agents_scenario``, ``skip_summarization_scenario``, ``exit_loop_scenario``; :data:`SCENARIOS` maps names to
them. Build your own with :func:`reply` / :func:`call` responses and ``ScriptedLlm(responses=[...])``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.loop_agent import LoopAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.agents.sequential_agent import SequentialAgent
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.exit_loop_tool import exit_loop
from google.adk.utils.streaming_utils import StreamingResponseAggregator
from google.genai import types as genai_types
from opentelemetry import _logs, trace
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import Field, PrivateAttr

from otel_eval.traces import Span, spans_from_readable

SCRIPTED_MODEL = "scripted-model-1"
APP_NAME = "otel_eval_tests"
USER_ID = "test-user"

SCHEMA_ENV = "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"
GENAI_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ADK_CAPTURE_ENV = "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"


# --- the scripted model ---------------------------------------------------------------------------------------------


class ScriptExhaustedError(RuntimeError):
    """The agent asked the scripted model for more responses than the script holds."""


class ScriptedLlm(BaseLlm):
    """A model that replays ``responses`` in order, one per call, and records the requests it got."""

    model: str = SCRIPTED_MODEL
    responses: list[LlmResponse] = Field(default_factory=list)
    _cursor: int = PrivateAttr(default=0)
    _requests: list[LlmRequest] = PrivateAttr(default_factory=list)

    @property
    def requests(self) -> list[LlmRequest]:
        """The requests received so far."""
        return self._requests

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Yields the next scripted response; when streaming, as word chunks through ADK's own aggregator (the way
        ADK's Gemini model streams: partial chunks, then the aggregated response)."""
        self._requests.append(llm_request)
        if self._cursor >= len(self.responses):
            raise ScriptExhaustedError(f"scripted model {self.model!r} has only {len(self.responses)} responses")
        response = self.responses[self._cursor]
        self._cursor += 1
        if not stream:
            yield response.model_copy(deep=True)
            return
        aggregator = StreamingResponseAggregator()
        for chunk in _chunks(response):
            async for partial in aggregator.process_response(chunk):
                yield partial
        aggregated = aggregator.close()
        if aggregated is not None:
            yield aggregated


def _chunks(response: LlmResponse) -> list[genai_types.GenerateContentResponse]:
    """The response as a Gemini stream: each text part split into words, other parts whole; finish reason and usage
    on the last chunk."""
    pieces: list[genai_types.Part] = []
    for part in response.content.parts or [] if response.content else []:
        if part.text:
            words = part.text.split(" ")
            pieces += [genai_types.Part(text=w if i == len(words) - 1 else w + " ") for i, w in enumerate(words)]
        else:
            pieces.append(part)
    chunks = []
    for position, piece in enumerate(pieces):
        last = position == len(pieces) - 1
        chunks.append(
            genai_types.GenerateContentResponse(
                candidates=[
                    genai_types.Candidate(
                        content=genai_types.Content(role="model", parts=[piece]),
                        finish_reason=response.finish_reason if last else None,
                    )
                ],
                usage_metadata=response.usage_metadata if last else None,
                model_version=response.model_version,
            )
        )
    return chunks


def _usage(prompt: int, output: int) -> genai_types.GenerateContentResponseUsageMetadata:
    return genai_types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=output, total_token_count=prompt + output
    )


def reply(text: str, *, prompt_tokens: int = 10, output_tokens: int = 5) -> LlmResponse:
    """A final text answer."""
    return LlmResponse(
        content=genai_types.Content(role="model", parts=[genai_types.Part(text=text)]),
        finish_reason=genai_types.FinishReason.STOP,
        usage_metadata=_usage(prompt_tokens, output_tokens),
        model_version=SCRIPTED_MODEL,
    )


def call(
    *calls: tuple[str, dict[str, Any]], text: str | None = None, prompt_tokens: int = 10, output_tokens: int = 5
) -> LlmResponse:
    """A response calling tools ``(name, args)`` in one turn (several = parallel calls), optionally after ``text``."""
    parts = [genai_types.Part(text=text)] if text else []
    parts += [genai_types.Part(function_call=genai_types.FunctionCall(name=n, args=a)) for n, a in calls]
    return LlmResponse(
        content=genai_types.Content(role="model", parts=parts),
        finish_reason=genai_types.FinishReason.STOP,
        usage_metadata=_usage(prompt_tokens, output_tokens),
        model_version=SCRIPTED_MODEL,
    )


# --- plain function tools -------------------------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather of a city."""
    return {"city": city, "sky": "sunny" if city == "Paris" else "rain", "temperature_c": 21}


def get_time(city: str) -> str:
    """Returns the local time of a city."""
    return f"10:30 in {city}"


class ToolFailedError(RuntimeError):
    """Raised by :func:`flaky_lookup`."""


def flaky_lookup(query: str) -> dict[str, Any]:
    """Looks something up; always fails."""
    raise ToolFailedError(f"lookup backend unavailable for {query!r}")


# --- scenarios ------------------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    """A root agent and the user turns to send it, one ``run_async`` per turn, all in one session."""

    name: str
    agent: BaseAgent
    turns: list[str]
    expect_error: type[BaseException] | None = None
    """A turn is expected to raise this (ADK propagates a tool's exception out of ``run_async``)."""


def _agent(name: str, responses: Sequence[LlmResponse], **kwargs: Any) -> LlmAgent:
    return LlmAgent(
        name=name,
        model=ScriptedLlm(responses=list(responses)),
        instruction=kwargs.pop("instruction", f"You are {name}. Answer briefly."),
        description=kwargs.pop("description", f"The {name}."),
        **kwargs,
    )


def single_tool_scenario() -> Scenario:
    """One tool call, then a final answer."""
    agent = _agent(
        "weather_agent",
        [call(("get_weather", {"city": "Paris"})), reply("It is sunny in Paris, 21 C.")],
        tools=[get_weather],
    )
    return Scenario("single_tool", agent, ["What is the weather in Paris?"])


def sequential_tools_scenario() -> Scenario:
    """Two tool calls one after the other, the first announced by an intermediate text."""
    agent = _agent(
        "weather_agent",
        [
            call(("get_weather", {"city": "Rome"}), text="Let me check the weather first."),
            call(("get_time", {"city": "Rome"})),
            reply("In Rome it rains and it is 10:30."),
        ],
        tools=[get_weather, get_time],
    )
    return Scenario("sequential_tools", agent, ["Weather and time in Rome?"])


def parallel_tools_scenario() -> Scenario:
    """Three tool calls in one model turn (ADK runs them concurrently and merges their responses)."""
    agent = _agent(
        "weather_agent",
        [
            call(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}), ("get_time", {"city": "Oslo"})),
            reply("Paris is sunny, Rome is rainy, Oslo is at 10:30."),
        ],
        tools=[get_weather, get_time],
    )
    return Scenario("parallel_tools", agent, ["Weather in Paris and Rome, and the time in Oslo?"])


def no_tool_scenario() -> Scenario:
    """A direct answer."""
    agent = _agent("chat_agent", [reply("Hello! How can I help?")])
    return Scenario("no_tool", agent, ["Hi there"])


def transfer_scenario() -> Scenario:
    """The root agent transfers to a sub-agent, which calls a tool and answers."""
    weather = _agent(
        "weather_agent",
        [call(("get_weather", {"city": "Oslo"})), reply("Oslo: rain, 21 C.")],
        tools=[get_weather],
    )
    root = _agent(
        "coordinator",
        [call(("transfer_to_agent", {"agent_name": "weather_agent"}), text="Handing over to the weather expert.")],
        sub_agents=[weather],
    )
    return Scenario("transfer", root, ["How is the weather in Oslo?"])


def agent_tool_scenario() -> Scenario:
    """The root agent uses another agent as a tool; the inner agent's own tool call is not the root's."""
    inner = _agent(
        "clock_agent",
        [call(("get_time", {"city": "Tokyo"})), reply("It is 10:30 in Tokyo.")],
        tools=[get_time],
    )
    root = _agent(
        "assistant",
        [call(("clock_agent", {"request": "time in Tokyo"})), reply("The clock agent says 10:30 in Tokyo.")],
        tools=[AgentTool(agent=inner)],
    )
    return Scenario("agent_tool", root, ["What time is it in Tokyo?"])


def tool_error_scenario() -> Scenario:
    """A tool raises; ADK propagates the exception and the turn ends without a final response."""
    agent = _agent(
        "lookup_agent",
        [call(("flaky_lookup", {"query": "otel"})), reply("unreachable")],
        tools=[flaky_lookup],
    )
    return Scenario("tool_error", agent, ["Look up otel"], expect_error=ToolFailedError)


def handled_tool_error(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, Any]:
    """An ``on_tool_error_callback``: the tool's exception becomes the function response the model sees."""
    return {"error": f"{type(error).__name__}: {error}", "retryable": False}


def tool_error_handled_scenario() -> Scenario:
    """A tool raises and ``on_tool_error_callback`` turns the exception into a response; the model answers from it."""
    agent = _agent(
        "lookup_agent",
        [call(("flaky_lookup", {"query": "otel"})), reply("The lookup backend is unavailable, sorry.")],
        tools=[flaky_lookup],
        on_tool_error_callback=handled_tool_error,
    )
    return Scenario("tool_error_handled", agent, ["Look up otel"])


def multi_turn_scenario() -> Scenario:
    """Three user turns in one session: a tool turn, a direct answer, another tool turn."""
    agent = _agent(
        "weather_agent",
        [
            call(("get_weather", {"city": "Paris"})),
            reply("Sunny in Paris."),
            reply("You are welcome."),
            call(("get_time", {"city": "Paris"})),
            reply("It is 10:30 in Paris."),
        ],
        tools=[get_weather, get_time],
    )
    return Scenario("multi_turn", agent, ["Weather in Paris?", "Thanks!", "And the time there?"])


def sequential_agents_scenario() -> Scenario:
    """A SequentialAgent: a researcher with a tool, then a writer; both answer in text."""
    researcher = _agent(
        "researcher", [call(("get_weather", {"city": "Paris"})), reply("Paris is sunny.")], tools=[get_weather]
    )
    writer = _agent("writer", [reply("Report: sunny Paris.")])
    return Scenario("sequential_agents", SequentialAgent(name="pipeline", sub_agents=[researcher, writer]), ["Paris?"])


def parallel_agents_scenario() -> Scenario:
    """A ParallelAgent: two branches, each with its own tool call and answer."""
    first = _agent(
        "weather_branch", [call(("get_weather", {"city": "Paris"})), reply("Paris sunny.")], tools=[get_weather]
    )
    second = _agent("time_branch", [call(("get_time", {"city": "Rome"})), reply("Rome 10:30.")], tools=[get_time])
    agent = ParallelAgent(name="fan_out", sub_agents=[first, second])
    return Scenario("parallel_agents", agent, ["Paris weather and Rome time"])


def skip_summarization_scenario() -> Scenario:
    """An AgentTool with ``skip_summarization``: ADK ends the turn on the tool's response (the final response)."""
    inner = _agent("clock_agent", [reply("It is 10:30 in Tokyo.")])
    root = _agent(
        "assistant",
        [call(("clock_agent", {"request": "time in Tokyo"}))],
        tools=[AgentTool(agent=inner, skip_summarization=True)],
    )
    return Scenario("skip_summarization", root, ["What time is it in Tokyo?"])


def exit_loop_scenario() -> Scenario:
    """A LoopAgent whose agent calls a tool, then ``exit_loop`` after a text (skip_summarization, no final text)."""
    looper = _agent(
        "looper",
        [call(("get_time", {"city": "Oslo"})), call(("exit_loop", {}), text="Done looping.")],
        tools=[get_time, exit_loop],
    )
    return Scenario("exit_loop", LoopAgent(name="loop", sub_agents=[looper], max_iterations=3), ["loop please"])


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "single_tool": single_tool_scenario,
    "sequential_tools": sequential_tools_scenario,
    "parallel_tools": parallel_tools_scenario,
    "no_tool": no_tool_scenario,
    "transfer": transfer_scenario,
    "agent_tool": agent_tool_scenario,
    "tool_error": tool_error_scenario,
    "tool_error_handled": tool_error_handled_scenario,
    "multi_turn": multi_turn_scenario,
    "sequential_agents": sequential_agents_scenario,
    "parallel_agents": parallel_agents_scenario,
    "skip_summarization": skip_summarization_scenario,
    "exit_loop": exit_loop_scenario,
}
"""Scenario name -> builder (a fresh agent tree each call: scripted models are consumed by a run)."""


# --- telemetry ------------------------------------------------------------------------------------------------------

_EXPORTER: InMemorySpanExporter | None = None


def span_exporter() -> InMemorySpanExporter:
    """The session-wide in-memory exporter receiving ADK's spans (installed on first call).

    ADK takes its tracer from the global provider, which can be set only once per process: when a global SDK
    ``TracerProvider`` already exists the exporter is added to it, otherwise a new provider is installed.
    """
    global _EXPORTER
    if _EXPORTER is None:
        exporter = InMemorySpanExporter()
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
            provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):  # another library won the race with a non-SDK provider
            raise RuntimeError(f"global tracer provider is {type(provider).__name__}, not an SDK TracerProvider")
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _EXPORTER = exporter
    return _EXPORTER


_LOG_EXPORTER: InMemoryLogRecordExporter | None = None


def global_logger_provider() -> LoggerProvider:
    """The global SDK ``LoggerProvider`` ADK's ``otel_logger`` (a proxy) emits to, installed on first call (it can
    be set only once per process, like the tracer provider)."""
    provider = _logs.get_logger_provider()
    if not isinstance(provider, LoggerProvider):
        _logs.set_logger_provider(LoggerProvider())
        provider = _logs.get_logger_provider()
    if not isinstance(provider, LoggerProvider):
        raise RuntimeError(f"global logger provider is {type(provider).__name__}, not an SDK LoggerProvider")
    return provider


def log_exporter() -> InMemoryLogRecordExporter:
    """The session-wide in-memory exporter receiving ADK's log records (ADK's EVENT_ONLY content)."""
    global _LOG_EXPORTER
    if _LOG_EXPORTER is None:
        exporter = InMemoryLogRecordExporter()
        global_logger_provider().add_log_record_processor(SimpleLogRecordProcessor(exporter))
        _LOG_EXPORTER = exporter
    return _LOG_EXPORTER


@contextlib.contextmanager
def adk_telemetry(*, schema: int, capture_content: bool = True, capture_mode: str = "SPAN_ONLY") -> Iterator[None]:
    """Sets ADK's telemetry schema (1 legacy, 2 semconv-aligned) and content capture for the block.

    ``capture_mode`` is the GenAI capture mode used when ``capture_content`` (``SPAN_ONLY``, ``EVENT_ONLY``: content
    on ``gen_ai.client.inference.operation.details`` log records, see :func:`log_exporter`).

    ADK reads these variables when a run starts (``resolve_schema_version`` and ``TelemetryConfig`` read
    ``os.environ`` on every call, nothing is cached at import), so setting them around a run is enough.
    """
    values = {
        SCHEMA_ENV: str(schema),
        GENAI_CAPTURE_ENV: capture_mode if capture_content else "NO_CONTENT",
        ADK_CAPTURE_ENV: "true" if capture_content else "false",
    }
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# --- running --------------------------------------------------------------------------------------------------------


@dataclass
class AdkRun:
    """What one scenario run produced."""

    scenario: Scenario
    session_id: str
    session_events: list[Event]
    readable_spans: list[ReadableSpan]
    errors: list[BaseException] = field(default_factory=list)
    log_records: list[ReadableLogRecord] = field(default_factory=list)
    """ADK's log records of the run (its EVENT_ONLY content), when the run collected them."""

    @property
    def spans(self) -> list[Span]:
        """The run's spans in otel_eval's internal form."""
        return spans_from_readable(self.readable_spans)


async def run_turns(
    scenario: Scenario,
    *,
    session_id: str | None = None,
    streaming: bool = False,
    outer_span: str | None = None,
) -> AdkRun:
    """Runs every user turn of ``scenario`` in one fresh in-memory session and collects events and spans.

    Args:
        scenario: The agent and its user turns.
        session_id: The session id to use (default: a random ``s-...``).
        streaming: Run with ``StreamingMode.SSE`` (the scripted model then streams word chunks).
        outer_span: When given, all turns run inside one application span of this name, so they share one trace
            (by default each ``run_async`` call is its own trace).

    A turn expected to fail (``scenario.expect_error``) is recorded in ``errors``; any other exception propagates.
    """
    exporter = span_exporter()
    exporter.clear()
    logs = log_exporter()
    logs.clear()
    session_service = InMemorySessionService()
    runner = Runner(app_name=APP_NAME, agent=scenario.agent, session_service=session_service)
    session = await session_service.create_session(
        app_name=APP_NAME, user_id=USER_ID, session_id=session_id or f"s-{uuid.uuid4().hex[:12]}"
    )
    run_config = RunConfig(streaming_mode=StreamingMode.SSE if streaming else StreamingMode.NONE)
    errors: list[BaseException] = []
    outer = (
        trace.get_tracer("tests.reconstruct.adk_agents").start_as_current_span(outer_span)
        if outer_span
        else contextlib.nullcontext()
    )
    try:
        with outer:
            for turn in scenario.turns:
                message = genai_types.Content(role="user", parts=[genai_types.Part(text=turn)])
                try:
                    async for _event in runner.run_async(
                        user_id=USER_ID, session_id=session.id, new_message=message, run_config=run_config
                    ):
                        pass
                except Exception as exc:
                    if scenario.expect_error is None or not isinstance(exc, scenario.expect_error):
                        raise
                    errors.append(exc)
    finally:
        await runner.close()
    stored = await session_service.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=session.id)
    assert stored is not None
    return AdkRun(
        scenario=scenario,
        session_id=session.id,
        session_events=list(stored.events),
        readable_spans=list(exporter.get_finished_spans()),
        errors=errors,
        log_records=list(logs.get_finished_logs()),
    )


@dataclass
class RecordedRuns:
    """Several scenarios run under one telemetry mode: every span and log record they emitted, and ADK's own
    invocations of each as an eval case (``{"eval_id": scenario, "conversation": [...]}``)."""

    spans: list[ReadableSpan] = field(default_factory=list)
    logs: list[ReadableLogRecord] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)


async def record_runs(names: Sequence[str], *, capture_mode: str) -> RecordedRuns:
    """Runs the named scenarios with the semconv-aligned telemetry (schema 2) and ``capture_mode`` content."""
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator

    recorded = RecordedRuns()
    with adk_telemetry(schema=2, capture_mode=capture_mode):
        for name in names:
            run = await run_turns(SCENARIOS[name]())
            recorded.spans.extend(run.readable_spans)
            recorded.logs.extend(run.log_records)
            actual = EvaluationGenerator.convert_events_to_eval_invocations(run.session_events)
            recorded.cases.append({"eval_id": name, "conversation": [i.model_dump(mode="json") for i in actual]})
    return recorded
