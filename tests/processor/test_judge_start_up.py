"""A judged metric the judge cannot serve is said when the processor starts, naming the metric and what to set.

Before, the processor said nothing: ``hallucinations_v1`` in the criteria without a key for its judge's provider
came out NOT_EVALUATED (``judge_not_configured``) on every invocation, with no log line, and a judge model named in
``OTEL_EVAL_JUDGE_MODEL`` whose provider has no credentials (``claude-sonnet-4-5`` with only
``ANTHROPIC_API_KEY``: that name is Claude on Vertex AI) silently dropped the judged default metrics.
``otel-eval run`` says the same at start-up (``warning: hallucinations_v1: judge not configured: ...``).

The processor says it from its evaluation thread as it starts, not from the caller's: asking a LiteLLM judge whether
it is configured imports LiteLLM, seconds the agent's thread waited for when the processor was made.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.judge import JUDGE_NOT_CONFIGURED
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model.messages import EvaluationRecord
from tests.waiting import wait_until

LOGGER = "otel_eval.evaluation.embedded"


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_a_judged_metric_without_credentials_for_its_judge_is_said_at_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        {"hallucinations_v1": 0.8, "tool_trajectory_avg_score": 1.0}, sinks=[records.extend]
    )
    assert wait_until(lambda: _said(caplog))  # from the evaluation thread, as it starts
    said = _said(caplog)
    assert len(said) == 1, said
    assert "hallucinations_v1 is NOT_EVALUATED on every invocation (judge_not_configured)" in said[0]
    assert "GOOGLE_API_KEY" in said[0] and "OPENAI_API_KEY" in said[0]  # what to set
    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    provider.shutdown()
    judged = [r for r in records if r.metric_name == "hallucinations_v1"]
    assert judged and {r.error_type for r in judged} == {JUDGE_NOT_CONFIGURED}  # what the warning announced
    assert len(_said(caplog)) == 1  # once, not per invocation


@pytest.mark.parametrize(
    ("model", "variables", "what_to_set"),
    [
        # That name is Claude on Vertex AI: the Anthropic key does not serve it.
        ("claude-sonnet-4-5", {"ANTHROPIC_API_KEY": "sk-ant-not-shown"}, "'anthropic/claude-sonnet-4-5'"),
        ("anthropic/claude-sonnet-4-5", {"OPENAI_API_KEY": "sk-not-shown"}, "set ANTHROPIC_API_KEY"),  # LiteLLM's
    ],
)
def test_a_judge_model_whose_provider_has_no_credentials_says_the_judged_defaults_do_not_run(
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    variables: dict[str, str],
    what_to_set: str,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MODEL", model)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    processor = EvaluationSpanProcessor.from_env(sinks=[lambda records: None])
    processor.shutdown()  # waits for the evaluation thread, which said it as it started
    said = _said(caplog)
    assert len(said) == 1, said
    assert "the judged metrics (hallucinations_v1, safety_v1) do not run" in said[0]
    assert what_to_set in said[0]
    assert "not-shown" not in said[0]


_IMPORTING_THREADS = """
import importlib.abc, json, sys, threading, time

threads = []

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "litellm":
            threads.append(threading.current_thread().name)
        return None

sys.meta_path.insert(0, Watch())
from otel_eval import EvaluationSpanProcessor

processor = EvaluationSpanProcessor.from_env(sinks=[lambda records: None])
made = list(threads)
deadline = time.monotonic() + 120
while not threads and time.monotonic() < deadline:  # the judge is asked as the evaluation thread starts
    time.sleep(0.01)
processor.shutdown()
print(json.dumps({"while_made": made, "importing": threads}))
"""


def test_a_litellm_judge_is_not_imported_on_the_thread_that_makes_the_processor() -> None:
    """Before, ``from_env()`` imported LiteLLM on the caller's thread (4-8 s) to ask whether the judge was
    configured. LiteLLM is imported still (the judged default metrics run only when it says the key is set), on the
    evaluation thread."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EVAL_", "ANTHROPIC_"))}
    environ.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
        OTEL_EVAL_JUDGE_MODEL="anthropic/claude-sonnet-4-5",
        ANTHROPIC_API_KEY="sk-ant-fake",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTING_THREADS], env=environ, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    # The evaluation threads start while the processor is made, so they may import it before from_env returns.
    assert "MainThread" not in found["while_made"], found
    assert found["importing"] and "MainThread" not in found["importing"], found


