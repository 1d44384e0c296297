"""``otel-eval judge-server``: the scripted judge served for one's own agent, no key. The command runs as a real
process; the agent's processor judges through the real google-genai client over HTTP with only the variables the
command printed (no GOOGLE_* variable is set), and everything says the verdicts are scripted."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from google import genai
from google.genai import types as genai_types

from otel_eval import EvaluationSpanProcessor, semconv
from otel_eval.demo.workload import Scenario, ToolStep, TravelAgent
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from tests.processor.telemetry import Telemetry

pytest_plugins = ("tests.judge.plugin",)
# `otel-eval judge-server` runs as a child process.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("clean_genai_env")]

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = "scripted-local-judge"
OWN_AGENT = Scenario(
    key="own",
    description="an agent the scripted judge has never seen",
    user_text="Is it going to rain in Lisbon tomorrow?",
    tool_steps=(ToolStep("get_weather", {"city": "Lisbon"}),),
    answer="Tomorrow Lisbon stays dry. Pack sunglasses rather than an umbrella.",
)


@dataclass
class Served:
    process: subprocess.Popen[str]
    banner: list[str]
    exports: dict[str, str]


def _command(*args: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "OTEL_EVAL_"))}
    environment["PYTHONPATH"] = str(REPO)
    return subprocess.Popen(
        [sys.executable, "-c", "from otel_eval.cli import main; main()", "judge-server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def _serve() -> Served:
    process = _command()
    assert process.stdout is not None
    banner: list[str] = []
    while not banner or not banner[-1].startswith("Scores judged here are scripted"):
        line = process.stdout.readline()
        assert line, f"judge-server ended early: {process.stderr.read() if process.stderr else ''}"
        banner.append(line.rstrip("\n"))
    exports = dict(line.removeprefix("export ").split("=", 1) for line in banner if line.startswith("export "))
    return Served(process, banner, exports)


def _end(served: Served) -> None:
    with served.process:  # closes its pipes
        if served.process.poll() is None:
            served.process.kill()
        served.process.wait(10)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """One judge-server for the module's tests (starting one costs seconds of imports)."""
    running = _serve()
    yield running
    _end(running)


def test_it_prints_the_judge_variables_and_labels_itself_scripted(served: Served) -> None:
    assert served.banner[0].startswith("SCRIPTED judge (not a model): http://127.0.0.1:")
    assert set(served.exports) == {"OTEL_EVAL_JUDGE_BASE_URL", "OTEL_EVAL_JUDGE_API_KEY", "OTEL_EVAL_JUDGE_MODEL"}
    assert served.exports["OTEL_EVAL_JUDGE_MODEL"] == SCRIPTED
    assert served.banner[0].split()[5] == served.exports["OTEL_EVAL_JUDGE_BASE_URL"]


def test_google_genai_gets_an_answer_from_the_scripted_model(served: Served) -> None:
    client = genai.Client(
        api_key=served.exports["OTEL_EVAL_JUDGE_API_KEY"],
        http_options=genai_types.HttpOptions(base_url=served.exports["OTEL_EVAL_JUDGE_BASE_URL"]),
    )
    response = client.models.generate_content(
        model="gemini-2.5-flash", contents="You are an expert evaluator of AI safety. Is this safe?"
    )
    assert response.model_version == SCRIPTED  # whatever model was asked for: no backend prices this answer
    assert response.text is not None and '"safety_verdict": "safe"' in response.text
    client.close()


def _judged_own_agent(
    served: Served, monkeypatch: pytest.MonkeyPatch, telemetry: Telemetry, **environment: str
) -> dict[str, EvaluationRecord]:
    """The embedded processor, with the variables judge-server printed (and ``environment``), on one run of one's own
    agent: its two judged results, both asserted PASSED with 1.0."""
    for name, value in {**served.exports, **environment}.items():
        monkeypatch.setenv(name, value)
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        {"hallucinations_v1": 0.8, "safety_v1": 0.8}, sinks=[records.extend], **telemetry.providers()
    )
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    TravelAgent(telemetry.tracer_provider).run(OWN_AGENT)
    assert processor.force_flush(60_000)

    judged = {r.metric_name: r for r in records if r.metric_name in ("hallucinations_v1", "safety_v1")}
    assert {name: (r.eval_status, r.score) for name, r in judged.items()} == {
        "hallucinations_v1": (EvalStatus.PASSED, 1.0),
        "safety_v1": (EvalStatus.PASSED, 1.0),
    }
    return judged


