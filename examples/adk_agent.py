"""A Google ADK agent with the EvaluationSpanProcessor attached. Runs offline: a scripted model stands in for Gemini.

    python examples/adk_agent.py            # one line per score on stdout
    python examples/adk_agent.py --otlp     # traces over OTLP/HTTP; scores to OTEL_EVAL_SINKS (Phoenix, MLflow)
    python examples/adk_agent.py --otlp --metrics-port 9464 --rounds 30   # plus /metrics for Prometheus

Everything is real google-adk (``LlmAgent``, two function tools, ``InMemoryRunner``) except the model: a scripted
``BaseLlm`` replays fixed turns, so no key and no network are needed. Three questions, one invocation each:

- Paris: the weather tool, an answer it supports (every metric passes);
- Tokyo: the tool says rain, the answer says dry and sunny: the hallucination (``hallucinations_v1`` fails with the
  scripted judge of ``otel-eval judge-server``, or with a real one);
- London's time: the weather tool is called instead of the clock (``tool_trajectory_avg_score`` fails against the
  golden eval set ``GOLDEN`` below, which says what the agent should have called).

To run it on Gemini, replace ``ScriptedModel(...)`` by ``"gemini-2.5-flash"`` and set ``GOOGLE_API_KEY``.
ADK emits its spans on the *global* tracer provider, so the provider carrying the processor is set globally.
``OTEL_EVAL_CRITERIA`` chooses the metrics (default: tool trajectory and response match). With ``--otlp`` the
exporters follow the SDK's variables (``OTEL_EXPORTER_OTLP_ENDPOINT``; ``OTEL_LOGS_EXPORTER`` /
``OTEL_METRICS_EXPORTER``: ``otlp`` or ``none``); ``--metrics-port`` serves the metrics for Prometheus to scrape
instead (``pip install 'otel-eval[prometheus]'``). A judge that gives no verdict is said at once in one WARNING, and
the run exits 1 (``judge_watch.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

try:
    from judge_watch import JudgeWatch  # run as a script: examples/ is on the path
except ImportError:  # imported as a module of the repository (the tests)
    from examples.judge_watch import JudgeWatch
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor
from otel_eval import environment_variables as env
from otel_eval.emit.console import ConsoleRecordSink
from otel_eval.model import EvalCase, EvalSet, IntermediateData, Invocation

# ADK's v2 telemetry (the default) puts message content on spans only with this; without it the spans carry no
# text and the content metrics report NOT_EVALUATED (content_not_captured).
os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

WEATHER = {"Paris": ("sunny", 21), "Tokyo": ("raining", 14), "London": ("cloudy", 12)}


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather of a city."""
    sky, temperature = WEATHER.get(city, ("unknown", 0))
    return {"city": city, "sky": sky, "temperature_c": temperature}


def get_time(city: str) -> dict[str, Any]:
    """Returns the current local time of a city."""
    return {"city": city, "time": "14:05"}


# question -> (the tool call the scripted model makes, its final answer)
SCRIPT = {
    "What's the weather in Paris?": (("get_weather", "Paris"), "It is sunny and 21°C in Paris."),
    # The tool says rain; the answer invents dry weather. The scripted judge finds exactly this sentence unsupported.
    "Is it raining in Tokyo right now?": (
        ("get_weather", "Tokyo"),
        "No, it is completely dry in Tokyo: clear skies and 30°C, perfect beach weather.",
    ),
    # The wrong tool: the weather instead of the clock.
    "What time is it in London?": (("get_weather", "London"), "It is cloudy in London."),
}
# What the agent should do: ADK's eval-set form. A live invocation whose user text is a case's gets the reference
# metrics (tool trajectory, response match); every invocation gets the efficiency metrics.
GOLDEN_TURNS = {
    "What's the weather in Paris?": ("get_weather", "Paris", "It is sunny and 21°C in Paris."),
    "Is it raining in Tokyo right now?": ("get_weather", "Tokyo", "Yes, it is raining in Tokyo, at 14°C."),
    "What time is it in London?": ("get_time", "London", "It is 14:05 in London."),
}
GOLDEN = EvalSet(
    eval_set_id="weather_golden",
    eval_cases=[
        EvalCase(
            eval_id=city.lower(),
            conversation=[
                Invocation(
                    user_content=types.Content(role="user", parts=[types.Part(text=question)]),
                    final_response=types.Content(role="model", parts=[types.Part(text=answer)]),
                    intermediate_data=IntermediateData(tool_uses=[types.FunctionCall(name=tool, args={"city": city})]),
                )
            ],
        )
        for question, (tool, city, answer) in GOLDEN_TURNS.items()
    ],
)
DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


