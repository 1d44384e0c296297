"""``examples/kafka_topics.py`` and ``examples/kafka_results.py`` run as a user runs them (a fresh interpreter each)
against the real broker: what they say and their exit codes when something is off (a topic that does not exist, fewer
results than asked, a broker that is down, a bad count), and the results topic read per tenant."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord
from tests._kafka import create_topics, random_topic

pytestmark = pytest.mark.integration  # each example runs in an interpreter of its own, on the real broker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environ.update(PYTHONPATH=str(EXAMPLES.parent), **env)
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=120, env=environ
    )


def _record(trace: int, metric: str = "tool_call_count_v1") -> EvaluationRecord:
    return EvaluationRecord(
        result_id=f"r-{trace}-{metric}",
        trace_id=f"{trace:032x}",
        span_id=f"{trace:016x}",
        metric_name=metric,
        score=1.0,
        eval_status=EvalStatus.INFORMATIONAL,
        label="informational",
    )


async def _publish(bootstrap: str, topic: str, records: list[tuple[EvaluationRecord, str | None]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for record, tenant in records:
            headers = [("otel_eval.tenant", tenant.encode())] if tenant else []
            await producer.send_and_wait(topic, record.model_dump_json().encode(), headers=headers)
    finally:
        await producer.stop()


def test_results_of_a_topic_that_does_not_exist_are_one_line_naming_it(kafka_bootstrap: str) -> None:
    topic = random_topic("absent")
    process = _run(
        "kafka_results.py",
        "--wait",
        "2",
        OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
        OTEL_EVAL_KAFKA_RESULTS_TOPIC=topic,
    )
    assert process.returncode == 1
    assert "Traceback" not in process.stderr
    assert process.stderr.strip().splitlines()[-1] == (
        f"error: topic {topic!r} has no partitions on {kafka_bootstrap}: does it exist? (OTEL_EVAL_KAFKA_RESULTS_TOPIC)"
    )


def test_fewer_invocations_than_asked_exit_1_and_results_are_distinct_per_tenant(kafka_bootstrap: str) -> None:
    topic = random_topic("results")
    asyncio.run(create_topics(kafka_bootstrap, [topic]))
    first, second = _record(1), _record(2)
    # the same result id from two tenants is two results; a redelivered copy of one is a duplicate
    records = [(first, None), (first, None), (second, "acme"), (second, "globex")]
    asyncio.run(_publish(kafka_bootstrap, topic, records))
    env = {"OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "OTEL_EVAL_KAFKA_RESULTS_TOPIC": topic}

    process = _run("kafka_results.py", "--invocations", "3", "--wait", "5", **env)
    assert process.returncode == 1, process.stderr
    assert "3 results for 2 invocations, 1 duplicates skipped" in process.stdout
    assert process.stderr.strip().splitlines()[-1] == (
        "error: the results of 2 invocations came within --wait 5 s, not 3"
    )

    process = _run("kafka_results.py", "--invocations", "2", "--wait", "30", **env)
    assert process.returncode == 0, process.stderr
    assert "3 results for 2 invocations, 1 duplicates skipped" in process.stdout


def test_results_from_a_broker_that_is_down_are_one_line() -> None:
    process = _run("kafka_results.py", "--wait", "2", OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:1")
    assert process.returncode == 1
    assert "Traceback" not in process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("error: cannot read 'otel_eval.results' from 127.0.0.1:1")


@pytest.mark.parametrize("option", ["--partitions", "--replication-factor"])
def test_topics_with_a_count_below_1_are_a_usage_error(option: str, kafka_bootstrap: str) -> None:
    process = _run("kafka_topics.py", option, "0", random_topic(), OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap)
    assert process.returncode == 2
    assert process.stderr.strip().splitlines()[-1].endswith(f"error: argument {option}: '0': expected an integer >= 1")


def test_topics_on_a_broker_that_is_down_are_one_line() -> None:
    process = _run("kafka_topics.py", random_topic(), OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:1")
    assert process.returncode == 1
    assert "Traceback" not in process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("error: cannot create the topics on 127.0.0.1:1: ")


def test_topics_are_created_with_the_partitions_asked(kafka_bootstrap: str) -> None:
    topic = random_topic()
    process = _run("kafka_topics.py", "--partitions", "3", topic, OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap)
    assert process.returncode == 0, process.stderr
    assert process.stdout == f"{topic}: 3 partitions\n"
