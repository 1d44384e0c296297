"""An agent in another language, on the path documented for it: ADK for JavaScript's spans (recorded under Node.js by
``tests/data/frameworks/generate.py``, as its OpenTelemetry SDK serialises them for OTLP/HTTP JSON) sent to rotel (a
real Collector) as that SDK's exporter sends them, rotel writes them to Kafka as OTLP protobuf, and the worker scores
them as ``otel-eval run`` scores the same files."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from otel_eval.evaluation.core import EvaluationCore
from otel_eval.model import EvalSet
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_bytes
from tests._kafka import random_topic, read_topic
from tests.worker._collector import collector_worker, run_until_scored, running_rotel
from tests.worker._harness import MemoryTelemetry

ADK_JS = Path(__file__).resolve().parents[1] / "data" / "frameworks" / "adk_js"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


def _eval_set() -> EvalSet:
    """One case per turn, from ADK's own session events (``tests/data/frameworks/adk_js/*.record.json``): the user's
    text, the tool calls the model made and the final text."""
    cases = []
    for path in sorted(ADK_JS.glob("*.record.json")):
        for index, turn in enumerate(json.loads(path.read_text(encoding="utf-8"))["turns"]):
            parts = [p for e in turn["events"] for p in (e.get("content") or {}).get("parts") or []]
            final = [p["text"] for e in turn["events"] for p in e["content"]["parts"] if "text" in p][-1]
            invocation = {
                "invocation_id": f"{path.name.split('.')[0]}-{index}",
                "user_content": {"role": "user", "parts": [{"text": turn["user"]}]},
                "final_response": {"role": "model", "parts": [{"text": final}]},
                "intermediate_data": {"tool_uses": [p["functionCall"] for p in parts if "functionCall" in p]},
            }
            cases.append({"eval_id": invocation["invocation_id"], "conversation": [invocation]})
    return EvalSet.model_validate({"eval_set_id": "adk_js", "eval_cases": cases})


def _post_json(endpoint: str, document: bytes) -> int:
    """POSTs an OTLP/JSON request as the JavaScript SDK's OTLP/HTTP exporter does; waits for rotel to listen."""
    request = urllib.request.Request(endpoint, data=document, headers={"Content-Type": "application/json"})
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _scores(telemetry: MemoryTelemetry) -> Counter[tuple[str, str, str, str, float | None]]:
    return Counter((e.trace_id, e.span_id, e.metric, e.label, e.score) for e in telemetry.events())


@pytest.mark.kafka
@pytest.mark.integration
async def test_adk_for_javascript_through_rotel_scores_like_run_on_the_same_spans(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    documents = [gzip.decompress(path.read_bytes()) for path in sorted(ADK_JS.glob("*.otlp.json.gz"))]
    spans_topic, eval_set = random_topic("otlp_spans"), _eval_set()
    telemetry, reference = MemoryTelemetry(), MemoryTelemetry()

    def core(t: MemoryTelemetry) -> EvaluationCore:
        return EvaluationCore(criteria=CRITERIA, eval_set=eval_set, emitters=t.emitters(), judge_configured=False)

    reference_core = core(reference)  # what ``otel-eval run`` does with each file
    for document in documents:
        for trace_ in rebuild_traces(read_trace_bytes(document, source="adk_js").spans):
            assert trace_.convention == "adk"
            for invocation in trace_.invocations:
                await reference_core.evaluate(EvaluationRequest(invocations=[invocation]))
    expected = _scores(reference)
    assert len({(t, s) for t, s, *_ in expected}) == 9  # the eight scenarios' turns
    passed = Counter(metric for _, _, metric, label, _ in expected if label == "pass")
    assert passed == {"tool_trajectory_avg_score": 9, "response_match_score": 9}  # every turn paired with its case

    worker = collector_worker(kafka_bootstrap, core(telemetry), telemetry, spans_topic)
    with running_rotel(kafka_bootstrap, spans_topic, tmp_path) as endpoint:
        for document in documents:  # as @opentelemetry/exporter-trace-otlp-http sends them (JSON)
            assert await asyncio.to_thread(_post_json, endpoint, document) == 200
        assert await read_topic(kafka_bootstrap, spans_topic, expected=1, timeout=20)
        await run_until_scored(worker, lambda: sum(_scores(telemetry).values()) >= sum(expected.values()))
    assert _scores(telemetry) == expected
    assert worker.metrics.snapshot().get("dead_letters", 0) == 0
    telemetry.shutdown()
    reference.shutdown()
