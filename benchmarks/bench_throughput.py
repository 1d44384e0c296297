"""Agent throughput with vs without ``EvaluationSpanProcessor``, the exporting ``BatchSpanProcessor`` (no-op
exporter) present in both runs (the CPU it costs, counted in every process, is ``bench_processor``'s). Target >= 0.95
for:

- a real google-adk agent (``LlmAgent`` + ``Runner``, one tool call) whose scripted model takes 20 ms per call;
- the GenAI-semconv travel assistant with the same 20 ms model latency (a fast real LLM takes 0.3-2 s);
- the travel assistant with an instant model, a hanging judge and a full evaluation queue (never blocking).

Both agents with an *instant* model (CPU-bound: nothing but Python runs): target >= 0.8 (issue 14), with
``isolation="process"`` (and, informational, the default ``thread``, where the processor's background work competes
for the GIL with an agent that spends 0.2-7 ms per invocation; with any real model latency the work fits in the
agent's waiting time). With ``isolation="process"`` the evaluation process sheds whole traces while it is behind:
every row says how many of the invocations the processor saw it evaluated (the fewest over the runs, warm-up
included), and a row whose processor shed or dropped work is not met, whatever its ratio: it measured an agent that
kept its speed while evaluation sampled what it could (the hanging-judge row excepted: dropping is what it tests).

Run: ``python -m benchmarks.bench_throughput [--invocations N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from benchmarks._common import Row, machine, print_rows
from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent

WARM_UP = 30
BIG_QUEUE = 1_000_000
"""Both processors get a queue no run fills, so neither is timed on its drop path."""


class NoOpExporter(SpanExporter):
    """Accepts and forgets spans."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class Switch(SpanProcessor):
    """Forwards to the processors of the current configuration (ADK traces to the one global provider)."""

    def __init__(self) -> None:
        self.targets: list[SpanProcessor] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        for target in self.targets:
            target.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for target in self.targets:
            target.on_end(span)


# --- 2. agent throughput -----------------------------------------------------------------------------------------


def alternate(run: Callable[[bool], float], repeat: int) -> tuple[float, float]:
    """Median rate without and with the processor, runs alternating so drift hits both."""
    without, with_ = [], []
    for _ in range(repeat):
        without.append(run(False))
        with_.append(run(True))
    return statistics.median(without), statistics.median(with_)


