"""``otel-eval run``: the published agentevals outcomes, exit codes and clear errors."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult

from otel_eval.cli._common import EXIT_FAILED, EXIT_NOT_EVALUATED
from tests.cli.conftest import AGENTEVALS, CliResult

EVAL_SET = AGENTEVALS.parent.parent / "evalsets" / "eval_set_helm.json"


def _metric(result: CliResult, name: str) -> dict[str, object]:
    [conversation] = result.json()["results"]
    return next(m for m in conversation["metrics"] if m["metric_name"] == name)


def test_helm_trace_passes_the_helm_trajectory(cli: Callable[..., CliResult]) -> None:
    result = cli(
        "run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "-m", "tool_trajectory_avg_score", "--output", "json"
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    metric = _metric(result, "tool_trajectory_avg_score")
    assert metric["score"] == 1.0
    assert metric["eval_status"] == "PASSED"
    assert metric["threshold"] == 1.0
    assert metric["per_invocation_scores"] == [1.0]
    [conversation] = result.json()["results"]
    assert conversation["eval_id"] == "helm_list_releases"


def test_k8s_trace_fails_the_helm_trajectory_with_exit_code_1(cli: Callable[..., CliResult]) -> None:
    result = cli(
        "run", AGENTEVALS / "k8s.json", "--eval-set", EVAL_SET, "-m", "tool_trajectory_avg_score", "--output", "json"
    )
    assert result.exit_code == 1
    metric = _metric(result, "tool_trajectory_avg_score")
    assert metric["score"] == 0.0
    assert metric["eval_status"] == "FAILED"


def test_adks_older_test_json_format_is_accepted(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    [case] = json.loads(EVAL_SET.read_text())["eval_cases"]
    [turn] = case["conversation"]
    legacy = [
        {
            "query": turn["user_content"]["parts"][0]["text"],
            "expected_tool_use": [
                {"tool_name": use["name"], "tool_input": use["args"]} for use in turn["intermediate_data"]["tool_uses"]
            ],
            "reference": turn["final_response"]["parts"][0]["text"],
        }
    ]
    eval_data = tmp_path / "helm.test.json"
    eval_data.write_text(json.dumps(legacy))
    for trace, status in (("helm.json", "PASSED"), ("k8s.json", "FAILED")):
        result = cli(
            "run", AGENTEVALS / trace, "--eval-set", eval_data, "-m", "tool_trajectory_avg_score", "--output", "json"
        )
        assert _metric(result, "tool_trajectory_avg_score")["eval_status"] == status, result.stdout + result.stderr
        assert result.json()["results"][0]["eval_id"] == "helm"


def test_failed_trajectory_table_shows_expected_and_actual_calls(cli: Callable[..., CliResult]) -> None:
    result = cli("run", AGENTEVALS / "k8s.json", "--eval-set", EVAL_SET, "-m", "tool_trajectory_avg_score")
    assert result.exit_code == 1
    assert "FAILED" in result.stdout
    assert "expected: helm_list_releases" in result.stdout
    assert "actual:   (no tool calls)" in result.stdout


def test_reference_metric_without_eval_set_is_not_evaluated_with_reason(cli: Callable[..., CliResult]) -> None:
    result = cli("run", AGENTEVALS / "helm.json", "-m", "tool_trajectory_avg_score", "--output", "json")
    metric = _metric(result, "tool_trajectory_avg_score")
    assert metric["eval_status"] == "NOT_EVALUATED"
    assert metric["score"] is None
    assert "--eval-set" in str(metric["explanation"])
    # a gate whose threshold was compared with nothing does not pass (exit 3, as a judge that judged nothing)
    assert result.exit_code == EXIT_NOT_EVALUATED, result.stderr
    assert (
        "error: tool_trajectory_avg_score was evaluated on no invocation: no conversation had a reference"
        in result.stderr
    )
    assert "--allow-not-evaluated" in result.stderr
    assert (
        cli("run", AGENTEVALS / "helm.json", "-m", "tool_trajectory_avg_score", "--allow-not-evaluated").exit_code == 0
    )


def test_an_eval_set_that_pairs_with_no_conversation_fails_the_gate(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """A changed prompt (helm_2.json asks "get me all the Helm releases") pairs with no case of the eval set: every
    reference metric is NOT_EVALUATED, and a CI gate on them checked nothing. It exited 0."""
    result = cli("run", AGENTEVALS / "helm_2.json", "--eval-set", EVAL_SET)  # ADK's default criteria
    assert result.exit_code == EXIT_NOT_EVALUATED, result.stdout + result.stderr
    for name in ("tool_trajectory_avg_score", "response_match_score"):
        assert f"error: {name} was evaluated on no invocation: no conversation had a reference" in result.stderr
    assert "tool_call_count_v1 was evaluated" not in result.stderr  # informational: no threshold to check
    assert "Traceback" not in result.stderr
    # an empty eval set (ADK's older list form, no case) checks nothing either
    empty = tmp_path / "empty.test.json"
    empty.write_text("[]")
    assert cli("run", AGENTEVALS / "helm.json", "--eval-set", empty).exit_code == EXIT_NOT_EVALUATED
    # one conversation paired is a verdict: the unpaired one's NOT_EVALUATED leaves the exit code alone, as before
    both = cli("run", AGENTEVALS / "helm.json", AGENTEVALS / "helm_2.json", "--eval-set", EVAL_SET)
    assert both.exit_code == 0, both.stdout + both.stderr
    regressed = cli("run", AGENTEVALS / "k8s.json", AGENTEVALS / "helm_2.json", "--eval-set", EVAL_SET)
    assert regressed.exit_code == EXIT_FAILED, regressed.stdout + regressed.stderr


def test_default_metrics_include_informational_efficiency(cli: Callable[..., CliResult]) -> None:
    result = cli("run", AGENTEVALS / "helm.json", "--output", "json")
    assert result.exit_code == 0, result.stderr
    tool_calls = _metric(result, "tool_call_count_v1")
    assert tool_calls["eval_status"] == "INFORMATIONAL"
    assert tool_calls["score"] == 1.0


def test_a_conversation_with_only_informational_metrics_is_labelled_so(cli: Callable[..., CliResult]) -> None:
    table = cli("run", AGENTEVALS / "k8s.json")
    assert table.exit_code == 0, table.stderr
    assert ": INFORMATIONAL (no metric with a threshold)" in table.stdout.splitlines()[0]
    as_json = cli("run", AGENTEVALS / "k8s.json", "--output", "json")
    assert json.loads(as_json.stdout)["results"][0]["status"] == "NOT_EVALUATED"  # ADK's case rule, unchanged


def test_results_dir_writes_an_adk_evalset_result(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli(
        "run",
        AGENTEVALS / "helm.json",
        "--eval-set",
        EVAL_SET,
        "-m",
        "tool_trajectory_avg_score",
        "--results-dir",
        tmp_path,
    )
    assert result.exit_code == 0, result.stderr
    [path] = tmp_path.glob("*.evalset_result.json")
    parsed = AdkEvalSetResult.model_validate_json(path.read_text())
    [case] = parsed.eval_case_results
    assert case.eval_id == "helm_list_releases"
    assert case.final_eval_status.value == 1
    assert case.overall_eval_metric_results[0].score == 1.0


def test_unknown_metric_is_a_one_line_error(cli: Callable[..., CliResult]) -> None:
    result = cli("run", AGENTEVALS / "helm.json", "-m", "tool_trajectory_avg_scor")
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: -m tool_trajectory_avg_scor: unknown metric 'tool_trajectory_avg_scor'")
    assert "tool_trajectory_avg_score" in line  # the suggestion


def test_a_bad_metric_of_the_config_is_named_with_the_file(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """An unknown metric or an invalid criterion in --config said neither the file nor where in it."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": {"halucinations_v1": 0.8}}))
    result = cli("run", AGENTEVALS / "helm.json", "--config", config)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {config}: criteria.halucinations_v1: unknown metric 'halucinations_v1'; did you mean hallucinations_v1?"
    ]
    config.write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "INORDER"}}})
    )
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", config)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {config}: criteria.tool_trajectory_avg_score: invalid criterion for metric ")
    assert "match_type: 'INORDER' is not one of EXACT, IN_ORDER, ANY_ORDER" in line