class ScriptedModel(BaseLlm):
    """Stands in for Gemini: the scripted tool call for the question, then, given the tool's result, the answer."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        question = next(p.text for c in llm_request.contents for p in c.parts or () if p.text and c.role == "user")
        (tool, city), answer = SCRIPT[question]
        if any(p.function_response for p in llm_request.contents[-1].parts or ()):
            part = types.Part(text=answer)
        else:
            part = types.Part(function_call=types.FunctionCall(name=tool, args={"city": city}))
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=120, candidates_token_count=15, total_token_count=135
        )
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


async def ask_each_question(runner: InMemoryRunner) -> None:
    """One session per question: each is an invocation (a trace) of its own."""
    for question in SCRIPT:
        session = await runner.session_service.create_session(app_name="weather_app", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=question)])
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                # One write for the line: the console sink prints the scores from the evaluation's threads, and
                # print() writes the text and its newline apart, so a score could land between them.
                print(f"agent: {event.content.parts[0].text}\n", end="", flush=True)


def otlp_providers(metrics_port: int | None, metrics_host: str) -> dict[str, Any]:
    """The processor's providers for ``--otlp``: traces (the agent's spans, the scores' spans, the enriched roots),
    logs and metrics over OTLP/HTTP as ``OTEL_TRACES_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` / ``OTEL_METRICS_EXPORTER``
    say (``otlp``, the default, or ``none``), or the metrics on /metrics."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "adk-weather-agent"})  # plus OTEL_RESOURCE_ATTRIBUTES
    logger_provider = LoggerProvider(resource=resource)
    if _exporting("OTEL_LOGS_EXPORTER"):
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    readers: list[MetricReader] = []
    if metrics_port is not None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr=metrics_host)  # the agent's /metrics, for Prometheus to scrape
        readers.append(PrometheusMetricReader())
    elif _exporting("OTEL_METRICS_EXPORTER"):
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return {
        "tracer_provider": TracerProvider(resource=resource),
        "meter_provider": MeterProvider(resource=resource, metric_readers=readers),
        "logger_provider": logger_provider,
        # the agent's spans, root spans with their scores
        "enrich": BatchSpanProcessor(OTLPSpanExporter()) if _exporting("OTEL_TRACES_EXPORTER") else None,
    }


def _exporting(variable: str) -> bool:
    """``OTEL_<SIGNAL>_EXPORTER`` is ``otlp`` (or unset), not ``none``."""
    return os.environ.get(variable, "otlp").strip().lower() != "none"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--otlp", action="store_true", help="export over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)")
    parser.add_argument("--metrics-port", type=int, help="serve the metrics on /metrics on this port (Prometheus)")
    parser.add_argument("--metrics-host", default="127.0.0.1", help="address of /metrics (default 127.0.0.1)")
    parser.add_argument("--rounds", type=int, default=1, help="ask the three questions this many times")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between rounds (default 1)")
    args = parser.parse_args()
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")

    watch = JudgeWatch()
    criteria = {} if os.environ.get("OTEL_EVAL_CRITERIA") else {"criteria": DEFAULT_CRITERIA}
    if args.otlp:
        providers = otlp_providers(args.metrics_port, args.metrics_host)
        sinks: list[Any] = [watch]  # plus those OTEL_EVAL_SINKS names
    else:
        providers = {"tracer_provider": TracerProvider()}
        console = env.flag_setting(os.environ, env.OTEL_EVAL_CONSOLE, False)  # set: from_env prints them already
        sinks = [watch] if console else [watch, ConsoleRecordSink()]
    provider: TracerProvider = providers.pop("tracer_provider")
    processor = EvaluationSpanProcessor.from_env(
        eval_set=GOLDEN, sinks=sinks, tracer_provider=provider, **providers, **criteria
    )
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)  # ADK's tracer is a proxy of the global provider

    agent = LlmAgent(
        name="weather_agent",
        model=ScriptedModel(model="scripted-gemini"),
        instruction="Answer weather and time questions with get_weather and get_time.",
        tools=[get_weather, get_time],
    )
    runner = InMemoryRunner(agent=agent, app_name="weather_app")
    for round_number in range(args.rounds):
        if round_number:
            time.sleep(args.pause)
        asyncio.run(ask_each_question(runner))
    # Evaluates what is buffered, exports the spans and waits (at most a minute) until the sinks' backends took the
    # scores: a backend still ingesting the spans makes the sinks retry, which shutdown alone gives only 5 s.
    processor.force_flush(60_000)
    provider.shutdown()
    for other in ("meter_provider", "logger_provider"):
        if other in providers:
            providers[other].shutdown()
    return watch.summary()


if __name__ == "__main__":
    sys.exit(main())
