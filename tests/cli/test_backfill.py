"""``otel-eval run --from phoenix|mlflow --sinks ...`` against real Phoenix and MLflow servers (from PyPI, own venvs,
on loopback): the demo agent's spans exported over OTLP/HTTP by the real SDK exporter, with no evaluation, to both
servers and to an OTLP JSON file; then the backfill, the scores read back through each backend's API and compared
with the file's; the re-run that changes nothing; a backend that goes away."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.demo.golden import golden_eval_set
from tests.cli.conftest import CliResult
from tests.docs import recipes
from tests.emit.sinks.servers import BackendServer, CuttableLink, mlflow_server, phoenix_server, start_all
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1200)]

PROJECT = "backfill-agent"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
METRICS = sorted(CRITERIA)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BackendServer, BackendServer]]:
    phoenix = phoenix_server(Path(tmp_path_factory.mktemp("phoenix")))
    mlflow = mlflow_server(Path(tmp_path_factory.mktemp("mlflow")))
    start_all(phoenix, mlflow)  # side by side: their cold starts (database migrations) overlap
    try:
        yield phoenix, mlflow
    finally:
        try:
            mlflow.stop()
        finally:
            phoenix.stop()


@pytest.fixture(scope="module")
def exported(servers: tuple[BackendServer, BackendServer], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo's scenarios, run once each with no evaluation: spans to Phoenix, MLflow and an OTLP JSON file."""
    phoenix, mlflow = servers
    folder = Path(tmp_path_factory.mktemp("backfill"))
    created = httpx2.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": PROJECT}, timeout=30)
    created.raise_for_status()
    experiment = created.json()["experiment_id"]
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({SERVICE_NAME: "travel-agent", "openinference.project.name": PROJECT}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{phoenix.url}/v1/traces", timeout=120)))
    mlflow_headers = {"x-mlflow-experiment-id": experiment}
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(f"{mlflow.url}/v1/traces", headers=mlflow_headers, timeout=120))
    )
    agent = TravelAgent(provider)
    for index, scenario in enumerate(SCENARIOS):
        agent.run(scenario, conversation_id=f"backfill-conversation-{index + 1}")
    assert provider.force_flush(60_000)
    provider.shutdown()
    spans = memory.get_finished_spans()
    (folder / "agent.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
    (folder / "golden.evalset.json").write_text(golden_eval_set().model_dump_json())
    (folder / "config.json").write_text(json.dumps({"criteria": CRITERIA}))
    roots = {format(s.context.trace_id, "032x"): format(s.context.span_id, "016x") for s in spans if s.parent is None}
    return {"folder": folder, "experiment": experiment, "roots": roots}


def _env(servers: tuple[BackendServer, BackendServer], exported: dict[str, Any], **more: str) -> dict[str, str]:
    phoenix, mlflow = servers
    return {
        "PHOENIX_COLLECTOR_ENDPOINT": phoenix.url,
        "PHOENIX_PROJECT_NAME": PROJECT,
        "MLFLOW_TRACKING_URI": mlflow.url,
        "MLFLOW_EXPERIMENT_NAME": PROJECT,
        "OTEL_EVAL_SINKS": "",
        **more,
    }


def _run(
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., CliResult],
    env: dict[str, str],
    exported: dict[str, Any],
    *args: str,
) -> CliResult:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    folder = exported["folder"]
    common = ["--eval-set", str(folder / "golden.evalset.json"), "--config", str(folder / "config.json")]
    return cli("run", *args, *common, "--output", "json")


def _scores(result: CliResult) -> dict[tuple[str, str], float | None]:
    assert result.exit_code in (0, 1), result.stderr
    return {
        (trace_id, metric["metric_name"]): metric["per_invocation_scores"][0]
        for conversation in result.json()["results"]
        for trace_id in conversation["trace_ids"]
        for metric in conversation["metrics"]
    }


def _assert_same_scores(
    found: dict[tuple[str, str], float | None],
    expected: dict[tuple[str, str], float | None],
    *,
    duration_tolerance: float,
) -> None:
    """Equal, but for ``invocation_duration_v1`` (seconds), within ``duration_tolerance``: the backend's time
    precision."""
    assert found.keys() == expected.keys()
    for key, score in expected.items():
        if key[1] == "invocation_duration_v1":
            assert found[key] == pytest.approx(score, abs=duration_tolerance), key
        else:
            assert found[key] == score, key


