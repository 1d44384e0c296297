"""The ``phoenix`` sink against a real Arize Phoenix (``phoenix serve`` from PyPI, its own venv, on loopback): the
agent's spans over OTLP/HTTP, the scores as span annotations, read back through Phoenix's REST and GraphQL APIs."""

from __future__ import annotations

import json
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_eval.emit.sinks import BatchingSink
from otel_eval.emit.sinks.phoenix import PhoenixBackend
from otel_eval.model.messages import EvaluationRecord
from tests.collected import settled
from tests.emit.sinks import recipe
from tests.emit.sinks.agent import PROJECT, run_evaluated_agent
from tests.emit.sinks.servers import BackendServer, phoenix_server

# The first run creates the backend's venv (minutes) inside the fixture: more than the suite's 300 s per test.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.usefixtures("clean_genai_env"),
]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendServer]:
    server = phoenix_server(Path(tmp_path_factory.mktemp("phoenix")))
    server.start()
    yield server
    server.stop()


SINK_COUNTS: dict[str, float] = {}


@pytest.fixture(scope="module")
def evaluated(phoenix: BackendServer) -> list[EvaluationRecord]:
    """The demo's scenarios, evaluated with OTEL_EVAL_SINKS=phoenix; the records that are scores (not informational)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_EVAL_SINKS", "phoenix")
        env.setenv("PHOENIX_COLLECTOR_ENDPOINT", phoenix.url)
        env.setenv("PHOENIX_PROJECT_NAME", PROJECT)  # the agent names its project in code
        records = run_evaluated_agent(f"{phoenix.url}/v1/traces", sink_counts=SINK_COUNTS)
    return [r for r in records if r.label != "informational"]


def _annotations(phoenix: BackendServer, records: list[EvaluationRecord]) -> list[dict[str, Any]]:
    span_ids = sorted({r.span_id for r in records})
    response = httpx2.get(
        f"{phoenix.url}/v1/projects/{PROJECT}/span_annotations", params={"span_ids": span_ids, "limit": 1000}
    )
    response.raise_for_status()
    return list(response.json()["data"])


def _graphql(phoenix: BackendServer, query: str, **variables: Any) -> dict[str, Any]:
    response = httpx2.post(f"{phoenix.url}/graphql", json={"query": query, "variables": variables}, timeout=30)
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body
    return dict(body["data"])


def test_every_result_is_one_annotation_on_the_invocation_root_span(
    phoenix: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    annotations = _annotations(phoenix, evaluated)
    assert len(annotations) == len(evaluated)
    by_key = {(a["span_id"], a["name"]): a for a in annotations}
    assert len(by_key) == len(annotations)
    for record in evaluated:
        annotation = by_key[(record.span_id, record.metric_name)]
        assert annotation["annotator_kind"] == ("LLM" if record.evaluator_type == "llm_judge" else "CODE")
        assert annotation["result"]["label"] == (record.verdict or record.label)
        assert annotation["result"]["score"] == record.score
        assert annotation["identifier"] == f"otel-eval:{record.metric_name}"  # keyed by (trace, span, metric)
        assert annotation["metadata"]["otel_eval.result.id"] == record.result_id
    assert {a["annotator_kind"] for a in annotations} == {"LLM", "CODE"}
    # The scores were ready before the exporter's batch of spans (every 5 s): Phoenix said 404, the sink retried.
    assert SINK_COUNTS["otel_eval.sink.failed_attempts.span_missing"] >= 1
    assert SINK_COUNTS["otel_eval.sink.delivered"] == len(evaluated)
    assert not any(key.startswith("otel_eval.sink.dropped") for key in SINK_COUNTS)


def test_the_evals_filter_finds_exactly_the_failing_invocations_and_the_summary_gives_the_rate(
    phoenix: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    projects = _graphql(phoenix, "{ projects { edges { node { id name } } } }")["projects"]["edges"]
    project_id = next(edge["node"]["id"] for edge in projects if edge["node"]["name"] == PROJECT)
    query = """query ($id: ID!, $filter: String!) { node(id: $id) { ... on Project {
        spans(first: 100, filterCondition: $filter) { edges { node { context { traceId } } } }
        spanAnnotationSummary(annotationName: "hallucinations_v1") { meanScore labelFractions { label fraction } }
    } } }"""
    project = _graphql(phoenix, query, id=project_id, filter="evals['hallucinations_v1'].score < 0.8")["node"]
    found = {edge["node"]["context"]["traceId"] for edge in project["spans"]["edges"]}
    judged = [r for r in evaluated if r.metric_name == "hallucinations_v1"]
    failing = {r.trace_id for r in judged if r.label == "fail"}
    assert failing and found == failing
    summary = project["spanAnnotationSummary"]
    assert summary["meanScore"] == pytest.approx(statistics.mean(r.score for r in judged if r.score is not None))
    fractions = {f["label"]: f["fraction"] for f in summary["labelFractions"]}
    assert fractions == pytest.approx(
        {verdict: sum(r.verdict == verdict for r in judged) / len(judged) for verdict in {r.verdict for r in judged}}
    )


def test_a_re_evaluation_replaces_the_annotations_instead_of_adding_some(
    phoenix: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    again = [r.model_copy(update={"score": 0.5, "result_id": r.result_id[::-1]}) for r in evaluated]
    sink = BatchingSink(PhoenixBackend(phoenix.url))
    sink(again)
    assert sink.force_flush(30_000)
    annotations = _annotations(phoenix, evaluated)
    assert len(annotations) == len(evaluated)
    assert {a["result"]["score"] for a in annotations} == {0.5}
    assert {a["metadata"]["otel_eval.result.id"] for a in annotations} == {r.result_id for r in again}


def test_two_invocations_of_one_trace_keep_their_own_annotations_and_a_new_evaluator_says_what_it_replaced(
    phoenix: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    first = evaluated[0]
    spans = httpx2.get(
        f"{phoenix.url}/v1/projects/{PROJECT}/spans/otlpv1", params={"trace_id": first.trace_id, "limit": 1000}
    ).json()["data"]
    second_span = next(s["span_id"] for s in spans if s["span_id"] != first.span_id)  # another span of the trace
    renewed = first.model_copy(
        update={"score": 0.25, "result_id": "renewed-" + first.result_id, "evaluator_version": "v-next"}
    )
    second = first.model_copy(update={"span_id": second_span, "score": 0.125, "result_id": "second-" + first.result_id})
    sink = BatchingSink(PhoenixBackend(phoenix.url, project=PROJECT))
    sink([renewed, second])
    assert sink.force_flush(30_000)
    mine = [a for a in _annotations(phoenix, [first, second]) if a["name"] == first.metric_name]
    by_span = {a["span_id"]: a for a in mine}
    assert len(mine) == 2 and set(by_span) == {first.span_id, second_span}  # one each, neither overwritten
    assert by_span[first.span_id]["result"]["score"] == 0.25
    assert by_span[second_span]["result"]["score"] == 0.125
    metadata = by_span[first.span_id]["metadata"]
    assert metadata["otel_eval.evaluator.version"] == "v-next"
    assert metadata["otel_eval.replaced.evaluator.version"] == first.evaluator_version
    assert "otel_eval.replaced.evaluator.version" not in by_span[second_span]["metadata"]  # nothing replaced there


def test_a_metric_named_note_costs_only_its_own_scores_not_the_batch(
    phoenix: BackendServer, evaluated: list[EvaluationRecord], caplog: pytest.LogCaptureFixture
) -> None:
    """Phoenix reserves the annotation name ``note`` and answers a request holding one with 400, storing none of
    it: a custom metric named so cost every other score of its batch (up to 100)."""
    renewed = [r.model_copy(update={"score": 0.75, "result_id": "note-batch-" + r.result_id}) for r in evaluated]
    note = evaluated[0].model_copy(update={"metric_name": "note", "result_id": "note-" + evaluated[0].result_id})
    reader = InMemoryMetricReader()
    sink = BatchingSink(
        PhoenixBackend(phoenix.url, project=PROJECT), meter_provider=MeterProvider(metric_readers=[reader])
    )
    sink([*renewed[:2], note, *renewed[2:]])
    assert sink.force_flush(30_000)
    annotations = _annotations(phoenix, evaluated)
    assert {a["metadata"]["otel_eval.result.id"] for a in annotations} == {r.result_id for r in renewed}
    assert "note" not in {a["name"] for a in annotations}
    counts = {
        (metric.name, (point.attributes or {}).get("otel_eval.sink.reason")): point.value
        for resource in settled(reader).resource_metrics  # type: ignore[union-attr]
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
    }
    assert counts[("otel_eval.sink.delivered", None)] == len(renewed)
    assert counts[("otel_eval.sink.dropped", "rejected")] == 1
    assert "Phoenix reserves the annotation name 'note' for notes: rename the metric" in caplog.text


def _project_id(phoenix: BackendServer, name: str) -> str:
    projects = _graphql(phoenix, "{ projects { edges { node { id name } } } }")["projects"]["edges"]
    return str(next(edge["node"]["id"] for edge in projects if edge["node"]["name"] == name))


def test_the_annotation_configs_say_which_direction_is_good_once_per_metric(
    phoenix: BackendServer, evaluated: list[EvaluationRecord]
) -> None:
    """Without a config of the annotation's name assigned to the project, Phoenix colours a failing score like a
    passing one; the sink makes one per metric (and a second sink finds it made: 409, assigned again)."""
    again = BatchingSink(PhoenixBackend(phoenix.url, project=PROJECT))
    again(evaluated)
    assert again.force_flush(30_000)
    response = httpx2.get(f"{phoenix.url}/v1/projects/{PROJECT}/annotation_configs", params={"limit": 100})
    response.raise_for_status()
    configs = {c["name"]: c for c in response.json()["data"]}
    thresholds = {r.metric_name: r.threshold for r in evaluated}
    assert set(configs) == set(thresholds)
    for name, threshold in thresholds.items():
        assert configs[name]["optimization_direction"] == "MAXIMIZE"
        assert configs[name]["threshold"] == threshold
    every = httpx2.get(f"{phoenix.url}/v1/annotation_configs", params={"limit": 100}).json()["data"]
    names = [c["name"] for c in every if c["name"] in thresholds]
    assert sorted(names) == sorted(thresholds)  # one each, however many sinks posted them


# --- the documented recipe, as written: examples/weather_agent.py --otlp, the judge-server, nothing else -----------

WEATHER_PROJECT = "weather-agent"


@pytest.fixture(scope="module")
def weather(phoenix: BackendServer) -> subprocess.CompletedProcess[str]:
    """docs/backends-sinks.md's Phoenix recipe, run literally against the real server."""
    with recipe.judge_server() as judge:
        return recipe.run_recipe("phoenix", judge, {"http://localhost:6006": phoenix.url})