class Evaluated:
    """How many invocations the processor evaluated in each run of one configuration, of how many it saw."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int]] = []

    def count(self, processor: EvaluationSpanProcessor, seen: int, drain_millis: int) -> None:
        """Waits (up to ``drain_millis``) for what the processor holds, then records its evaluated count and prints
        what it shed or dropped (``isolation="process"`` sheds whole traces while its evaluation process is behind)."""
        processor.force_flush(drain_millis)  # the evaluation process reports its counts at a flush
        stats = processor.stats()
        evaluated = stats.get("invocations.evaluated", 0) + stats.get("evaluation_process.invocations.evaluated", 0)
        self.runs.append((evaluated, seen))
        dropped = {k: v for k, v in stats.items() if k.startswith("spans.dropped.")}
        print(f"  {evaluated} of {seen} invocations evaluated" + (f"; dropped or shed: {dropped}" if dropped else ""))

    def fewest(self) -> tuple[int, int]:
        """The run that evaluated the smallest share: (evaluated, seen)."""
        return min(self.runs, key=lambda run: run[0] / max(run[1], 1))


def travel_rate(
    invocations: int,
    evaluated: Evaluated,
    *,
    latency: float = 0.0,
    processor_options: dict[str, Any] | None = None,
    drain_millis: int = 60_000,
) -> Callable[[bool], float]:
    options = processor_options or {}
    if "settings" not in options or options["settings"].isolation != "process":
        options = {"tracer_provider": None, **options}

    def run(with_processor: bool) -> float:
        provider = TracerProvider()
        processor = None
        if with_processor:
            if "tracer_provider" in options:
                options["tracer_provider"] = provider
            processor = EvaluationSpanProcessor(**options)
            provider.add_span_processor(processor)
        provider.add_span_processor(BatchSpanProcessor(NoOpExporter()))
        agent = TravelAgent(provider, model_latency_seconds=latency)
        for index in range(WARM_UP):  # one-time costs (schema builds, first judge connection) are not throughput
            agent.run(SCENARIOS[index % len(SCENARIOS)])
        time.sleep(0.3)
        started = time.perf_counter()
        for index in range(invocations):
            agent.run(SCENARIOS[index % len(SCENARIOS)])
        rate = invocations / (time.perf_counter() - started)
        if processor is not None:
            evaluated.count(processor, WARM_UP + invocations, drain_millis)
            processor.shutdown(timeout_millis=drain_millis)
        provider.shutdown()
        return rate

    return run


def adk_rate(
    invocations: int, evaluated: Evaluated, *, latency: float = 0.0, isolation: str = "thread"
) -> Callable[[bool], float]:
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.genai import types as genai_types

    class InstantModel(BaseLlm):
        """Asks for ``get_weather`` when the last message is the user's, else answers."""

        model: str = "scripted-instant"

        async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> Any:
            if latency > 0:
                await asyncio.sleep(latency)
            last = llm_request.contents[-1] if llm_request.contents else None
            if last is not None and last.parts and last.parts[0].function_response is not None:
                part = genai_types.Part(text="It is sunny in Paris.")
            else:
                part = genai_types.Part(
                    function_call=genai_types.FunctionCall(name="get_weather", args={"city": "Paris"})
                )
            yield LlmResponse(content=genai_types.Content(role="model", parts=[part]))

    def get_weather(city: str) -> dict[str, str]:
        """The weather in a city."""
        return {"city": city, "weather": "sunny"}

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    switch = Switch()
    provider.add_span_processor(switch)
    agent = LlmAgent(name="weather_agent", model=InstantModel(), tools=[get_weather], instruction="Answer briefly.")
    sessions = InMemorySessionService()
    runner = Runner(app_name="bench", agent=agent, session_service=sessions)
    message = genai_types.Content(role="user", parts=[genai_types.Part(text="Weather in Paris?")])

    async def turns(count: int) -> None:
        for _ in range(count):
            session = await sessions.create_session(app_name="bench", user_id="u")
            async for _event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
                pass

    def run(with_processor: bool) -> float:
        batch = BatchSpanProcessor(NoOpExporter())
        processor = None
        if with_processor:
            processor = (
                EvaluationSpanProcessor(tracer_provider=provider)
                if isolation == "thread"
                else EvaluationSpanProcessor(settings=ProcessorSettings(isolation=isolation))
            )
        switch.targets = [processor, batch] if processor is not None else [batch]
        asyncio.run(turns(WARM_UP // 3))
        time.sleep(0.3)
        started = time.perf_counter()
        asyncio.run(turns(invocations))
        rate = invocations / (time.perf_counter() - started)
        if processor is not None:
            evaluated.count(processor, WARM_UP // 3 + invocations, 60_000)
            processor.shutdown()
        batch.shutdown()
        switch.targets = []
        return rate

    run(False)  # warm-up: imports, first-call caches
    return run


class HangingGemini:
    """A loopback Gemini endpoint that never answers: every judge call hangs."""

    def __init__(self) -> None:
        stop = self.stop_event = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                stop.wait()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.stop_event.set()
        self.server.shutdown()
        self.server.server_close()


def throughput_row(
    label: str,
    measure: Callable[[Evaluated], tuple[float, float]],
    target: float | None,
    *,
    drops_by_design: bool = False,
) -> Row:
    """The agent's rate with vs without the processor; the ours column also says how many invocations were
    evaluated. Met when the ratio meets ``target`` and nothing was shed or dropped (unless ``drops_by_design``)."""
    evaluated = Evaluated()
    without, with_ = measure(evaluated)
    done, seen = evaluated.fewest()
    ratio = with_ / without
    print(f"{label}: {with_:.0f}/s with the processor, {without:.0f}/s without (ratio {ratio:.3f}); {done}/{seen}")
    complete = drops_by_design or done >= seen
    met = (True if target is None else ratio >= target) and complete
    wanted = f">= {target}" if target else "info"
    if not drops_by_design:
        wanted += ", all evaluated"
    ours = f"{with_:.0f} inv/s, {done}/{seen} evaluated"
    return Row(label, ours, f"{without:.0f} inv/s", ratio, wanted, met)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_throughput", description=__doc__)
    parser.add_argument("--invocations", type=int, default=2000, help="agent invocations per run (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per configuration (median; default 5)")
    args = parser.parse_args(argv)
    print(machine())
    # The evaluation process has no exporter here (its scores are made and dropped, like the thread rows' no-op
    # providers): the processor's warning that the scores go nowhere is expected.
    logging.getLogger("otel_eval.processor._process.exporters").setLevel(logging.ERROR)
    rows: list[Row] = []
    slow_runs = max(20, args.invocations // 20)
    slow_repeat = max(3, args.repeat // 2)
    rows.append(
        throughput_row(
            "real ADK agent, 20 ms model latency",
            lambda counted: alternate(adk_rate(slow_runs, counted, latency=0.02), slow_repeat),
            0.95,
        )
    )
    rows.append(
        throughput_row(
            "travel agent, 20 ms model latency",
            lambda counted: alternate(travel_rate(slow_runs, counted, latency=0.02), slow_repeat),
            0.95,
        )
    )
    from otel_eval.judge import JudgeClient, JudgeSettings

    gemini = HangingGemini()
    try:
        judge = JudgeClient(JudgeSettings(api_key="bench-key", base_url=gemini.base_url, timeout_seconds=600))
        options = {
            "criteria": {"hallucinations_v1": 0.8},
            "judge": judge,
            "settings": ProcessorSettings(max_queue_size=8),
        }
        rows.append(
            throughput_row(
                "travel agent, hanging judge + full queue",
                lambda counted: alternate(
                    travel_rate(args.invocations, counted, processor_options=options, drain_millis=100), args.repeat
                ),
                0.95,
                drops_by_design=True,
            )
        )
    finally:
        gemini.close()
    for isolation, target in (("process", 0.8), ("thread", None)):
        rows.append(
            throughput_row(
                f"real ADK agent, instant model (CPU-bound), {isolation}",
                lambda counted, isolation=isolation: alternate(
                    adk_rate(args.invocations // 4, counted, isolation=isolation), args.repeat
                ),
                target,
            )
        )
        rows.append(
            throughput_row(
                f"travel agent, instant model (CPU-bound), {isolation}",
                lambda counted, isolation=isolation: alternate(
                    travel_rate(
                        args.invocations,
                        counted,
                        processor_options={"settings": ProcessorSettings(isolation=isolation)},
                    ),
                    args.repeat,
                ),
                target,
            )
        )
    print_rows(f"Agent throughput with EvaluationSpanProcessor — {machine()}", rows)
    return rows


if __name__ == "__main__":
    sys.exit(0 if all(row.met for row in main(sys.argv[1:])) else 1)
