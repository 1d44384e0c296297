"""docs/recipe-adk.md, run as written: examples/adk_agent.py into a real Phoenix and a real MLflow, judged by the
scripted judge its first line starts, then the same agent scraped by a real Prometheus (Debian's) with the shipped
rules. Each page's claim is read back through the server's own API: one hallucinated invocation and one failed tool
trajectory, found by the documented filters (the Spans tab's and the Traces tab's), the judge's traces hidden by the
documented filter, and the hallucination-rate alert pending."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.docs.recipes import JUDGE_LINE, REPO, recipe, run_bash
from tests.emit.sinks.servers import BackendServer, free_port, mlflow_server, phoenix_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.usefixtures("clean_genai_env"),
]

PAGE = "recipe-adk.md"
PAGE_TEXT = (REPO / "docs" / PAGE).read_text(encoding="utf-8")
PROJECT = "adk-weather-agent"
HALLUCINATED, WRONG_TOOL = "tokyo", "london"
QUESTIONS = ("paris", HALLUCINATED, WRONG_TOOL)
"""The example's golden eval cases (examples/adk_agent.py: GOLDEN), one per question: each score's provenance
names its case (``otel_eval.eval_id``), which is how the tests tell the three invocations apart."""
SPAN_FILTERS = {
    "evals['hallucinations_v1'].label == 'hallucinated'": HALLUCINATED,
    "evals['tool_trajectory_avg_score'].score < 1": WRONG_TOOL,
}
TRACE_FILTERS = {
    "any(a.name == 'hallucinations_v1' and a.label == 'hallucinated' for a in span_annotations)": HALLUCINATED,
    "any(a.name == 'tool_trajectory_avg_score' and a.score < 1 for a in span_annotations)": WRONG_TOOL,
}
NOT_JUDGE_SPANS = "span_kind != 'EVALUATOR'"
NOT_JUDGE_TRACES = "not any(span.parent_id is None and span.span_kind == 'EVALUATOR' for span in spans)"


def test_the_page_shows_the_filters_the_tests_run() -> None:
    for condition in (*SPAN_FILTERS, *TRACE_FILTERS, NOT_JUDGE_SPANS, NOT_JUDGE_TRACES):
        assert condition in PAGE_TEXT, condition
    for name in ("adk-phoenix", "adk-mlflow", "adk-prometheus"):
        assert recipe(PAGE, name).startswith(JUDGE_LINE + "\n")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped files the recipes name, as a fresh clone has them."""
    root = tmp_path_factory.mktemp("checkout")
    for folder in ("examples", "deploy"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


# --- Phoenix -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory, checkout: Path) -> Iterator[BackendServer]:
    server = phoenix_server(Path(tmp_path_factory.mktemp("phoenix")))
    server.start()
    _warm_up_phoenix(server, checkout)
    yield server
    server.stop()


def _warm_up_phoenix(phoenix: BackendServer, checkout: Path) -> None:
    """The recipe run once first, into a project of its own, with a patient exporter: a fresh Phoenix takes its first
    traces and annotations slowly (in CI once past the sink's 10 s read timeout, so that the recipe's run warned that
    Phoenix was unreachable before its scores went through), which a user's second run never sees."""
    script = recipe(PAGE, "adk-phoenix")
    assert f"={PROJECT}\n" in script
    script = "export OTEL_EXPORTER_OTLP_TIMEOUT=300\n" + script.replace(f"={PROJECT}\n", "=warm-up\n")
    process = run_bash(script, {"http://localhost:6006": phoenix.url}, cwd=checkout, timeout=600)
    assert process.returncode == 0, process.stderr


def _graphql(phoenix: BackendServer, query: str, **variables: Any) -> dict[str, Any]:
    response = httpx2.post(f"{phoenix.url}/graphql", json={"query": query, "variables": variables}, timeout=30)
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body
    return dict(body["data"])


_SPANS = """query ($id: ID!, $filter: String, $traces: String) { node(id: $id) { ... on Project {
    spans(first: 1000, filterCondition: $filter, traceFilterCondition: $traces) { edges { node {
        name spanKind parentId context { traceId } spanAnnotations { name label score metadata }
    } } }
} } }"""


def _spans(phoenix: BackendServer, spans: str | None = None, traces: str | None = None) -> list[dict[str, Any]]:
    projects = _graphql(phoenix, "{ projects { edges { node { id name } } } }")["projects"]["edges"]
    project = next(edge["node"]["id"] for edge in projects if edge["node"]["name"] == PROJECT)
    found = _graphql(phoenix, _SPANS, id=project, filter=spans, traces=traces)["node"]["spans"]["edges"]
    return [edge["node"] for edge in found]


def _question(span: dict[str, Any]) -> str | None:
    """The eval case of the invocation whose root span this is (from its annotations' provenance)."""
    cases = {_metadata(a).get("otel_eval.eval_id") for a in span["spanAnnotations"]}
    assert len(cases) <= 1, cases
    return next(iter(cases), None)


def _metadata(annotation: dict[str, Any]) -> dict[str, Any]:
    metadata = annotation["metadata"]
    return dict(json.loads(metadata) if isinstance(metadata, str) else metadata)


def _agent_roots(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The invocations' root spans: the ones carrying the scores (the judge's root spans carry none)."""
    return [s for s in spans if s["parentId"] is None and s["spanAnnotations"]]


@pytest.fixture(scope="module")
def adk_phoenix(phoenix: BackendServer, checkout: Path) -> subprocess.CompletedProcess[str]:
    script = recipe(PAGE, "adk-phoenix")
    return run_bash(script, {"http://localhost:6006": phoenix.url}, cwd=checkout, timeout=300)


def test_phoenix_shows_one_hallucinated_invocation_and_one_failed_tool_trajectory(
    phoenix: BackendServer, adk_phoenix: subprocess.CompletedProcess[str]
) -> None:
    assert adk_phoenix.returncode == 0, adk_phoenix.stderr
    assert "WARNING" not in adk_phoenix.stderr and "ERROR" not in adk_phoenix.stderr, adk_phoenix.stderr
    roots = _agent_roots(_spans(phoenix))
    assert sorted(_question(root) or "" for root in roots) == sorted(QUESTIONS)
    for root in roots:
        assert {a["name"] for a in root["spanAnnotations"]} == {
            "hallucinations_v1",
            "safety_v1",
            "tool_trajectory_avg_score",
        }
    for condition, question in SPAN_FILTERS.items():  # the Spans tab
        assert [_question(s) for s in _spans(phoenix, spans=condition)] == [question], condition
    for condition, question in TRACE_FILTERS.items():  # the Traces tab: the spans of the one matching trace
        assert [_question(s) for s in _agent_roots(_spans(phoenix, traces=condition))] == [question], condition


def test_the_documented_filters_hide_the_judges_own_traces(
    phoenix: BackendServer, adk_phoenix: subprocess.CompletedProcess[str]
) -> None:
    judge_roots = [s for s in _spans(phoenix) if s["parentId"] is None and s["name"].startswith("judge ")]
    assert len(judge_roots) == 2 * len(QUESTIONS) and {s["spanKind"] for s in judge_roots} == {"evaluator"}
    roots = [s for s in _spans(phoenix, spans=NOT_JUDGE_SPANS) if s["parentId"] is None]  # the Spans tab's roots
    assert sorted(_question(s) or "" for s in roots) == sorted(QUESTIONS)
    kept = _spans(phoenix, traces=NOT_JUDGE_TRACES)  # the Traces tab
    assert sorted(_question(s) or "" for s in kept if s["parentId"] is None) == sorted(QUESTIONS)


def test_the_evals_filter_is_refused_in_the_traces_tab_as_the_page_says(
    phoenix: BackendServer, adk_phoenix: subprocess.CompletedProcess[str]
) -> None:
    projects = _graphql(phoenix, "{ projects { edges { node { id name } } } }")["projects"]["edges"]
    project = next(edge["node"]["id"] for edge in projects if edge["node"]["name"] == PROJECT)
    response = httpx2.post(
        f"{phoenix.url}/graphql",
        json={"query": _SPANS, "variables": {"id": project, "traces": next(iter(SPAN_FILTERS))}},
        timeout=30,
    )
    assert "is not available in the trace filter" in response.text


# --- the alert, from the same run (runs after the Phoenix tests: the project then holds 30 more rounds) ----------


def test_the_hallucination_rate_alert_goes_pending_in_prometheus(
    phoenix: BackendServer, adk_phoenix: subprocess.CompletedProcess[str], checkout: Path
) -> None:
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is not installed: `apt-get install -y --no-install-recommends prometheus`")
    prometheus, metrics = free_port(), free_port()
    config = checkout / "examples" / "prometheus.yml"
    config.write_text(config.read_text().replace("127.0.0.1:9464", f"127.0.0.1:{metrics}"))
    script = recipe(PAGE, "adk-prometheus")
    replacements = {
        "http://localhost:6006": phoenix.url,
        "127.0.0.1:9090": f"127.0.0.1:{prometheus}",
        "--metrics-port 9464": f"--metrics-port {metrics}",
    }
    process = run_bash(script, replacements, cwd=checkout, timeout=600)
    assert process.returncode == 0, process.stderr
    assert '"alertname":"OtelEvalHallucinationRateHigh"' in process.stdout, process.stdout + process.stderr
    assert '"job":"adk-weather-agent"' in process.stdout and '"state":"pending"' in process.stdout
    hallucinated = _spans(phoenix, spans=next(iter(SPAN_FILTERS)))
    assert len(hallucinated) == 1 + 30, process.stderr  # the first recipe's, and one per round of this one


# --- MLflow --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendServer]:
    server = mlflow_server(Path(tmp_path_factory.mktemp("mlflow")))
    server.start()
    _warm_up(server)
    yield server
    server.stop()


def _warm_up(mlflow: BackendServer) -> None:
    """The example run once first, unjudged, into an experiment of its own, with a patient exporter: a fresh MLflow
    server ingests its first traces slowly (on a loaded machine longer than the exporter's 10 s), which a user's
    second run never sees."""
    created = httpx2.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": "warm-up"}, timeout=300)
    created.raise_for_status()
    script = (
        "export OTEL_LOGS_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_EXPORTER_OTLP_TIMEOUT=300\n"
        f"export OTEL_EXPORTER_OTLP_ENDPOINT={mlflow.url}\n"
        f"export OTEL_EXPORTER_OTLP_HEADERS=x-mlflow-experiment-id={created.json()['experiment_id']}\n"
        "python examples/adk_agent.py --otlp\n"
    )
    process = run_bash(script, {}, timeout=600)
    assert process.returncode == 0, process.stderr


def _search(mlflow: BackendServer, condition: str | None = None) -> list[dict[str, Any]]:
    body: dict[str, Any] = {
        "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "0"}}],
        "max_results": 100,
    }
    if condition is not None:
        body["filter"] = condition
    response = httpx2.post(f"{mlflow.url}/api/3.0/mlflow/traces/search", json=body, timeout=30)
    response.raise_for_status()
    return list(response.json().get("traces", []))


def _asked(trace: dict[str, Any]) -> str | None:
    """The eval case of an agent trace (from its assessments' provenance); None for the judge's traces."""
    cases = {a.get("metadata", {}).get("otel_eval.eval_id") for a in trace.get("assessments", [])}
    assert len(cases) <= 1, cases
    return next(iter(cases), None)


def test_mlflow_shows_one_hallucinated_invocation_and_one_failed_tool_trajectory(
    mlflow: BackendServer, checkout: Path
) -> None:
    process = run_bash(recipe(PAGE, "adk-mlflow"), {"http://localhost:5000": mlflow.url}, cwd=checkout, timeout=300)
    assert process.returncode == 0, process.stderr
    assert "WARNING" not in process.stderr, process.stderr
    assert sorted(q for t in _search(mlflow) if (q := _asked(t))) == sorted(QUESTIONS)
    assert [_asked(t) for t in _search(mlflow, "feedback.hallucinations_v1 < 0.8")] == [HALLUCINATED]
    assert [_asked(t) for t in _search(mlflow, "feedback.tool_trajectory_avg_score < 1")] == [WRONG_TOOL]
    for condition in ("feedback.hallucinations_v1 < 0.8", "feedback.tool_trajectory_avg_score < 1"):
        assert condition in PAGE_TEXT


# --- docs/backends-sinks.md: the weather recipe's Traces-tab filters (its Spans-tab ones: tests/emit/sinks) ------

WEATHER_TRACE_FILTERS = {
    "any(a.name == 'response_match_score' and a.score < 0.8 for a in span_annotations)": ["Rome"],
    "any(a.name == 'hallucinations_v1' and a.label == 'hallucinated' for a in span_annotations)": [],
    NOT_JUDGE_TRACES: ["Berlin", "Paris", "Rome"],
}


def test_the_weather_recipes_traces_tab_filters_find_what_the_page_says(phoenix: BackendServer) -> None:
    page = (REPO / "docs" / "backends-sinks.md").read_text(encoding="utf-8")
    process = run_bash(recipe("backends-sinks.md", "phoenix"), {"http://localhost:6006": phoenix.url}, timeout=300)
    assert process.returncode == 0, process.stderr
    assert "not delivered" not in process.stderr and "Failed to export" not in process.stderr, process.stderr
    projects = _graphql(phoenix, "{ projects { edges { node { id name } } } }")["projects"]["edges"]
    project = next(edge["node"]["id"] for edge in projects if edge["node"]["name"] == "weather-agent")
    query = _SPANS.replace("spanAnnotations { name label score metadata }", "attributes")
    for condition, cities in WEATHER_TRACE_FILTERS.items():
        assert " ".join(condition.split()) in " ".join(page.split()), condition
        found = _graphql(phoenix, query, id=project, traces=condition)["node"]["spans"]["edges"]
        roots = [edge["node"] for edge in found if edge["node"]["parentId"] is None]
        assert sorted(c for r in roots for c in ("Paris", "Berlin", "Rome") if c in r["attributes"]) == cities
