"""Offline ``EVENT_ONLY``: ``otel-eval convert`` / ``run`` given OTLP log files beside the trace files.

Real ADK agents (scripted model, semconv-aligned schema 2) run once with ``SPAN_ONLY`` and once with ``EVENT_ONLY``
content capture. The ``EVENT_ONLY`` spans carry no content; their log records are written with the SDK OTLP
exporter's own encoders (protobuf ``ExportLogsServiceRequest`` and its JSON form, as the Collector's file exporter
writes it). Given the log file beside the trace file, the commands rebuild the same invocations and give the same
scores as from the ``SPAN_ONLY`` trace file alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.cli.conftest import CliResult
from tests.reconstruct.adk_agents import record_runs

NAMES = ("single_tool", "sequential_tools", "parallel_tools", "multi_turn", "no_tool", "transfer")
_VARYING = ("invocation_id", "creation_timestamp", "duration", "model_duration", "tool_duration")


pytestmark = pytest.mark.usefixtures("quiet_adk")


def _record(mode: str, folder: Path) -> list[dict[str, Any]]:
    """Runs every scenario with ``mode``; writes ``traces.pb``, ``logs.pb`` and ``logs.json``; returns eval cases
    holding ADK's own invocations."""
    recorded = asyncio.run(record_runs(NAMES, capture_mode=mode))  # the commands run their own event loop
    folder.mkdir()
    (folder / "traces.pb").write_bytes(encode_spans(recorded.spans).SerializeToString())
    (folder / "logs.pb").write_bytes(encode_logs(recorded.logs).SerializeToString())
    (folder / "logs.json").write_text(json.dumps(MessageToDict(encode_logs(recorded.logs))))
    return recorded.cases


def _comparable(converted: dict[str, Any]) -> list[Any]:
    invocations = [inv for trace in converted["traces"] for inv in trace["invocations"]]
    for invocation in invocations:
        for key in _VARYING:
            invocation.pop(key, None)
    text = json.dumps(sorted(invocations, key=lambda inv: json.dumps(inv["user_content"])), sort_keys=True)
    for quoted in {part for part in text.split('"') if part.startswith("adk-")}:
        text = text.replace(quoted, "adk-id")  # ADK's call ids differ between runs
    result: list[Any] = json.loads(text)
    return result


def test_log_files_beside_trace_files_give_the_span_only_invocations_and_scores(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    cases = _record("SPAN_ONLY", tmp_path / "span_only")
    _record("EVENT_ONLY", tmp_path / "event_only")
    span_only, event_only = tmp_path / "span_only", tmp_path / "event_only"

    expected = cli("convert", span_only / "traces.pb", "--output", "json")
    assert expected.exit_code == 0, expected.stderr
    without_logs = cli("convert", event_only / "traces.pb", "--output", "json")
    assert _comparable(without_logs.json()) != _comparable(expected.json())  # the content is only in the logs
    for logs in ("logs.pb", "logs.json"):
        converted = cli("convert", event_only / "traces.pb", event_only / logs, "--output", "json", "--verbose")
        assert converted.exit_code == 0, converted.stderr
        assert "match no span" not in converted.stderr
        assert _comparable(converted.json()) == _comparable(expected.json()), logs

    eval_set = tmp_path / "scenarios.evalset.json"
    eval_set.write_text(AdkEvalSet.model_validate({"eval_set_id": "scenarios", "eval_cases": cases}).model_dump_json())
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.6}}))

    def scores(*files: Path) -> dict[str, Any]:
        result = cli("run", *files, "--eval-set", eval_set, "--config", config, "--output", "json")
        return {
            conversation["eval_id"]: {
                m["metric_name"]: (m["score"], m["eval_status"])
                for m in conversation["metrics"]
                if m["metric_name"] != "invocation_duration_v1"  # wall time differs between any two runs
            }
            for conversation in result.json()["results"]
        }

    from_spans = scores(span_only / "traces.pb")
    assert from_spans == scores(event_only / "traces.pb", event_only / "logs.json")
    assert {case["tool_trajectory_avg_score"] for case in from_spans.values()} == {(1.0, "PASSED")}
    assert {case["response_match_score"][1] for case in from_spans.values()} == {"PASSED"}
    assert set(from_spans) == set(NAMES)


def test_a_content_log_record_without_ids_is_skipped_with_a_warning_naming_it(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    logs = tmp_path / "logs.json"
    record = {"eventName": "gen_ai.client.inference.operation.details", "traceId": "", "spanId": ""}
    logs.write_text(json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}))
    result = cli("convert", logs, "--output", "json", "--verbose")
    assert result.exit_code == 0
    assert f"{logs}: log record resourceLogs[0].scopeLogs[0].logRecords[0]" in result.stderr
    assert "traceId" in result.stderr
