"""A processor whose scores would go nowhere (no provider argument, no global SDK provider, no sink) says so once
at start-up, naming what to set; with any destination it stays quiet. Run in a fresh interpreter: the global
providers are process state that other tests set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from otel_eval.evaluation.embedded import NO_DESTINATION_WARNING

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, logging
    from opentelemetry import metrics
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from otel_eval import EvaluationSpanProcessor
    from otel_eval.emit.console import ConsoleRecordSink

    seen = []
    class Collect(logging.Handler):
        def emit(self, record):
            seen.append((record.levelname, record.getMessage()))
    logging.getLogger("otel_eval").addHandler(Collect())

    def warnings_of(make):
        seen.clear()
        make().shutdown()
        return [message for level, message in seen if level == "WARNING"]

    cases = {
        "bare": lambda: EvaluationSpanProcessor(),
        "from_env": lambda: EvaluationSpanProcessor.from_env(),
        "sink": lambda: EvaluationSpanProcessor(sinks=[ConsoleRecordSink()]),
        "logger_provider": lambda: EvaluationSpanProcessor(logger_provider=LoggerProvider()),
        "meter_provider": lambda: EvaluationSpanProcessor(meter_provider=MeterProvider()),
        "tracer_provider": lambda: EvaluationSpanProcessor(tracer_provider=TracerProvider()),
        "enrich": lambda: EvaluationSpanProcessor(enrich=SimpleSpanProcessor(ConsoleSpanExporter())),
    }
    result = {name: warnings_of(make) for name, make in cases.items()}
    metrics.set_meter_provider(MeterProvider())
    result["global_meter_provider"] = warnings_of(EvaluationSpanProcessor)
    print(json.dumps(result))
    """
)


pytestmark = pytest.mark.integration  # each test starts another Python process


def _run(**env: str) -> dict[str, list[str]]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    environ.update(PYTHONPATH=str(REPO), **env)
    process = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=environ, cwd=REPO
    )
    assert process.returncode == 0, process.stderr
    result: dict[str, list[str]] = json.loads(process.stdout.splitlines()[-1])
    return result


def test_the_warning_comes_once_when_nothing_receives_the_scores_and_never_otherwise() -> None:
    result = _run()
    assert result.pop("bare") == [NO_DESTINATION_WARNING]
    assert result.pop("from_env") == [NO_DESTINATION_WARNING]
    assert result == {name: [] for name in result}, result
    for what in ("logger_provider=", "meter_provider=", "set_logger_provider", "sinks=", "OTEL_EVAL_CONSOLE=true"):
        assert what in NO_DESTINATION_WARNING


def test_the_console_switch_is_a_destination() -> None:
    result = _run(OTEL_EVAL_CONSOLE="true")
    assert result["bare"] == [] and result["from_env"] == []