def _phoenix_annotations(phoenix: BackendServer, span_ids: list[str]) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"span_ids": span_ids, "limit": 1000}
    response = httpx2.get(f"{phoenix.url}/v1/projects/{PROJECT}/span_annotations", params=params, timeout=30)
    response.raise_for_status()
    return list(response.json()["data"])


def _mlflow_assessments(mlflow: BackendServer, trace_id: str) -> list[dict[str, Any]]:
    response = httpx2.get(f"{mlflow.url}/api/3.0/mlflow/traces/tr-{trace_id}", timeout=30)
    response.raise_for_status()
    return list(response.json()["trace"]["trace_info"].get("assessments", []))


def _phoenix_holds(phoenix: BackendServer, count: int) -> bool:
    params: dict[str, Any] = {"parent_id": "null", "limit": 1000}
    response = httpx2.get(f"{phoenix.url}/v1/projects/{PROJECT}/spans/otlpv1", params=params, timeout=30)
    return response.status_code == 200 and len(response.json()["data"]) >= count


@pytest.fixture(scope="module")
def file_scores(exported: dict[str, Any]) -> dict[tuple[str, str], float | None]:
    from click.testing import CliRunner

    from otel_eval.cli import main

    folder = exported["folder"]
    args = ["run", folder / "agent.json", "--eval-set", folder / "golden.evalset.json"]
    args += ["--config", folder / "config.json", "--output", "json"]
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    scores = _scores(CliResult(result.exit_code, result.stdout, result.stderr))
    assert set(METRICS) <= {metric for _, metric in scores}  # and ADK's informational efficiency metrics
    return scores


