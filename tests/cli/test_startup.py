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
