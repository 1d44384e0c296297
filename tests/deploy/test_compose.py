"""docker-compose.yaml, checked statically (no container engine here): the services, their wiring, and the worker
entrypoint's shell, which runs for real."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import COMPOSE_FILE, DEPLOY, REPO, load_yaml_documents
from tests.environment import known_environment_variables

COLLECTOR_CONFIGS = ("otelcol-agent-to-kafka.yaml", "otelcol-evaluation-output.yaml")


def _compose() -> dict[str, Any]:
    return load_yaml_documents(COMPOSE_FILE)[0]


def _services() -> dict[str, Any]:
    return dict(_compose()["services"])


def test_the_stack_has_every_component() -> None:
    services = _services()
    assert {"kafka", "otel-collector", "worker", "prometheus", "grafana"} <= set(services)
    assert {"jaeger", "tempo"} & set(services), "a trace backend (jaeger or tempo)"


def test_every_image_is_pinned_to_an_exact_version() -> None:
    for name, service in _services().items():
        image = service.get("image")
        assert image, f"{name} has no image"
        if "build" in service:
            continue
        assert re.search(r":v?\d+\.\d+\.\d+$|@sha256:[0-9a-f]{64}$", image), f"{name}: {image} is not pinned"


def test_kafka_runs_in_kraft_mode() -> None:
    environment = _services()["kafka"]["environment"]
    assert "broker" in environment["KAFKA_PROCESS_ROLES"] and "controller" in environment["KAFKA_PROCESS_ROLES"]
    assert environment["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(environment["KAFKA_NODE_ID"] + "@kafka:")
    assert not any("ZOOKEEPER" in key for key in environment)
    assert "apache/kafka" in _services()["kafka"]["image"]


def test_topics_are_created_before_collectors_and_workers_start() -> None:
    services = _services()
    script = "\n".join(services["kafka-init"]["command"])
    for topic in ("otel_eval.requests", "otlp_spans", "otel_eval.results", "otel_eval.dead_letter"):
        assert topic in script
    for name in ("otel-collector", "otel-collector-eval", "worker"):
        assert services[name]["depends_on"]["kafka-init"]["condition"] == "service_completed_successfully"


def test_the_worker_runs_two_replicas_of_the_built_image() -> None:
    worker = _services()["worker"]
    assert worker["deploy"]["replicas"] == 2
    assert worker["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert (COMPOSE_FILE.parent / worker["build"]["context"] / worker["build"]["dockerfile"]).is_file()


def test_the_worker_settings_are_real_settings() -> None:
    known = known_environment_variables()
    environment = _services()["worker"]["environment"]
    for key in environment:
        if key.startswith("OTEL_EVAL_"):
            assert key in known, f"worker sets {key}, which otel-eval does not read"
    assert environment["OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector-eval:4317"
    assert environment["GOOGLE_API_KEY"] is None, "the judge key passes through from the shell, never in the file"


def _created_topics() -> dict[str, int]:
    """kafka-init's topics and their partition counts."""
    script = "\n".join(_services()["kafka-init"]["command"])
    (specs,) = re.findall(r"for spec in ([^;]+);", script)
    return {name: int(partitions) for name, partitions in (spec.split(":") for spec in specs.split())}


def test_every_topic_the_collector_writes_or_the_workers_read_is_created() -> None:
    """With the broker's automatic topic creation off, a topic kafka-init leaves out is an error on every batch the
    Collector sends to it (and the records it holds are never evaluated)."""
    created = _created_topics()
    config = load_yaml_documents(REPO / "collector_config" / COLLECTOR_CONFIGS[0])[0]
    written = {
        exporter[signal]["topic"]
        for name, exporter in config["exporters"].items()
        if name.startswith("kafka")
        for signal in ("traces", "logs", "metrics")
        if signal in exporter
    }
    assert written == {"otlp_spans", "otlp_logs"}
    assert written <= set(created), f"the Collector writes {sorted(written - set(created))}, kafka-init creates none"
    assert created["otlp_logs"] == created["otlp_spans"]  # a trace's spans and records meet on one worker
    topics = {
        "requests": "otel_eval.requests",
        "otlp_spans": "otlp_spans",
        "otlp_logs": "otlp_logs",
        "sessions": "otel_eval.sessions",
    }
    sources = _services()["worker"]["environment"]["OTEL_EVAL_WORKER_SOURCES"].split(",")
    assert {topics[source] for source in sources} <= set(created)
    assert "otlp_logs" in sources, "the GenAI content records the Collector writes would wait unread"


def test_collectors_mount_collector_config_and_name_its_files() -> None:
    services = _services()
    for name, config in zip(("otel-collector", "otel-collector-eval"), COLLECTOR_CONFIGS, strict=True):
        service = services[name]
        assert "opentelemetry-collector-contrib" in service["image"]
        source, target = service["volumes"][0].split(":")[:2]
        assert (COMPOSE_FILE.parent / source).resolve() == REPO / "collector_config"
        assert service["command"] == [f"--config={target}/{config}"]
        assert (REPO / "collector_config" / config).is_file()


def test_collector_endpoints_point_at_compose_services() -> None:
    """Every ``${env:NAME:-default}`` endpoint in the mounted configs is set by compose to a service it runs."""
    services = _services()
    for name, config in zip(("otel-collector", "otel-collector-eval"), COLLECTOR_CONFIGS, strict=True):
        text = (REPO / "collector_config" / config).read_text(encoding="utf-8")
        variables = set(re.findall(r"\$\{env:([A-Z_]+):-", text))
        environment = services[name].get("environment", {})
        assert variables and variables <= set(environment), (
            f"{name}: compose sets {sorted(environment)}, needs {sorted(variables)}"
        )
        for variable in variables:
            host = re.sub(r"^https?://", "", environment[variable]).split(":")[0]
            assert host in services, f"{name}: {variable} points at {host!r}, which compose does not run"


def test_prometheus_receives_otlp_and_loads_the_rules() -> None:
    prometheus = _services()["prometheus"]
    assert "--web.enable-otlp-receiver" in prometheus["command"]
    assert "./prometheus:/etc/prometheus:ro" in prometheus["volumes"]
    config = load_yaml_documents(DEPLOY / "prometheus" / "prometheus.yml")[0]
    for rule_file in config["rule_files"]:
        assert (DEPLOY / "prometheus" / rule_file).is_file()


@pytest.mark.integration
def test_the_worker_entrypoint_gives_each_replica_its_own_instance_id(tmp_path: Path) -> None:
    """Runs the entrypoint's shell with a stand-in ``otel-eval`` that prints what it was given."""
    worker = _services()["worker"]
    entrypoint = [part.replace("$$", "$") for part in worker["entrypoint"]]  # compose's escaping of `$`
    fake = tmp_path / "otel-eval"
    fake.write_text('#!/bin/sh\necho "ATTRS=$OTEL_RESOURCE_ATTRIBUTES"\necho "ARGS=$*"\n', encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    base_env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "HOSTNAME": "3f2a9c1d0b7e"}
    for extra, expected in (
        ({}, "service.instance.id=3f2a9c1d0b7e"),
        (
            {"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=dev"},
            "service.instance.id=3f2a9c1d0b7e,deployment.environment=dev",
        ),
    ):
        output = subprocess.run(
            [*entrypoint, *worker["command"]], env={**base_env, **extra}, capture_output=True, text=True, check=True
        ).stdout
        assert f"ATTRS={expected}\n" in output
        assert "ARGS=worker --log-level INFO\n" in output