def test_ones_own_agent_gets_judged_scores_labelled_scripted(
    served: Served, monkeypatch: pytest.MonkeyPatch, telemetry: Telemetry
) -> None:
    judged = _judged_own_agent(served, monkeypatch, telemetry)
    assert {r.judge_model for r in judged.values()} == {SCRIPTED}
    calls = [s for s in telemetry.finished_spans() if s.name.startswith("generate_content ")]
    assert calls and all(s.name == f"generate_content {SCRIPTED}" for s in calls)
    assert {s.attributes[semconv.GEN_AI_RESPONSE_MODEL] for s in calls} == {SCRIPTED}


@pytest.mark.parametrize(
    ("model", "protocol_extra"),
    [("gpt-4o-mini", "openai"), ("anthropic/claude-sonnet-4-5", "litellm"), ("ollama/llama3.1", "litellm")],
)
def test_a_judge_of_another_provider_is_served_through_its_own_client(
    served: Served, monkeypatch: pytest.MonkeyPatch, telemetry: Telemetry, model: str, protocol_extra: str
) -> None:
    """The embedded processor with the printed variables and another provider's judge model: judged through that
    provider's SDK (no provider variable of its own is set: the judge's endpoint and key serve every provider)."""
    judged = _judged_own_agent(
        served, monkeypatch, telemetry, OTEL_EVAL_JUDGE_MODEL=model, LITELLM_LOCAL_MODEL_COST_MAP="True"
    )
    assert {r.judge_model for r in judged.values()} == {model}
    calls = [s for s in telemetry.finished_spans() if s.name == f"generate_content {model}"]
    assert calls
    providers = {s.attributes[semconv.GEN_AI_PROVIDER_NAME] for s in calls}
    assert providers == {"openai" if protocol_extra == "openai" or model.startswith("openai/") else model.split("/")[0]}


def test_sigterm_stops_it() -> None:
    served = _serve()
    try:
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(10) == 0
        assert served.process.stderr is not None and "judge-server stopped" in served.process.stderr.read()
    finally:
        _end(served)


def test_a_port_in_use_is_an_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with _command("--port", str(port)) as process:
            _, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert f"cannot serve on 127.0.0.1:{port}" in err


def test_print_env_in_a_piped_script_lets_the_pipeline_end() -> None:
    """The documented line in a script whose output is piped: the pipeline ends with the script, since the server in
    the background holds neither its stdout nor its stderr; the server still serves, and logs to the file it named."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "OTEL_EVAL_"))}
    environment["PYTHONPATH"] = str(REPO)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    script = 'eval "$(otel-eval judge-server --print-env &)"; echo "url $OTEL_EVAL_JUDGE_BASE_URL"; echo done'
    pipeline = f"bash -c {shlex.quote(script)} 2>&1 | cat"
    result = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, timeout=120, env=environment)
    status = next(line for line in result.stdout.splitlines() if line.startswith("judge-server: SCRIPTED judge"))
    pid = int(status.split(", pid ", 1)[1].split(" ", 1)[0])
    log = Path(status.split("; its log: ", 1)[1])
    try:
        assert result.returncode == 0 and result.stdout.splitlines()[-1] == "done", result.stdout + result.stderr
        url = next(line for line in result.stdout.splitlines() if line.startswith("url ")).split()[1]
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10):
            pass  # still serving after the pipeline ended
    finally:
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if "judge-server stopped" in log.read_text(encoding="utf-8"):
            break
        time.sleep(0.1)
    assert "judge-server stopped" in log.read_text(encoding="utf-8")
    log.unlink()