def test_the_same_warning_comes_from_the_evaluation_process(capfd: pytest.CaptureFixture[str]) -> None:
    processor = EvaluationSpanProcessor(
        {"safety_v1": 0.9}, settings=ProcessorSettings(isolation="process"), sinks=[lambda records: None]
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])  # the evaluation process builds its evaluation with the first batch
    assert processor.force_flush(60_000)
    provider.shutdown()
    err = capfd.readouterr().err
    assert "otel-eval evaluation process: WARNING" in err
    assert "safety_v1 is NOT_EVALUATED on every invocation (judge_not_configured)" in err


@pytest.mark.parametrize(
    "variables",
    [
        {},  # no judge wanted: the defaults run without the judged metrics, quietly (as documented)
        {"OTEL_EVAL_JUDGE_MODEL": "gpt-4o-mini", "OPENAI_API_KEY": "sk-test"},  # a judge that can be served
    ],
)
def test_nothing_is_said_when_every_planned_judge_can_be_served(
    variables: dict[str, str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    criteria = {"hallucinations_v1": 0.8} if variables else None
    EvaluationSpanProcessor(criteria, sinks=[lambda records: None]).shutdown()
    assert _said(caplog) == []


def _judged_by(model: str) -> dict[str, object]:
    return {"criteria": {"safety_v1": {"threshold": 0.8, "judge_model_options": {"judge_model": model}}}}


def test_the_criterions_own_judge_model_is_the_one_asked_about(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the default judge (Gemini) was asked whatever the criterion's ``judge_model``: served by OpenAI's
    variables, it was said NOT_EVALUATED on every invocation ("set GOOGLE_API_KEY"); not served, nothing was said."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-shown")
    caplog.set_level(logging.WARNING, logger=LOGGER)
    EvaluationSpanProcessor(_judged_by("gpt-4o-mini"), sinks=[lambda records: None]).shutdown()
    assert _said(caplog) == []
    EvaluationSpanProcessor(_judged_by("claude-sonnet-4-5"), sinks=[lambda records: None]).shutdown()
    [said] = _said(caplog)
    assert "safety_v1 is NOT_EVALUATED on every invocation (judge_not_configured)" in said
    assert "'claude-sonnet-4-5'" in said and "GOOGLE_CLOUD_PROJECT" in said


_GENAI_IMPORTED = """
import json, sys
from opentelemetry.sdk.trace import TracerProvider
from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.metrics import EFFICIENCY_METRICS

records = []
if sys.argv[1] == "efficiency":
    settings = ProcessorSettings(isolation="process", metrics=EFFICIENCY_METRICS)
    processor = EvaluationSpanProcessor(settings=settings, sinks=[records.extend])
else:
    settings = ProcessorSettings(isolation="process")
    processor = EvaluationSpanProcessor({"hallucinations_v1": 0.5}, settings=settings, sinks=[records.extend])
provider = TracerProvider()
provider.add_span_processor(processor)
TravelAgent(provider).run(SCENARIOS[0])
assert processor.force_flush(60_000)
provider.shutdown()
print(json.dumps(sorted({r.metric_name for r in records})))
"""


@pytest.mark.parametrize("criteria", ["efficiency", "hallucinations"])
def test_the_evaluation_process_imports_google_genai_only_when_a_judged_metric_runs(criteria: str) -> None:
    """Before, with judge credentials set (``GOOGLE_API_KEY``, which an ADK agent has anyway), every metric's
    construction read the judge's ``uses_vertex`` (Python 3.11's ``isinstance`` against the ``Judge`` protocol reads
    each property), which imports google-genai and makes its client: about half a CPU-second of each evaluation
    process's start with only the efficiency metrics selected. A judged metric still reads it when made. Both
    processes print their imports (``PYTHONPROFILEIMPORTTIME``) on the captured stderr."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EVAL_", "GOOGLE_", "GEMINI_"))}
    environ.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
        PYTHONPROFILEIMPORTTIME="1",
        GOOGLE_API_KEY="test-key-not-used",
        GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:9",
    )
    done = subprocess.run(
        [sys.executable, "-c", _GENAI_IMPORTED, criteria], env=environ, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads(done.stdout.splitlines()[-1])
    imported_genai = " google.genai\n" in done.stderr
    if criteria == "efficiency":
        assert metrics == sorted(EFFICIENCY_METRICS) and not imported_genai
    else:
        assert "hallucinations_v1" in metrics and imported_genai
