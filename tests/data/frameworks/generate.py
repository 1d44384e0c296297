"""Records the framework fixtures: small agents run offline under each framework's own OpenTelemetry instrumentation.

Every run is real framework and instrumentation code; only the model is scripted (Pydantic AI's ``FunctionModel``, a
LangChain chat model answering from the script, a smolagents ``Model`` subclass, and for the OpenAI Agents SDK,
LlamaIndex, CrewAI, Strands, AutoGen, Microsoft Agent Framework and the plain clients the framework's own OpenAI or Gemini client talking to a
scripted server on 127.0.0.1). Each run's spans go through the real OpenTelemetry SDK to
``<producer>/<scenario>.otlp.json.gz``; the framework's own record of the run (its message history, as the framework
serialises it) to ``<producer>/<scenario>.record.json``, with the installed versions.
``tests/reconstruct/test_frameworks.py`` compares the two.

Run it from the repository root in the generator's own virtualenv (never the project's: the frameworks pin
OpenTelemetry versions of their own)::

    python3 -m venv .venv-frameworks
    .venv-frameworks/bin/pip install -r tests/data/frameworks/requirements.txt
    .venv-frameworks/bin/python tests/data/frameworks/generate.py            # every producer of requirements.txt
    .venv-frameworks/bin/python tests/data/frameworks/generate.py langgraph_openinference   # one

LlamaIndex, CrewAI, Strands, AutoGen and Microsoft Agent Framework conflict with those pins and with each other: each has a virtualenv of its
own, from ``requirements-<framework>.txt`` (``_producers.OWN_VIRTUALENV`` says which), named on the command line::

    python3 -m venv .venv-crewai
    .venv-crewai/bin/pip install -r tests/data/frameworks/requirements-crewai.txt
    .venv-crewai/bin/python tests/data/frameworks/generate.py crewai_openinference crewai_openinference_events

ADK for JavaScript runs under Node.js from the npm package in ``node/`` (its pins in ``node/package-lock.json``), driven
from Python (any of the virtualenvs above: only the scripted server runs there)::

    npm ci --prefix tests/data/frameworks/node
    .venv-frameworks/bin/python tests/data/frameworks/generate.py adk_js

The OpenAI Agents SDK for JavaScript likewise, from the npm package in ``node_openai_agents/``::

    npm ci --prefix tests/data/frameworks/node_openai_agents
    .venv-frameworks/bin/python tests/data/frameworks/generate.py openai_agents_js

Each producer runs in its own process, so instrumentations never see each other's frameworks.
"""

from __future__ import annotations

import subprocess
import sys

import _producers

if __name__ == "__main__":
    names = sys.argv[1:] or [n for n in _producers.PRODUCERS if n not in _producers.OWN_VIRTUALENV]
    unknown = [n for n in names if n not in _producers.PRODUCERS]
    if unknown:
        sys.exit(f"unknown producer(s) {unknown}; known: {sorted(_producers.PRODUCERS)}")
    if len(names) == 1:
        _producers.record(names[0])
    else:
        for name in names:
            print(f"recording {name}", flush=True)
            subprocess.run([sys.executable, __file__, name], check=True)
