"""The command line and the metric registry load without google-genai's client, nltk, numpy or rich.

google.genai.types and rouge-score's tokenizer (nltk, with scipy and scikit-learn when installed) cost seconds at
import, numpy and rich tens of milliseconds; they are loaded only when a judged metric or ROUGE runs or a table is
printed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # a fresh interpreter, so that nothing is imported already


def test_cli_and_registry_import_without_heavy_dependencies() -> None:
    code = (
        "import json, sys\n"
        "import otel_eval.cli\n"
        "from otel_eval.metrics import default_registry\n"
        "default_registry()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'scipy', 'numpy', 'rich') or m.startswith('google.genai'))))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(completed.stdout) == []


def test_an_embedded_evaluation_with_its_own_meter_provider_scores_without_google_genai() -> None:
    """The evaluation process builds its engine with its own meter provider, and so a judge client of its own: made
    without google-genai (the judge loads it for a Gemini call), the process starts in about half the time."""
    code = (
        "import json, sys\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from otel_eval import EvaluationSpanProcessor\n"
        "from otel_eval.demo.workload import SCENARIOS, TravelAgent\n"
        "records = []\n"
        "processor = EvaluationSpanProcessor(meter_provider=MeterProvider(), sinks=[records.extend])\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(processor)\n"
        "TravelAgent(provider).run(SCENARIOS[0])\n"
        "assert processor.force_flush(30_000)\n"
        "provider.shutdown()\n"
        "print(json.dumps({'records': len(records), 'genai': [m for m in sys.modules if m.startswith('google.genai')]}))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    report = json.loads(completed.stdout.splitlines()[-1])
    assert report["records"] > 0  # it scored ...
    assert report["genai"] == []  # ... and never loaded google-genai
