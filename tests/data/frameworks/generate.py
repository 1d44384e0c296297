"""Records the framework fixtures: small agents run offline under each framework's own OpenTelemetry instrumentation.

Every run is real framework and instrumentation code; only the model is scripted (Pydantic AI's ``FunctionModel``, a
LangChain chat model answering from the script, a smolagents ``Model`` subclass, and for the OpenAI Agents SDK and the
plain OpenAI client the real OpenAI client talking to a scripted OpenAI-compatible server on 127.0.0.1). Each run's
spans go through the real OpenTelemetry SDK to ``<producer>/<scenario>.otlp.json.gz``; the framework's own record of the
run (its message history, as the framework serialises it) to ``<producer>/<scenario>.record.json``, with the
installed versions. ``tests/reconstruct/test_frameworks.py`` compares the two.

Run it from the repository root in the generator's own virtualenv (never the project's: the frameworks pin
OpenTelemetry versions of their own)::

    python3 -m venv .venv-frameworks
    .venv-frameworks/bin/pip install -r tests/data/frameworks/requirements.txt
    .venv-frameworks/bin/python tests/data/frameworks/generate.py            # every producer
    .venv-frameworks/bin/python tests/data/frameworks/generate.py langgraph_openinference   # one

Each producer runs in its own process, so instrumentations never see each other's frameworks.
"""

from __future__ import annotations

import subprocess
import sys

import _producers

if __name__ == "__main__":
    names = sys.argv[1:] or list(_producers.PRODUCERS)
    unknown = [n for n in names if n not in _producers.PRODUCERS]
    if unknown:
        sys.exit(f"unknown producer(s) {unknown}; known: {sorted(_producers.PRODUCERS)}")
    if len(names) == 1:
        _producers.record(names[0])
    else:
        for name in names:
            print(f"recording {name}", flush=True)
            subprocess.run([sys.executable, __file__, name], check=True)
