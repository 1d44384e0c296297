"""docs/recipe-kafka.md, run as written against a real Kafka-protocol broker (tansu, tests/_kafka.py): the topics
created, two ``otel-eval worker`` processes in one consumer group, their probes, the LangGraph agent
(examples/langgraph_agent.py: real LangGraph, ChatOpenAI over HTTP to a loopback OpenAI-protocol server,
OpenInference spans) sending its invocations to Kafka, the scores read back. Only the broker's address and the
workers' ports are replaced by the test's. What the page claims is checked from the broker itself: both workers
ready, one partition each, every invocation's results on the results topic exactly once, with the failures the page
shows."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterator

import pytest

from otel_eval.model.messages import EvaluationRecord
from tests._kafka import TansuBroker, free_port, read_topic
from tests.docs.recipes import JUDGE_LINE, REPO, recipe, run_bash

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.usefixtures("clean_genai_env"),
]

PAGE = "recipe-kafka.md"
PAGE_TEXT = (REPO / "docs" / PAGE).read_text(encoding="utf-8")
ROUNDS = 2
CASES = ("paris", "tokyo", "london")
METRICS = {
    "hallucinations_v1",
    "tool_trajectory_avg_score",
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
}
FAILED = {("tokyo", "hallucinations_v1"), ("london", "tool_trajectory_avg_score")}
"""The page's two failures: the hallucinated Tokyo answer, the London clock question answered with the weather."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """A broker of its own: the recipe uses the default topic names and consumer group."""
    with TansuBroker(log_dir=tmp_path_factory.mktemp("tansu")) as started:
        yield started