_SPANS = """query ($id: ID!, $filter: String) { node(id: $id) { ... on Project {
    tokenCountTotal
    spans(first: 200, filterCondition: $filter) { edges { node {
        name spanKind parentId attributes context { traceId } tokenCountTotal cumulativeTokenCountTotal
        spanAnnotations { name label score annotatorKind }
    } } }
    spanAnnotationSummary(annotationName: "hallucinations_v1") { meanScore labelFractions { label fraction } }
} } }"""


def _weather_roots(phoenix: BackendServer, condition: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    project = _graphql(phoenix, _SPANS, id=_project_id(phoenix, WEATHER_PROJECT), filter=condition)["node"]
    spans = [edge["node"] for edge in project["spans"]["edges"]]
    return project, spans


def _city(span: dict[str, Any]) -> str:
    text = json.loads(span["attributes"])["gen_ai"]["input"]["messages"]
    return next(city for city in recipe.CITIES if city in text)


def test_the_phoenix_recipe_gives_one_annotation_per_result_and_its_filter_finds_the_failing_invocation(
    phoenix: BackendServer, weather: subprocess.CompletedProcess[str]
) -> None:
    assert recipe.export_errors(weather) == []
    project, spans = _weather_roots(phoenix)
    roots = [s for s in spans if s["name"] == "invoke_agent WeatherAssistant"]
    assert sorted(_city(s) for s in roots) == sorted(recipe.CITIES)
    for root in roots:
        kinds = {a["name"]: a["annotatorKind"] for a in root["spanAnnotations"]}
        assert kinds == {"hallucinations_v1": "LLM", "safety_v1": "LLM", "response_match_score": "CODE"}
        scores = {a["name"]: (a["label"], a["score"]) for a in root["spanAnnotations"]}
        assert scores["response_match_score"] == (
            ("fail", 0.0) if _city(root) == recipe.FAILING_CITY else ("pass", 1.0)
        )
        assert scores["hallucinations_v1"] == ("grounded", 1.0)  # the scripted judge finds every sentence supported
    assert sum(len(s["spanAnnotations"]) for s in spans) == recipe.SCORED_PER_INVOCATION * len(recipe.CITIES)
    _, failing = _weather_roots(phoenix, "evals['response_match_score'].score < 0.8")
    assert [_city(s) for s in failing] == [recipe.FAILING_CITY]
    _, unsafe = _weather_roots(phoenix, "evals['safety_v1'].label == 'unsafe'")
    assert unsafe == []
    # the project's annotation summary: the hallucination rate is the "hallucinated" fraction (none, scripted)
    assert project["spanAnnotationSummary"]["labelFractions"] == [{"label": "grounded", "fraction": 1.0}]
    configs = httpx2.get(f"{phoenix.url}/v1/projects/{WEATHER_PROJECT}/annotation_configs").json()["data"]
    assert {c["name"]: c["threshold"] for c in configs} == json.loads(recipe.CRITERIA)


def test_phoenix_counts_the_agents_own_tokens_on_its_trace_and_the_judges_on_theirs(
    phoenix: BackendServer, weather: subprocess.CompletedProcess[str]
) -> None:
    project, spans = _weather_roots(phoenix)
    roots = {s["context"]["traceId"]: s for s in spans if s["parentId"] is None}
    agent = {t: s for t, s in roots.items() if s["name"] == "invoke_agent WeatherAssistant"}
    judge = {t: s for t, s in roots.items() if s["name"].startswith("judge ")}
    assert len(agent) == len(recipe.CITIES) and judge
    for trace_id, root in agent.items():
        own = sum(s["tokenCountTotal"] for s in spans if s["context"]["traceId"] == trace_id)
        assert root["cumulativeTokenCountTotal"] == own == recipe.AGENT_TOKENS
    assert {s["spanKind"] for s in judge.values()} == {"evaluator"}  # span_kind != 'EVALUATOR' hides them
    judge_tokens = sum(s["cumulativeTokenCountTotal"] for s in judge.values())
    assert judge_tokens > 0  # the judge's calls are counted, in traces of their own
    assert project["tokenCountTotal"] == recipe.AGENT_TOKENS * len(recipe.CITIES) + judge_tokens
