"""Kubernetes manifests, checked statically: kinds, wiring, probes, resources, security, settings names, scaling.
The probe commands run for real against a loopback port."""

from __future__ import annotations

from typing import Any

from otel_eval.worker.health import HealthServer, WorkerHealth
from otel_eval.worker.settings import WorkerSettings
from tests.deploy import prometheus_names
from tests.deploy.conftest import K8S_DIR, load_yaml_documents
from tests.environment import known_environment_variables


def _documents() -> list[tuple[str, dict[str, Any]]]:
    return [(path.name, doc) for path in sorted(K8S_DIR.rglob("*.yaml")) for doc in load_yaml_documents(path)]


def _by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in _documents() if doc.get("kind") == kind]


def _worker_container() -> dict[str, Any]:
    (deployment,) = _by_kind("Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def test_every_manifest_parses_and_has_the_expected_kinds() -> None:
    kinds = {doc["kind"] for _, doc in _documents()}
    assert {"Deployment", "ConfigMap", "Secret", "ScaledObject", "TriggerAuthentication"} <= kinds
    assert "HorizontalPodAutoscaler" in kinds  # the KEDA-less alternative
    for name, doc in _documents():
        assert doc.get("apiVersion") and doc.get("kind"), name


def test_kustomization_lists_existing_files_and_one_scaler() -> None:
    (kustomization,) = _by_kind("Kustomization")
    for resource in kustomization["resources"]:
        assert (K8S_DIR / resource).is_file(), resource
    assert "scaledobject.yaml" in kustomization["resources"]
    assert not any("hpa" in resource for resource in kustomization["resources"]), "KEDA and an HPA would fight"


def test_the_deployment_has_probes_resources_and_runs_as_non_root() -> None:
    (deployment,) = _by_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = _worker_container()
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["periodSeconds"] > 0, probe
    assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
    assert container["resources"]["limits"]["memory"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    shutdown = float(_configmap()["data"]["OTEL_EVAL_WORKER_SHUTDOWN_TIMEOUT"])
    assert pod["terminationGracePeriodSeconds"] > shutdown, "SIGKILL before the worker has drained"


def _configmap() -> dict[str, Any]:
    (configmap,) = _by_kind("ConfigMap")
    return configmap


def test_settings_come_from_the_configmap_and_the_secret() -> None:
    container = _worker_container()
    sources = {next(iter(ref)): next(iter(ref.values()))["name"] for ref in container["envFrom"]}
    assert sources["configMapRef"] == _configmap()["metadata"]["name"]
    secret_names = {s["metadata"]["name"] for s in _by_kind("Secret")}
    assert sources["secretRef"] in secret_names


def test_configmap_and_secret_use_only_variables_otel_eval_reads() -> None:
    known = known_environment_variables()
    (worker_secret,) = [s for s in _by_kind("Secret") if s["metadata"]["name"] == "otel-eval-worker"]
    for key in [*_configmap()["data"], *worker_secret["stringData"]]:
        assert key.startswith(("OTEL_EVAL_", "OTEL_", "GOOGLE_")), key
        if key.startswith("OTEL_EVAL_"):
            assert key in known, f"{key} is not an otel-eval setting"
    assert "OTEL_EVAL_KAFKA_SASL_PASSWORD" in worker_secret["stringData"]
    assert "OTEL_EVAL_KAFKA_SASL_PASSWORD" not in _configmap()["data"], "a password in a ConfigMap"


def test_each_replica_has_its_own_instance_id() -> None:
    env = {item["name"]: item for item in _worker_container()["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "service.instance.id=$(POD_NAME)" in env["OTEL_RESOURCE_ATTRIBUTES"]["value"]


def test_keda_scales_the_worker_on_its_consumer_group_lag() -> None:
    (scaled,) = _by_kind("ScaledObject")
    (deployment,) = _by_kind("Deployment")
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["consumerGroup"] == _configmap()["data"]["OTEL_EVAL_KAFKA_GROUP_ID"]
    assert trigger["metadata"]["bootstrapServers"] == _configmap()["data"]["OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS"]
    assert int(trigger["metadata"]["lagThreshold"]) > 0
    assert scaled["spec"]["minReplicaCount"] >= 2
    (auth,) = _by_kind("TriggerAuthentication")
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]


def test_the_hpa_alternative_scales_on_the_emitted_lag_metric() -> None:
    (hpa,) = _by_kind("HorizontalPodAutoscaler")
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["metric"]["name"] in prometheus_names.emitted_prometheus_names()
    assert metric["external"]["metric"]["name"] == "otel_eval_worker_consumer_lag"


def _probe(probe: str) -> tuple[str, int]:
    """(path, port number) of an httpGet probe of the worker container."""
    container = _worker_container()
    get = container[probe]["httpGet"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    return get["path"], ports.get(get["port"], get["port"])


def test_the_disruption_budget_lets_unready_workers_be_evicted() -> None:
    # Every worker is unready in a broker or Collector outage (/readyz): with the default IfHealthyBudget policy the
    # budget would refuse every eviction, and a node drain would wait for the outage to end.
    (budget,) = _by_kind("PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_the_probes_use_the_workers_health_endpoints_on_its_http_port() -> None:
    assert _probe("livenessProbe")[0] == _probe("startupProbe")[0] == "/healthz"
    assert _probe("readinessProbe")[0] == "/readyz"
    port = int(_configmap()["data"].get("OTEL_EVAL_WORKER_METRICS_PORT", WorkerSettings().worker_metrics_port))
    assert {_probe(p)[1] for p in ("livenessProbe", "readinessProbe", "startupProbe")} == {port}


def test_the_probe_paths_are_served_by_the_worker() -> None:
    health = WorkerHealth()
    server = HealthServer(health, "127.0.0.1", 0)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        status, _, _ = server.respond(_probe(probe)[0])
        assert status != 404, probe
    server.stop()