@pytest.fixture(scope="module")
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture(scope="module")
def run(
    broker: TansuBroker, ports: tuple[int, int], tmp_path_factory: pytest.TempPathFactory
) -> subprocess.CompletedProcess[str]:
    checkout = tmp_path_factory.mktemp("checkout")
    shutil.copytree(REPO / "examples", checkout / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    replacements = {"localhost:9092": broker.bootstrap, "9464": str(ports[0]), "9465": str(ports[1])}
    return run_bash(recipe(PAGE, "kafka-langgraph"), replacements, cwd=checkout, timeout=240)


def test_the_recipe_runs_with_the_scripted_judge_and_no_error(run: subprocess.CompletedProcess[str]) -> None:
    assert recipe(PAGE, "kafka-langgraph").startswith(JUDGE_LINE + "\n")
    assert run.returncode == 0, run.stdout + run.stderr
    for word in ("Traceback", "ERROR", "WARNING"):
        assert word not in run.stderr, run.stderr


def test_both_workers_were_ready_and_healthy(run: subprocess.CompletedProcess[str]) -> None:
    topics = "otel_eval.requests: 2 partitions\notel_eval.results: 2 partitions\notel_eval.dead_letter: 1 partitions\n"
    assert run.stdout.startswith(topics + "ok\n" * 4), run.stdout  # /readyz of each, then /healthz of each


def test_the_workers_split_the_partitions(run: subprocess.CompletedProcess[str], ports: tuple[int, int]) -> None:
    owned: dict[int, set[str]] = {}
    for port in ports:
        section = run.stdout.split(f"worker :{port}\n", 1)[1].split("worker ", 1)[0]
        lags = re.findall(
            r'^otel_eval_worker_consumer_lag\{.*messaging_destination_partition_id="(\d+)".*\} (\S+)$',
            section,
            re.MULTILINE,
        )
        owned[port] = {partition for partition, _ in lags}
        assert all(float(lag) == 0 for _, lag in lags), section  # caught up
    assert sorted(owned.values(), key=sorted) == [{"0"}, {"1"}], owned
    assert run.stdout.count("worker stopped: ") == 2, run.stdout  # a graceful stop on SIGTERM, each


def test_every_invocations_results_arrived_exactly_once(
    run: subprocess.CompletedProcess[str], broker: TansuBroker
) -> None:
    assert run.returncode == 0, run.stderr
    requests = asyncio.run(read_topic(broker.bootstrap, "otel_eval.requests"))
    assert len(requests) == ROUNDS * len(CASES)
    records = asyncio.run(read_topic(broker.bootstrap, "otel_eval.results"))
    results = [EvaluationRecord.model_validate_json(r.value) for r in records]
    assert len({r.result_id for r in results}) == len(results)  # no duplicate on the topic itself
    by_invocation: dict[tuple[str, str], list[EvaluationRecord]] = defaultdict(list)
    for result in results:
        by_invocation[(result.trace_id, result.span_id)].append(result)
    assert len(by_invocation) == ROUNDS * len(CASES)
    cases: Counter[str] = Counter()
    for invocation in by_invocation.values():
        assert Counter(r.metric_name for r in invocation) == Counter(METRICS)  # every metric exactly once
        (case,) = {r.eval_id for r in invocation if r.eval_id}
        cases[case or ""] += 1
        for result in invocation:
            if result.metric_name == "tool_call_count_v1":
                assert result.score == 1  # one tool call per question
            elif result.label != "informational":
                assert result.label == ("fail" if (case, result.metric_name) in FAILED else "pass"), result
    assert cases == dict.fromkeys(CASES, ROUNDS)
    assert asyncio.run(read_topic(broker.bootstrap, "otel_eval.dead_letter", idle=0.2)) == []


def test_the_page_shows_what_the_reader_printed(run: subprocess.CompletedProcess[str]) -> None:
    printed = run.stdout.splitlines()
    header = next(line for line in printed if line.startswith("invocation  case"))
    assert header in PAGE_TEXT
    summary = (
        f"{ROUNDS * len(CASES) * len(METRICS)} results for {ROUNDS * len(CASES)} invocations, 0 duplicates skipped"
    )
    assert summary in printed and summary in PAGE_TEXT
    failures = {line.split(" ", 1)[1] for line in printed if " fail: " in line}
    assert len(failures) == len(FAILED)
    for failure in failures:
        assert failure in PAGE_TEXT, failure
    rows = [line.split() for line in printed if re.match(r"^[0-9a-f]{8}  ", line) and "fail:" not in line]
    assert [row[1] for row in rows] == list(CASES) * ROUNDS
    page = re.sub(r" +", " ", PAGE_TEXT)
    for row in rows:
        cells = " ".join(row[1:7])
        assert cells in {"paris 1 1 pass 1 grounded", "tokyo 1 1 pass 0 hallucinated", "london 1 0 fail 1 grounded"}
        assert cells in page, row


def test_the_page_renders_the_shipped_scaled_object() -> None:
    assert "<!-- shipped: deploy/k8s/scaledobject.yaml -->" in PAGE_TEXT
    scaled = (REPO / "deploy" / "k8s" / "scaledobject.yaml").read_text(encoding="utf-8")
    assert 'lagThreshold: "200"' in scaled and "minReplicaCount: 2" in scaled and "maxReplicaCount: 12" in scaled
    for claim in ("at most 200 messages of lag per replica", "between 2 and 12 replicas"):
        assert claim in PAGE_TEXT


def test_without_kafka_the_example_prints_its_scores_as_the_page_says() -> None:
    """``python examples/langgraph_agent.py`` alone: scored in-process (the page's other branch), on the console."""
    assert "(`python examples/langgraph_agent.py` prints the scores)" in PAGE_TEXT
    process = run_bash("python examples/langgraph_agent.py\n", {}, timeout=120)
    assert process.returncode == 0, process.stderr
    scores = re.findall(r"^otel-eval: (\w+) (\S+) (\w+) agent=weather_agent ", process.stdout, re.MULTILINE)
    trajectories = sorted((score, label) for metric, score, label in scores if metric == "tool_trajectory_avg_score")
    assert trajectories == [("0", "fail"), ("1", "pass"), ("1", "pass")]  # London: the weather tool, not the clock
    assert sorted(score for metric, score, _ in scores if metric == "tool_call_count_v1") == ["1", "1", "1"]