def test_threshold_outside_range_is_accepted_as_adk_accepts_it(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 1.5}}))
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--config", config, "--output", "json")
    assert result.exit_code == 1  # it can never pass (tests/cli/test_config_adk_parity.py checks the warning)
    assert _metric(result, "response_match_score")["eval_status"] == "FAILED"


def test_invalid_eval_set_names_file_and_json_path(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    bad = tmp_path / "set.json"
    bad.write_text(
        json.dumps({"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation": [{"final_response": {}}]}]})
    )
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", bad)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert "set.json" in line
    assert "eval_cases[0].conversation[0].user_content" in line


def test_an_eval_id_not_in_the_eval_set_stops_the_run_naming_the_file_and_the_cases(
    cli: Callable[..., CliResult],
) -> None:
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET, "--eval-id", "nope")
    assert (result.exit_code, result.stdout) == (2, "")  # nothing scored
    assert (
        result.stderr
        == f"error: {EVAL_SET}: eval set 'helm_eval_set' has no case 'nope'; its cases: helm_list_releases\n"
    )


def test_an_unknown_eval_id_lists_the_first_ten_cases_of_a_large_eval_set(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    payload = json.loads(EVAL_SET.read_text())
    [case] = payload["eval_cases"]
    payload["eval_cases"] = [{**case, "eval_id": f"case_{index:02}"} for index in range(25)]
    many = tmp_path / "many.evalset.json"
    many.write_text(json.dumps(payload))
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", many, "--eval-id", "case_99")
    assert result.exit_code == 2
    cases = ", ".join(f"case_{index:02}" for index in range(10))
    assert result.stderr.endswith(f"has no case 'case_99'; its cases: {cases}, … (+15 more)\n")


def test_eval_id_without_an_eval_set_is_refused(cli: Callable[..., CliResult]) -> None:
    result = cli("run", AGENTEVALS / "helm.json", "--eval-id", "helm_list_releases")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "error: --eval-id needs --eval-set (it chooses a case of that eval set)\n"


def test_a_known_eval_id_pairs_the_conversation_with_that_case(cli: Callable[..., CliResult]) -> None:
    result = cli("run", AGENTEVALS / "k8s.json", "--eval-set", EVAL_SET, "--eval-id", "helm_list_releases",
                 "-m", "tool_trajectory_avg_score", "--output", "json")  # fmt: skip
    [conversation] = result.json()["results"]
    assert conversation["eval_id"] == "helm_list_releases"
    assert result.exit_code == 1  # k8s' calls are not helm's


def test_trace_without_invocations_is_a_clear_error(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    trace = tmp_path / "http_only.json"
    trace.write_text(
        json.dumps(
            [
                {
                    "trace_id": "0af7651916cd43dd8448eb211c80319c",
                    "span_id": "b7ad6b7169203331",
                    "parent_span_id": None,
                    "name": "GET /healthz",
                    "start_time": 1,
                    "end_time": 2,
                    "attributes": {"http.method": "GET"},
                    "scope": {"name": "opentelemetry.instrumentation.fastapi"},
                    "status": {"code": "UNSET"},
                    "span_events": [],
                }
            ]
        )
    )
    result = cli("run", trace)
    assert result.exit_code == 2
    assert "0af7651916cd43dd8448eb211c80319c" in result.stderr
    assert "no agent invocation" in result.stderr


def test_test_config_beside_the_eval_set_gives_the_criteria_as_in_adk(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    eval_set = tmp_path / "helm.evalset.json"
    eval_set.write_text(EVAL_SET.read_text())
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.95}}))
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", eval_set, "--output", "json")
    [conversation] = result.json()["results"]
    assert [m["metric_name"] for m in conversation["metrics"] if m["threshold"] is not None] == ["response_match_score"]
    assert _metric(result, "response_match_score")["threshold"] == 0.95
    assert f"criteria from {tmp_path / 'test_config.json'}" in result.stderr
    explicit = tmp_path / "other.json"
    explicit.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", eval_set, "--config", explicit, "--output", "json")
    assert _metric(result, "tool_trajectory_avg_score")["eval_status"] == "PASSED"
    assert all(m["metric_name"] != "response_match_score" for m in result.json()["results"][0]["metrics"])


