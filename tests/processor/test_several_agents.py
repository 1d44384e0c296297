"""Several agents in one process, each with its own processor (a platform serving several agents): each processor's
own queues, criteria and results stay its own where they share a meter provider or the global tracer provider."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.model.messages import EvaluationRecord
from tests.processor.telemetry import Telemetry
from tests.waiting import wait_until
from tests.worker._core_helpers import HangingEvaluator, registry_with

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _reset_hanging() -> Iterator[None]:
    HangingEvaluator.release.clear()
    HangingEvaluator.started.clear()
    yield
    HangingEvaluator.release.set()


def _message(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def run_agent(provider: TracerProvider, name: str, turns: int) -> None:
    """``turns`` invocations of agent ``name`` as a GenAI instrumentation records them."""
    tracer = provider.get_tracer(name)
    for turn in range(turns):
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.input.messages": _message("user", f"question {turn} for {name}?"),
            "gen_ai.output.messages": _message("assistant", f"answer {turn} of {name}."),
        }
        with tracer.start_as_current_span(f"invoke_agent {name}", attributes=attributes):
            pass


def _agent_provider(name: str) -> TracerProvider:
    return TracerProvider(resource=Resource.create({"service.name": name}))


def _queue_sizes(telemetry: Telemetry) -> dict[str, float]:
    return {
        str(point.attributes[semconv.OTEL_EVAL_QUEUE]): point.value
        for point in telemetry.metric_points(semconv.METRIC_QUEUE_SIZE, settle=False)
    }


def test_the_queue_gauge_reports_every_processor_on_a_shared_meter_provider(telemetry: Telemetry) -> None:
    idle_provider, busy_provider = _agent_provider("idle-agent"), _agent_provider("busy-agent")
    idle = EvaluationSpanProcessor(meter_provider=telemetry.meter_provider, sinks=[lambda records: None])
    idle_provider.add_span_processor(idle)
    busy = EvaluationSpanProcessor(
        {"hanging_v1": 0.5},
        settings=ProcessorSettings(concurrency=1),
        registry=registry_with(HangingEvaluator),
        meter_provider=telemetry.meter_provider,
        sinks=[lambda records: None],
    )
    busy_provider.add_span_processor(busy)
    run_agent(busy_provider, "busy-agent", 5)
    assert HangingEvaluator.started.wait(10)
    assert not busy.force_flush(200)  # one evaluating, one taken and waiting for a slot, three queued
    assert _queue_sizes(telemetry)["requests"] == 3  # the first processor's queue (empty) alone before

    idle_provider.shutdown()
    del idle, idle_provider
    gc.collect()
    assert _queue_sizes(telemetry)["requests"] == 3
    HangingEvaluator.release.set()
    assert busy.force_flush(10_000)
    assert wait_until(lambda: _queue_sizes(telemetry)["requests"] == 0)
    busy_provider.shutdown()


def test_records_of_each_agent_use_its_own_processors_metrics(telemetry: Telemetry) -> None:
    records: dict[str, list[EvaluationRecord]] = {"agent-a": [], "agent-b": []}
    providers = {}
    for name, metric in (("agent-a", "tool_call_count_v1"), ("agent-b", "token_usage_v1")):
        providers[name] = _agent_provider(name)
        providers[name].add_span_processor(
            EvaluationSpanProcessor(
                settings=ProcessorSettings(metrics=(metric,)),
                meter_provider=telemetry.meter_provider,
                sinks=[records[name].extend],
            )
        )
    run_agent(providers["agent-a"], "agent-a", 2)
    run_agent(providers["agent-b"], "agent-b", 3)
    for provider in providers.values():
        assert provider.force_flush(10_000)
    assert sorted((r.agent_name, r.metric_name) for r in records["agent-a"]) == [("agent-a", "tool_call_count_v1")] * 2
    assert sorted((r.agent_name, r.metric_name) for r in records["agent-b"]) == [("agent-b", "token_usage_v1")] * 3
    sampled = telemetry.metric_points(semconv.METRIC_INVOCATIONS_SAMPLED)
    assert [point.value for point in sampled] == [5]
    for provider in providers.values():
        provider.shutdown()


SERVER = """\
import json, logging, sys
from opentelemetry import trace
import otel_eval
from otel_eval import ProcessorSettings
from tests.processor.test_several_agents import run_agent

logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
records = {"billing": [], "travel": []}
billing = otel_eval.attach_to_global_providers(agent_names=("billing",), metrics=("tool_call_count_v1",),
                                               sinks=[records["billing"].extend])
travel = otel_eval.attach_to_global_providers(settings=ProcessorSettings(agent_names=("travel",),
                                              metrics=("token_usage_v1",)), sinks=[records["travel"].extend])
again = otel_eval.attach_to_global_providers(agent_names="billing", sinks=[records["billing"].extend])
everyone = otel_eval.attach_to_global_providers(sinks=[])
run_agent(trace.get_tracer_provider(), "billing", 2)
run_agent(trace.get_tracer_provider(), "travel", 3)
for processor in (billing, travel):
    processor.force_flush(10_000)
print(json.dumps({"again": again is billing, "distinct": travel is not billing and everyone not in (billing, travel),
                  **{name: sorted({(r.agent_name, r.metric_name, len(got)) for r in got}) for name, got in records.items()}}))
"""


def test_each_agent_attached_to_the_global_providers_gets_its_own_processor() -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"PYTHONPATH": str(ROOT)}
    process = subprocess.run(
        [sys.executable, "-c", SERVER], env=environment, capture_output=True, text=True, timeout=120, check=False
    )
    assert process.returncode == 0, process.stderr
    report = json.loads(process.stdout.splitlines()[-1])
    assert report == {
        "again": True,
        "distinct": True,
        "billing": [["billing", "tool_call_count_v1", 2]],
        "travel": [["travel", "token_usage_v1", 3]],
    }
    assert "every agent, so the invocations of billing, travel are evaluated twice" in process.stderr
