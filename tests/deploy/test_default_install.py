"""What a new user's ``pip install otel-eval`` gets, no extra: built from this checkout into a venv of its own, its
dependencies resolved afresh. It is not the suite's own environment: there google-adk pins google-genai below 3, while
a default install resolves the newest google-genai, which brings httpx2 and no httpx (a console sink that imported
httpx failed there at start-up). Run through the installed ``otel-eval`` command and the processor: an offline run, a
judged run against the loopback Gemini judge, and the processor's console and Phoenix sinks on an agent's
invocation."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.emit.sinks.servers import _install, free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NEWEST_GENAI = "3.6.1"
"""The newest google-genai otel-eval is checked against here, what a default install resolved on 2026-12-01 (pinned,
so that a later release adding fields to its models shows up when this is raised, not as a failed CI run)."""
SAMPLE = ROOT / "examples" / "traces" / "helm.json"
AGENT = """
from opentelemetry.sdk.trace import TracerProvider
from otel_eval import EvaluationSpanProcessor
from otel_eval.demo.workload import SCENARIOS, TravelAgent

provider = TracerProvider()
processor = EvaluationSpanProcessor(tracer_provider=provider)
provider.add_span_processor(processor)
TravelAgent(provider).run(next(s for s in SCENARIOS if s.key == "two_tools"))
assert processor.force_flush(60_000)
provider.shutdown()
"""

MIRROR = """
import json
from google.genai import types as genai
from otel_eval.model import genai as ours

for name in ours.__all__:
    model = getattr(ours, name)
    if hasattr(model, "model_fields") and hasattr(genai, name):
        assert list(model.model_fields) == list(getattr(genai, name).model_fields), name
part = {
    "inlineData": {"data": "AAAA", "mimeType": "application/pdf"},
    "documentMetadata": {},
    "videoMetadata": {"fps": 1.0, "contentLayers": ["FRAMES"]},
}
text = json.dumps({"role": "user", "parts": [part]})
mine, theirs = ours.Content.model_validate_json(text), genai.Content.model_validate_json(text)
assert mine.model_dump(mode="json") == theirs.model_dump(mode="json"), (mine, theirs)
print(genai.__name__, "mirrored")
"""
DOWN_BACKEND_AGENT = "import logging\nlogging.basicConfig()\n" + AGENT.replace(
    "assert processor.force_flush(60_000)", "assert not processor.force_flush(1_000)  # honest: nothing was delivered"
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ``bin`` directory of a venv holding ``otel-eval`` as ``pip install`` makes it (not editable, no extra)."""
    venv = tmp_path_factory.mktemp("default-install") / "venv"
    python = os.environ.get("OTEL_EVAL_TEST_PYTHON", sys.executable)  # another interpreter, to try other versions
    if not shutil.which(python):  # an empty or wrong path must not quietly test the suite's own Python instead
        pytest.fail(f"OTEL_EVAL_TEST_PYTHON={python!r}: not an interpreter")
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    _install(venv / "bin", str(ROOT), f"google-genai=={NEWEST_GENAI}")
    yield venv / "bin"


def _run(bin_dir: Path, *args: str | Path, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_", "PYTHON"))}
    # Run from the venv's bin, not the checkout: ``python -c`` would import the checkout's otel_eval before the installed one.
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=180, env={**env, **environ}, cwd=bin_dir
    )


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_the_default_install_has_no_extra(installed: Path) -> None:
    listed = _run(installed, installed / "python", "-m", "pip", "list", "--format=freeze")
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "otel-eval" in names and "google-genai" in names
    assert not names & {"google-adk", "openai", "anthropic", "litellm", "httpx"}, names
    assert "httpx2" in names, names  # google-genai 3's, which the backend sinks and readers use: no extra needed


def test_an_offline_run_and_a_judged_run(installed: Path) -> None:
    offline = _run(installed, installed / "otel-eval", "run", SAMPLE)
    assert offline.returncode == 0, offline.stderr
    assert "tool_call_count_v1" in offline.stdout

    port = free_port()
    judge = subprocess.Popen(
        [installed / "otel-eval", "judge-server", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: _listening(port), timeout=60), "judge-server did not start"
        judged = _run(
            installed,
            *(installed / "otel-eval", "run", SAMPLE, "-m", "hallucinations_v1", "-m", "safety_v1"),
            OTEL_EVAL_JUDGE_BASE_URL=f"http://127.0.0.1:{port}",
            OTEL_EVAL_JUDGE_API_KEY="any",
        )
    finally:
        judge.terminate()
        judge.wait(timeout=30)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    rows = [line for line in judged.stdout.splitlines() if "hallucinations_v1" in line or "safety_v1" in line]
    assert len(rows) == 2 and all("PASSED" in row for row in rows), judged.stdout
    assert "judge: 3 calls" in judged.stderr and " 0 failures" in judged.stderr, judged.stderr


def test_the_genai_stand_ins_are_the_installed_google_genais(installed: Path) -> None:
    """otel-eval's stand-ins for google-genai's content models have the installed google-genai's fields, in its order,
    and read a part with the fields google-genai 3.4 added as it does."""
    done = _run(installed, installed / "python", "-c", MIRROR)
    assert done.returncode == 0, done.stderr
    assert "mirrored" in done.stdout


def test_the_processor_prints_scores_with_the_console_sink(installed: Path) -> None:
    done = _run(installed, installed / "python", "-c", AGENT, OTEL_EVAL_CONSOLE="true")
    assert done.returncode == 0, done.stderr
    assert "tool_call_count_v1 2" in done.stdout, done.stdout


def test_a_backend_sink_needs_no_extra(installed: Path) -> None:
    """``OTEL_EVAL_SINKS=phoenix`` works on a default install: the sink is built and sends (here to a port nobody
    listens on, so it reports the outage and the agent still exits; tests/emit/sinks sends to a real Phoenix)."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = _run(
        installed,
        *(installed / "python", "-c", DOWN_BACKEND_AGENT),
        OTEL_EVAL_SINKS="console,phoenix",
        OTEL_EVAL_SINKS_INFORMATIONAL="true",  # without an eval set the efficiency scores are informational
        PHOENIX_COLLECTOR_ENDPOINT=endpoint,
    )
    assert done.returncode == 0, done.stderr
    assert "tool_call_count_v1 2" in done.stdout, done.stdout
    assert f"phoenix sink: backend unreachable at {endpoint} (ConnectError" in done.stderr, done.stderr