def test_phoenix_backfill_writes_one_annotation_per_root_and_metric_equal_to_the_files_and_a_rerun_changes_nothing(
    servers: tuple[BackendServer, BackendServer],
    exported: dict[str, Any],
    file_scores: dict[tuple[str, str], float | None],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    phoenix, _ = servers
    roots: dict[str, str] = exported["roots"]
    assert wait_until(lambda: _phoenix_holds(phoenix, len(roots)), 60)
    env = _env(servers, exported)
    dry = _run(monkeypatch, cli, env, exported, "--from", "phoenix", "--since", "1h", "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert f"{len(roots) * len(METRICS)} score(s) would be written" in dry.stdout
    assert _phoenix_annotations(phoenix, list(roots.values())) == []  # a dry run writes nothing
    one = _run(
        monkeypatch,
        cli,
        env,
        exported,
        "--from",
        "phoenix",
        "--filter",
        "gen_ai.conversation.id:backfill-conversation-2",
        "--dry-run",
    )
    assert one.exit_code == 0 and "1 conversation(s), 1 invocation(s)" in one.stdout, one.stderr  # Phoenix's filter

    first = _run(monkeypatch, cli, env, exported, "--from", "phoenix", "--since", "1h", "--sinks", "phoenix")
    # Phoenix keeps microseconds: the root's start and end are each up to 1 us off, so the duration up to 2 us
    _assert_same_scores(_scores(first), file_scores, duration_tolerance=2e-6)
    annotations = _phoenix_annotations(phoenix, list(roots.values()))
    assert len(annotations) == len(roots) * len(METRICS)
    by_key = {(a["span_id"], a["name"]): a for a in annotations}
    for (trace_id, metric), score in file_scores.items():
        if metric not in METRICS:
            continue  # informational (no threshold): not sent to the sinks
        annotation = by_key[(roots[trace_id], metric)]
        assert annotation["result"]["score"] == score
        assert annotation["metadata"]["trace_id"] == trace_id

    again = _run(monkeypatch, cli, env, exported, "--from", "phoenix", "--since", "1h", "--sinks", "phoenix")
    _assert_same_scores(_scores(again), file_scores, duration_tolerance=2e-6)
    after = _phoenix_annotations(phoenix, list(roots.values()))
    assert sorted((a["id"], a["updated_at"]) for a in after) == sorted((a["id"], a["updated_at"]) for a in annotations)


def test_mlflow_backfill_writes_one_assessment_per_root_and_metric_equal_to_the_files_and_a_rerun_changes_nothing(
    servers: tuple[BackendServer, BackendServer],
    exported: dict[str, Any],
    file_scores: dict[tuple[str, str], float | None],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, mlflow = servers
    roots: dict[str, str] = exported["roots"]
    env = _env(servers, exported)
    assert wait_until(lambda: all(httpx2.get(f"{mlflow.url}/api/3.0/mlflow/traces/tr-{t}", timeout=30).is_success
                                  for t in roots), 60)  # fmt: skip
    first = _run(monkeypatch, cli, env, exported, "--from", "mlflow", "--since", "1h", "--sinks", "mlflow")
    assert _scores(first) == file_scores
    before = {}
    for trace_id, span_id in roots.items():
        assessments = _mlflow_assessments(mlflow, trace_id)
        assert sorted(a["assessment_name"] for a in assessments) == METRICS
        for assessment in assessments:
            assert assessment["span_id"] == span_id
            score = file_scores[(trace_id, assessment["assessment_name"])]
            assert assessment["feedback"]["value"] == (score if score is not None else "not_evaluated")
            before[assessment["assessment_id"]] = assessment["last_update_time"]
    again = _run(monkeypatch, cli, env, exported, "--from", "mlflow", "--since", "1h", "--sinks", "mlflow")
    assert _scores(again) == file_scores
    after = {a["assessment_id"]: a["last_update_time"] for t in roots for a in _mlflow_assessments(mlflow, t)}
    assert after == before
    # MLflow's own filter narrows the traces read; one it refuses is bad input (exit 2), not a backend failure
    one = _run(
        monkeypatch,
        cli,
        env,
        exported,
        "--from",
        "mlflow",
        "--filter",
        "trace.status = 'OK'",
        "--limit",
        "1",
        "--dry-run",
    )
    assert one.exit_code == 0 and "1 conversation(s), 1 invocation(s)" in one.stdout, one.stderr
    bad = _run(monkeypatch, cli, env, exported, "--from", "mlflow", "--filter", "no_such_key = 1")
    assert bad.exit_code == 2 and "HTTP 400" in bad.stderr


def test_a_sink_that_is_down_counts_what_it_did_not_deliver_and_exits_4(
    servers: tuple[BackendServer, BackendServer],
    exported: dict[str, Any],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, mlflow = servers
    link = CuttableLink(mlflow.port)  # never restored: MLflow unreachable for the sink
    env = _env(servers, exported, OTEL_EVAL_SINKS_RETRY_SECONDS="2")
    env["MLFLOW_TRACKING_URI"] = mlflow.url  # read from the real server
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = _run(monkeypatch, cli, env, exported, "--from", "mlflow", "--limit", "2", "--sinks", "mlflow")
    # delivered: the sink reached MLflow (3: the two newest traces may pair with no case, a gate that checked nothing)
    assert result.exit_code in (0, 1, 3), result.stderr
    assert "wrote " in result.stderr and "not delivered" not in result.stderr
    monkeypatch.setenv("MLFLOW_TRACKING_URI", link.url)
    started = time.monotonic()
    down = cli("run", str(exported["folder"] / "agent.json"), "--eval-set", str(exported["folder"] / "golden.evalset.json"),
               "--config", str(exported["folder"] / "config.json"), "--sinks", "mlflow", "--output", "json")  # fmt: skip
    assert down.exit_code == 4, down.stderr
    assert f"mlflow sink: {len(exported['roots']) * len(METRICS)} of" in down.stderr
    assert time.monotonic() - started < 120  # bounded: the retry window and the flush slack


def test_a_backend_that_goes_away_while_it_is_read_fails_the_run_with_4_and_writes_nothing(
    servers: tuple[BackendServer, BackendServer],
    exported: dict[str, Any],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    phoenix, _ = servers
    link = CuttableLink(phoenix.port)
    link.restore()
    env = _env(servers, exported, PHOENIX_COLLECTOR_ENDPOINT=link.url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    from otel_eval.traces.backends import Window
    from otel_eval.traces.backends.phoenix import PhoenixReader

    pages = PhoenixReader(link.url, project=PROJECT).pages(Window(page_traces=1))
    first = next(pages)
    assert first.traces == 1 and first.spans
    link.cut()  # gone mid-run
    with pytest.raises(Exception, match="phoenix"):
        next(pages)
    result = _run(monkeypatch, cli, env, exported, "--from", "phoenix", "--sinks", "phoenix")
    assert result.exit_code == 4
    assert "nothing was scored or written" in result.stderr


@pytest.mark.parametrize(
    ("backend", "setting", "value", "status"),
    [
        ("phoenix", "PHOENIX_PROJECT_NAME", "backfill-agnet", "HTTP 404"),
        ("mlflow", "MLFLOW_EXPERIMENT_NAME", "backfill-agnet", "HTTP 404"),
        ("mlflow", "MLFLOW_EXPERIMENT_ID", "999999", "HTTP 404"),  # the trace search found no trace: exit 0, silent
        ("mlflow", "MLFLOW_EXPERIMENT_ID", "abc", "HTTP 400"),
    ],
)
def test_a_project_or_experiment_that_does_not_exist_is_bad_input_naming_it(
    servers: tuple[BackendServer, BackendServer],
    exported: dict[str, Any],
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    setting: str,
    value: str,
    status: str,
) -> None:
    """A typo'd project or experiment exited 4 ("a backend failed the run": run it again later) or, for an MLflow
    experiment id, 0 with "nothing to evaluate"; it is bad input, exit 2, naming what was looked for."""
    env = _env(servers, exported, **{setting: value})
    if setting == "MLFLOW_EXPERIMENT_ID":
        env.pop("MLFLOW_EXPERIMENT_NAME")
    result = _run(monkeypatch, cli, env, exported, "--from", backend, "--sinks", "none")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: {backend}: "), result.stderr
    assert status in result.stderr and value in result.stderr and "nothing was scored or written" in result.stderr
    if status == "HTTP 404":
        assert f"is {'project' if backend == 'phoenix' else 'experiment'} " in result.stderr
        assert setting in result.stderr
    assert "Traceback" not in result.stderr


def test_the_judges_own_traces_are_not_scored_as_the_agents(
    servers: tuple[BackendServer, BackendServer], cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent evaluated online with a judge leaves, beside its own traces, one `judge {metric}` trace per judged
    evaluation (OTEL_EVAL_JUDGE_OWN_TRACE). The backends keep no instrumentation scope, and a backfill rebuilt each
    judge trace's `generate_content` calls as an agent invocation: scored (judged, in a real backfill) and written
    back onto the judge's spans. It reads the agent's conversations only."""
    from tests.emit.sinks.agent import PROJECT as JUDGED_PROJECT
    from tests.emit.sinks.agent import run_evaluated_agent

    phoenix, mlflow = servers
    monkeypatch.setenv("OTEL_EVAL_SINKS", "")
    created = httpx2.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": "judged-agent"}, timeout=30)
    created.raise_for_status()
    experiment = created.json()["experiment_id"]
    run_evaluated_agent(f"{phoenix.url}/v1/traces")
    run_evaluated_agent(f"{mlflow.url}/v1/traces", {"x-mlflow-experiment-id": experiment})
    conversations = sorted(f"sinks-conversation-{index + 1}" for index in range(len(SCENARIOS)))
    for backend, setting, value in (
        ("phoenix", "PHOENIX_PROJECT_NAME", JUDGED_PROJECT),
        ("mlflow", "MLFLOW_EXPERIMENT_ID", experiment),
    ):
        monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", phoenix.url)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow.url)
        monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
        monkeypatch.setenv(setting, value)
        read: list[str] = []
        for _ in range(30):  # the exporters' batches reach the backend
            result = cli("run", "--from", backend, "-m", "tool_call_count_v1", "--output", "json")
            assert result.exit_code == 0, result.stderr
            if not result.stdout.strip():  # "nothing to evaluate in that window": not there yet
                time.sleep(1)
                continue
            read = sorted(str(r["session_id"]) for r in result.json()["results"])
            if len(read) >= len(conversations) and "judge" in _read_line(result.stderr):
                break
            time.sleep(1)
        assert read == conversations, (backend, read, result.stderr)


def _read_line(stderr: str) -> str:
    """``read N trace(s) ...`` with a note that N exceeds the agent's traces (the judge's are among them)."""
    [line] = [line for line in stderr.splitlines() if line.startswith("read ")]
    total = int(line.split()[1])
    return line + (" judge" if total > len(SCENARIOS) else "")


# --- docs/backfill.md's recipes, run as written -----------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
WEATHER_PROJECT = "weather-agent"
WEATHER_SCORES = {"Paris": 1.0, "Berlin": 1.0, "Rome": 0.0}


def _recipe(backend: str) -> tuple[str, str]:
    """The bash block after ``<!-- recipe: backfill-{backend} -->`` in docs/backfill.md: (the agent's part, the
    backfill's part), split at its blank line."""
    agent, backfill = recipes.recipe("backfill.md", f"backfill-{backend}").split("\n\n", 1)
    return agent, backfill


def _bash(script: str, replacements: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``script`` run as :func:`tests.docs.recipes.run_bash` runs a recipe, the documented addresses replaced by the
    servers'; exit code 0 asserted."""
    process = recipes.run_bash(script, replacements, timeout=600)
    assert process.returncode == 0, process.stderr
    return process


def _city(text: str) -> str:
    return next(city for city in WEATHER_SCORES if city in text)


def test_the_phoenix_backfill_recipe_scores_the_weather_agents_traces_once(
    servers: tuple[BackendServer, BackendServer],
) -> None:
    phoenix, _ = servers
    agent, backfill = _recipe("phoenix")
    documented = {"http://localhost:6006": phoenix.url}
    done = _bash(agent + "\n" + backfill, documented)
    assert "3 score(s) would be written" in done.stdout and "wrote 3 score(s) to phoenix" in done.stderr
    roots = httpx2.get(
        f"{phoenix.url}/v1/projects/{WEATHER_PROJECT}/spans/otlpv1", params={"parent_id": "null"}, timeout=30
    ).json()["data"]
    cities = {}
    for root in roots:
        messages = next(a for a in root["attributes"] if a["key"] == "gen_ai.input.messages")
        cities[root["span_id"]] = _city(messages["value"]["string_value"])
    params: dict[str, Any] = {"span_ids": list(cities), "limit": 100}
    url = f"{phoenix.url}/v1/projects/{WEATHER_PROJECT}/span_annotations"
    annotations = httpx2.get(url, params=params, timeout=30).json()["data"]
    assert {cities[a["span_id"]]: (a["name"], a["result"]["score"]) for a in annotations} == {
        city: ("response_match_score", score) for city, score in WEATHER_SCORES.items()
    }
    assert len(annotations) == 3
    _bash(backfill, documented)  # the backfill again: nothing changes
    after = httpx2.get(url, params=params, timeout=30).json()["data"]
    assert sorted((a["id"], a["updated_at"]) for a in after) == sorted((a["id"], a["updated_at"]) for a in annotations)


def test_the_mlflow_backfill_recipe_scores_the_weather_agents_traces_once(
    servers: tuple[BackendServer, BackendServer],
) -> None:
    _, mlflow = servers
    agent, backfill = _recipe("mlflow")
    documented = {"http://localhost:5000": mlflow.url}
    done = _bash(agent + "\n" + backfill, documented)
    assert "3 score(s) would be written" in done.stdout and "wrote 3 score(s) to mlflow" in done.stderr
    search = {
        "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "0"}}],
        "max_results": 100,
    }
    traces = httpx2.post(f"{mlflow.url}/api/3.0/mlflow/traces/search", json=search, timeout=30).json()["traces"]
    assert len(traces) == 3

    def assessments() -> dict[str, tuple[str, Any, str]]:
        found = {}
        for trace in traces:
            (assessment,) = _mlflow_assessments(mlflow, trace["trace_id"].removeprefix("tr-"))
            found[_city(trace["request_preview"])] = (
                assessment["assessment_name"],
                assessment["feedback"]["value"],
                assessment["last_update_time"],
            )
        return found

    before = assessments()
    assert {city: found[:2] for city, found in before.items()} == {
        city: ("response_match_score", score) for city, score in WEATHER_SCORES.items()
    }
    _bash(backfill, documented)  # the backfill again: nothing changes
    assert assessments() == before
    failing = httpx2.post(
        f"{mlflow.url}/api/3.0/mlflow/traces/search",
        json={**search, "filter": "feedback.response_match_score < 0.8"},
        timeout=30,
    ).json()["traces"]
    assert [_city(t["request_preview"]) for t in failing] == ["Rome"]