def test_json_results_carry_the_evaluator_provenance_that_changes_with_the_criterion(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    def evaluator(threshold: float) -> dict[str, object]:
        config = tmp_path / f"config_{threshold}.json"
        config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": threshold}}))
        result = cli("run", AGENTEVALS / "helm.json", "--eval-set", EVAL_SET,
                     "--config", config, "--output", "json")  # fmt: skip
        provenance = _metric(result, "tool_trajectory_avg_score")["evaluator"]
        assert isinstance(provenance, dict)
        return provenance

    strict, same, lenient = evaluator(1.0), evaluator(1.0), evaluator(0.5)
    assert strict == same
    assert strict["type"] == "deterministic" and strict["judge_model"] is None
    assert str(strict["id"]).startswith("tool_trajectory_avg_score/")
    assert strict["version"] != lenient["version"] and len(str(strict["version"])) == 12


@pytest.mark.parametrize("threshold", [(700, 10, 10), (0, 10, 10)], ids=["default", "collector-off"])
def test_run_leaves_the_garbage_collector_as_it_found_it(
    cli: Callable[..., CliResult], threshold: tuple[int, int, int]
) -> None:
    before = gc.get_threshold()
    gc.set_threshold(*threshold)
    try:
        result = cli("run", AGENTEVALS / "helm.json", "--output", "json")
        assert result.exit_code == 0, result.stdout + result.stderr
        assert gc.get_threshold() == threshold
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_a_bad_since_or_until_names_its_flag(cli: Callable[..., CliResult], flag: str) -> None:
    result = cli("run", "--from", "phoenix", flag, "abc")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"Invalid value for '{flag}': 'abc': expected a duration ago (2h) or an ISO 8601 time" in result.stderr


def test_a_trace_without_an_invocation_beside_scored_ones_is_a_warning(cli: Callable[..., CliResult]) -> None:
    """AutoGen's recording holds a trace with only a `create_agent` span: said as `error:` while the run exited 0."""
    result = cli("run", AGENTEVALS.parent / "strands-evals" / "autogen_live_spans.json")
    assert result.exit_code == 0, result.stderr
    assert (
        "warning: trace 0295b55e1b7a83fe709fba9715e803d4: no agent invocation found (genai convention); not scored"
        in (result.stderr)
    )
    assert "error:" not in result.stderr


def test_a_trace_file_that_cannot_be_read_stops_the_run_before_anything_is_scored(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """docs/offline.md: exit 2 for a file that cannot be read, "checked before anything is scored". The other files
    were scored (judge calls included) and printed, then the run exited 2."""
    empty = tmp_path / "empty.json"
    empty.write_text("")
    for bad in (tmp_path / "missing.json", empty):
        result = cli("run", AGENTEVALS / "k8s.json", bad, "--eval-set", EVAL_SET, "--results-dir", tmp_path / "out")
        assert result.exit_code == 2, result.stdout + result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith(f"error: {bad}: ")
        assert result.stderr.strip().splitlines()[-1] == "error: 1 trace file(s) could not be read; nothing was scored"
        assert list((tmp_path / "out").iterdir()) == []


def test_eval_cases_no_conversation_paired_with_are_named(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """A case whose run the agent did not record (it crashed before its root span ended, the harness skipped it) was
    checked by nothing, and the gate passed without a word."""
    golden = tmp_path / "golden.evalset.json"
    assert cli("golden", AGENTEVALS / "helm.json", AGENTEVALS / "helm_3.json", "-o", golden).exit_code == 0
    cases = [case["eval_id"] for case in json.loads(golden.read_text())["eval_cases"]]
    result = cli("run", AGENTEVALS / "helm.json", "--eval-set", golden, "-m", "tool_trajectory_avg_score")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (
        f"warning: {golden}: 1 of 2 eval case(s) paired with no conversation, so nothing was checked against them: "
        f"{cases[1]}"
    ) in result.stderr
    both = cli("run", AGENTEVALS / "helm.json", AGENTEVALS / "helm_3.json", "--eval-set", golden)
    assert "paired with no conversation" not in both.stderr
    chosen = cli("run", AGENTEVALS / "helm.json", "--eval-set", golden, "--eval-id", cases[0])
    assert "paired with no conversation" not in chosen.stderr
