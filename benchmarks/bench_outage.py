"""An agent during a telemetry-backend outage: the processor on Kafka with the broker down, beside the OpenTelemetry
SDK's ``BatchSpanProcessor`` + OTLP exporter with the collector down, measured the same way in the same run.

Each configuration runs in its own process (CPU is that process's, every thread): the travel-assistant agent does
``--rate`` invocations a second for ``--window`` seconds with nothing listening at the backend's address, then
``TracerProvider.shutdown()`` is called with the SDK's default timeout. Measured:

1. agent-side CPU seconds over the window (target: the outage costs no more than with the broker up, ratio <= 1.2;
   against the SDK's exporter it is informational: the processor also rebuilds every invocation);
2. ``TracerProvider.shutdown()`` seconds (target <= 1.0 of the SDK's, and within ``OTEL_EVAL_KAFKA_DELIVERY_TIMEOUT_MS``);
3. log lines at INFO and above (as ``logging.basicConfig(level=INFO)`` shows them) per minute of outage (target:
   <= 1.0 of the SDK's).

Run: ``python -m benchmarks.bench_outage [--window S] [--rate N]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from typing import Any

from benchmarks._common import ROOT, Row, machine, print_rows

sys.path.insert(0, str(ROOT))
from tests._kafka import TansuBroker, free_port

MODES = ("kafka_down", "kafka_up", "otlp_down")


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def child(mode: str, address: str, window: float, rate: float) -> dict[str, Any]:
    """One configuration, in this process: CPU over the window, shutdown seconds, log lines."""
    from opentelemetry.sdk.trace import TracerProvider

    from otel_eval import EvaluationSpanProcessor
    from otel_eval.demo import SCENARIOS, TravelAgent
    from otel_eval.transport.kafka import KafkaInvocationExporter

    lines = _Counter()
    logging.getLogger().addHandler(lines)
    logging.getLogger().setLevel(logging.INFO)
    provider = TracerProvider()
    if mode == "otlp_down":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=address, insecure=True)))
    else:
        exporter = KafkaInvocationExporter(address, topic="bench-outage")
        provider.add_span_processor(EvaluationSpanProcessor(exporter=exporter))
    agent = TravelAgent(provider)
    started_cpu, started = time.process_time(), time.monotonic()
    runs = 0
    while time.monotonic() - started < window:
        agent.run(SCENARIOS[runs % len(SCENARIOS)], conversation_id=f"outage-{runs}")
        runs += 1
        time.sleep(max(0.0, started + runs / rate - time.monotonic()))
    cpu = time.process_time() - started_cpu
    during = lines.count
    shutdown_started = time.monotonic()
    provider.shutdown()
    return {
        "cpu": cpu,
        "runs": runs,
        "shutdown": time.monotonic() - shutdown_started,
        "lines_per_minute": during * 60 / window,
    }


def _measure(mode: str, address: str, window: float, rate: float) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_outage", "--child", mode, address, str(window), str(rate)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=window + 120,
    )
    return dict(json.loads(completed.stdout.strip().splitlines()[-1]))


def run(window: float, rate: float) -> list[Row]:
    dead = f"127.0.0.1:{free_port()}"
    results = {
        "kafka_down": _measure("kafka_down", dead, window, rate),
        "otlp_down": _measure("otlp_down", dead, window, rate),
    }
    broker = TansuBroker()
    broker.start()
    try:
        results["kafka_up"] = _measure("kafka_up", broker.bootstrap, window, rate)
    finally:
        broker.stop()
    for mode, figures in results.items():
        print(f"{mode:<11} {json.dumps(figures)}")
    ours, sdk, up = results["kafka_down"], results["otlp_down"], results["kafka_up"]

    def ratio(a: float, b: float) -> float:
        return a / b if b else (0.0 if a == 0 else float("inf"))

    lines = ratio(ours["lines_per_minute"], sdk["lines_per_minute"])
    return [
        Row(
            "outage: agent CPU, broker down vs up",
            f"{ours['cpu']:.2f} s",
            f"{up['cpu']:.2f} s",
            ratio(ours["cpu"], up["cpu"]),
            "<= 1.2",
            ratio(ours["cpu"], up["cpu"]) <= 1.2,
        ),
        Row(
            "outage: agent CPU vs BSP+OTLP (dead collector)",
            f"{ours['cpu']:.2f} s",
            f"{sdk['cpu']:.2f} s",
            ratio(ours["cpu"], sdk["cpu"]),
            "info",
            True,
        ),
        Row(
            "outage: TracerProvider.shutdown() vs BSP+OTLP",
            f"{ours['shutdown']:.1f} s",
            f"{sdk['shutdown']:.1f} s",
            ratio(ours["shutdown"], sdk["shutdown"]),
            "<= 1.0",
            ours["shutdown"] <= min(sdk["shutdown"], 5.5),
        ),
        Row(
            "outage: log lines/min vs BSP+OTLP",
            f"{ours['lines_per_minute']:.1f}",
            f"{sdk['lines_per_minute']:.1f}",
            lines,
            "<= 1.0",
            lines <= 1.0,
        ),
    ]


def main(argv: list[str]) -> list[Row]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_outage")
    parser.add_argument("--window", type=float, default=60.0, help="seconds of outage (default 60)")
    parser.add_argument("--rate", type=float, default=20.0, help="agent invocations per second (default 20)")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "ADDRESS", "WINDOW", "RATE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, address, window, rate = args.child
        print(json.dumps(child(mode, address, float(window), float(rate))))
        return []
    rows = run(args.window, args.rate)
    print_rows(f"Agent during a backend outage — {machine()}", rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
