"""``otel-eval convert`` on recorded traces."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path

from google.adk.evaluation.eval_case import Invocation as AdkInvocation

from otel_eval import semconv
from tests.cli.conftest import AGENTEVALS, STRANDS, CliResult


def test_json_output_is_adk_invocations_per_trace(cli: Callable[..., CliResult]) -> None:
    result = cli("convert", AGENTEVALS / "helm.json", "--output", "json")
    assert result.exit_code == 0, result.stderr
    traces = result.json()["traces"]
    assert len(traces) == 1
    trace = traces[0]
    assert re.fullmatch(r"[0-9a-f]{32}", trace["trace_id"])
    assert trace["convention"].startswith("adk")
    [invocation] = trace["invocations"]
    parsed = AdkInvocation.model_validate(invocation)  # ADK itself accepts what we print
    assert [call.name for call in parsed.intermediate_data.tool_uses] == ["helm_list_releases"]  # type: ignore[union-attr]
    assert "user_content" in invocation and "userContent" not in invocation  # snake_case like ADK


def test_traces_come_out_in_start_time_order(cli: Callable[..., CliResult]) -> None:
    files = [AGENTEVALS / "k8s.json", AGENTEVALS / "helm.json", STRANDS / "adk_live_spans.json"]
    result = cli("convert", *files, "--output", "json")
    assert result.exit_code == 0, result.stderr
    starts = [t["invocations"][0]["creation_timestamp"] for t in result.json()["traces"] if t["invocations"]]
    assert len(starts) == 3
    assert starts == sorted(starts)


def test_unreadable_file_is_named_and_the_others_still_come_out(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("this is not a trace")
    result = cli("convert", bad, AGENTEVALS / "helm.json", "--output", "json")
    assert result.exit_code == 2
    assert "notes.txt" in result.stderr
    assert len(result.json()["traces"]) == 1


def test_no_file_read_prints_its_error_and_no_empty_table(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("convert", tmp_path / "missing.json")
    assert result.exit_code == 2
    assert "missing.json: cannot read trace file" in result.stderr
    assert result.stdout == ""


def test_table_output_shows_user_text_and_tool_calls(cli: Callable[..., CliResult]) -> None:
    result = cli("convert", AGENTEVALS / "helm.json")
    assert result.exit_code == 0, result.stderr
    assert "helm_list_releases" in result.stdout


def test_json_output_leaves_out_null_fields_and_stays_valid_adk(cli: Callable[..., CliResult]) -> None:
    result = cli("convert", AGENTEVALS / "helm.json", AGENTEVALS / "k8s.json", "--output", "json")
    assert result.exit_code == 0, result.stderr
    assert "null" not in result.stdout
    invocations = [inv for trace in result.json()["traces"] for inv in trace["invocations"]]
    assert len(invocations) >= 2
    for invocation in invocations:
        assert AdkInvocation.model_validate(invocation).user_content.parts


def test_an_invocations_malformed_messages_are_warned_of(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """A problem met while rebuilding one invocation (here its user message, not JSON) is reported with the trace's
    own problems: named by span and attribute with --verbose, in the JSON output, and counted otherwise."""
    spans = json.loads((STRANDS / "otel_genai_convention_spans.json").read_text(encoding="utf-8"))
    root = spans[0]
    root["attributes"][semconv.GEN_AI_INPUT_MESSAGES] = "[{not json"
    trace = tmp_path / "one_span.json"
    trace.write_text(json.dumps([root]), encoding="utf-8")
    where = f"span {root['span_id']} ({root['name']!r}): {semconv.GEN_AI_INPUT_MESSAGES}: not valid JSON"

    verbose = cli("convert", trace, "--verbose")
    assert verbose.exit_code == 0, verbose.stderr
    assert any(line.startswith(f"warning: {where}") for line in verbose.stderr.splitlines()), verbose.stderr
    assert "no user message found" in verbose.stderr
    [reported] = cli("convert", trace, "--output", "json").json()["traces"]
    assert [w for w in reported["warnings"] if w.startswith(where)], reported["warnings"]
    assert "note: 2 warning(s)" in cli("convert", trace).stderr


def test_a_gzip_compressed_file_is_converted_and_scored(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    compressed = tmp_path / "helm.json.gz"
    compressed.write_bytes(gzip.compress((AGENTEVALS / "helm.json").read_bytes()))
    converted = cli("convert", compressed, "--output", "json")
    assert converted.exit_code == 0, converted.stderr
    assert converted.json() == cli("convert", AGENTEVALS / "helm.json", "--output", "json").json()
    scored = cli("run", compressed)
    assert scored.exit_code == 0, scored.stderr
    assert "tool_call_count_v1" in scored.stdout
