"""The shipped collector configurations: valid YAML, the documented components, pipelines that only use defined
components, and a rotel file whose every variable is a real ``rotel-agent start`` setting."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from otel_eval.traces.reader import read_trace_file
from tests.worker._collector import rotel_env_file

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "collector_config"

# Component types of OpenTelemetry Collector Contrib the configurations may use (from the contrib READMEs).
CONTRIB_COMPONENTS = {
    "receivers": {"otlp", "kafka"},
    "processors": {"memory_limiter", "batch", "filter", "tail_sampling", "attributes", "resource"},
    "exporters": {"otlp", "otlphttp", "kafka", "prometheusremotewrite", "prometheus", "debug", "loadbalancing"},
}


def _load(name: str) -> dict[str, Any]:
    document = yaml.safe_load((CONFIGS / name).read_text())
    assert isinstance(document, dict)
    return document


def _check_pipelines(config: dict[str, Any]) -> None:
    for kind, allowed in CONTRIB_COMPONENTS.items():
        for name in config.get(kind, {}):
            assert name.split("/")[0] in allowed, f"{kind}.{name} is not a documented contrib component"
    pipelines = config["service"]["pipelines"]
    assert pipelines
    for pipeline_name, pipeline in pipelines.items():
        assert pipeline_name.split("/")[0] in {"traces", "logs", "metrics"}
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], f"pipeline {pipeline_name} uses undefined {kind[:-1]} {component}"
        assert pipeline["receivers"] and pipeline["exporters"]


def test_agent_to_kafka_config() -> None:
    config = _load("otelcol-agent-to-kafka.yaml")
    _check_pipelines(config)
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}
    kafka = config["exporters"]["kafka/evaluation"]
    assert kafka["traces"] == {"topic": "otlp_spans", "encoding": "otlp_proto"}
    assert kafka["partition_traces_by_id"] is True
    # GenAI content log records (EVENT_ONLY) go to otlp_logs, keyed like the traces, the app's other logs do not.
    assert kafka["logs"] == {"topic": "otlp_logs", "encoding": "otlp_proto"}
    assert kafka["partition_logs_by_trace_id"] is True
    logs = config["service"]["pipelines"]["logs/evaluation"]
    assert logs["exporters"] == ["kafka/evaluation"]
    assert "filter/genai-content" in logs["processors"]
    (condition,) = config["processors"]["filter/genai-content"]["logs"]["log_record"]
    assert r"client\\.inference\\.operation\\.details" in condition  # OTTL unescapes \\ to the regex's \
    assert kafka["producer"]["required_acks"] == -1
    evaluation = config["service"]["pipelines"]["traces/evaluation"]
    assert evaluation["exporters"] == ["kafka/evaluation"]
    # The evaluator's traffic is filtered before tail sampling, and tail sampling never samples it.
    assert evaluation["processors"].index("filter/evaluator-traffic") < evaluation["processors"].index(
        "tail_sampling/evaluation"
    )
    conditions = config["processors"]["filter/evaluator-traffic"]["traces"]["span"]
    assert 'instrumentation_scope.name == "otel_eval"' in conditions
    policies = config["processors"]["tail_sampling/evaluation"]["policies"]
    (drop,) = [p for p in policies if p["type"] == "drop"]
    (sub,) = drop["drop"]["drop_sub_policy"]
    assert sub["string_attribute"] == {"key": "service.name", "values": ["otel-eval-worker"]}
    # Every trace still goes to the trace backend, unsampled.
    assert "tail_sampling/evaluation" not in config["service"]["pipelines"]["traces/backend"]["processors"]


def test_evaluation_output_config() -> None:
    config = _load("otelcol-evaluation-output.yaml")
    _check_pipelines(config)
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces", "logs", "metrics"}
    assert all(p["receivers"] == ["otlp"] for p in pipelines.values())
    assert pipelines["metrics"]["exporters"] == ["prometheusremotewrite"]
    endpoint = config["exporters"]["otlphttp/loki"]["endpoint"]
    assert endpoint.startswith("${env:LOGS_BACKEND_OTLP_ENDPOINT:-") and endpoint.endswith("/otlp}")


def test_rotel_env_file_uses_real_rotel_settings() -> None:
    import rotel

    binary = Path(rotel.__file__).parent / "rotel-agent"
    help_text = subprocess.run([str(binary), "start", "--help"], capture_output=True, text=True, check=True).stdout
    values = rotel_env_file()
    assert values["ROTEL_EXPORTER"] == "kafka"
    assert values["ROTEL_KAFKA_EXPORTER_FORMAT"] == "protobuf"
    assert values["ROTEL_KAFKA_EXPORTER_TRACES_TOPIC"] == "otlp_spans"
    for name in values:
        assert f"[env: {name}=" in help_text, f"{name} is not a rotel-agent setting"


def test_readme_documents_every_file() -> None:
    readme = (CONFIGS / "README.md").read_text()
    for path in CONFIGS.rglob("*"):
        if path.is_file() and path.name != "README.md":
            assert str(path.relative_to(CONFIGS)) in readme, path


_CONDITION = re.compile(r'attributes\["([^"]+)"\] (==|!=) (nil|"[^"]*")')


def _matches(condition: str, attributes: Mapping[str, Any]) -> bool:
    """The shipped ``is-agent`` OTTL condition on one span's attributes: ``attributes["k"] == "v"`` or
    ``attributes["k"] != nil`` terms joined by ``or`` (any other form fails the test: extend this reader)."""
    terms = condition.split(" or ")
    result = False
    for term in terms:
        found = _CONDITION.fullmatch(term.strip())
        assert found, f"not a form this test reads: {term!r}"
        key, operator, value = found.groups()
        if value == "nil":
            result |= (key in attributes) == (operator == "!=")
        else:
            result |= (attributes.get(key) == value.strip('"')) == (operator == "==")
    return result


def _trace_files() -> list[Path]:
    """Every recorded trace the tests rebuild: the frameworks' and the examples'."""
    frameworks = sorted((REPO / "tests" / "data" / "frameworks").glob("*/*.otlp.json*"))
    assert len(frameworks) >= 50
    examples = ("helm.json", "k8s.json", "adk_live_spans.json", "otel_genai_convention_spans.json")
    return [*frameworks, *(REPO / "examples" / "traces" / name for name in examples)]


def _span_attributes(path: Path) -> Iterator[Mapping[str, Any]]:
    for span in read_trace_file(path).spans:
        yield span.attributes


def test_the_tail_sampler_samples_the_traces_of_every_supported_framework() -> None:
    """The agent policies' ``is-agent`` condition holds for a span of every recorded trace the worker rebuilds (GenAI,
    OpenInference, ADK, OpenLLMetry): before, it asked for ``invoke_agent``, which OpenInference's instrumentations
    (LangGraph, CrewAI, LlamaIndex, OpenAI Agents, smolagents) and the Gemini client's never write, so the Collector
    path never evaluated those agents, without a word."""
    policies = _load("otelcol-agent-to-kafka.yaml")["processors"]["tail_sampling/evaluation"]["policies"]
    conditions = {
        sub["ottl_condition"]["span"][0]
        for policy in policies
        if policy["type"] == "and"
        for sub in policy["and"]["and_sub_policy"]
        if sub["name"] == "is-agent"
    }
    (condition,) = conditions  # the same test in both policies
    missed = [
        str(path.relative_to(REPO))
        for path in _trace_files()
        if not any(_matches(condition, attributes) for attributes in _span_attributes(path))
    ]
    assert missed == []
