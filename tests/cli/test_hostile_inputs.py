"""``otel-eval convert`` and ``run`` on hostile traces (``tests/data/hostile/``): every shape finishes in seconds with
exit 0 (what was repaired is a warning) or 2 (a clear error naming the file), never a traceback. ``run`` may also
exit 1, the verdict of a metric that FAILED on a damaged invocation: the test checks it is exactly that."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import STRANDS, CliResult
from tests.data.hostile import shapes
from tests.data.hostile.generate import CORPUS_SIZES, HERE, LARGE_SIZES, corpus_name

CORPUS = [HERE / corpus_name(shape, convention) for shape in CORPUS_SIZES for convention in shapes.CONVENTIONS]


@pytest.fixture(scope="module")
def eval_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One case: the intact invocation every hostile file holds."""
    turn = {
        "invocation_id": "weather-1",
        "user_content": {"role": "user", "parts": [{"text": shapes.USER_TEXT}]},
        "final_response": {"role": "model", "parts": [{"text": shapes.FINAL_TEXT}]},
        "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]},
    }
    path = tmp_path_factory.mktemp("hostile") / "weather.evalset.json"
    path.write_text(
        json.dumps({"eval_set_id": "hostile", "eval_cases": [{"eval_id": "weather", "conversation": [turn]}]})
    )
    return path


def _no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


@pytest.mark.timeout(30)
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_convert_rebuilds_the_intact_invocation(cli: Callable[..., CliResult], path: Path) -> None:
    result = cli("convert", path, "--output", "json")
    assert result.exit_code == 0, result.stderr
    _no_traceback(result)
    traces = {t["trace_id"]: t for t in result.json()["traces"]}
    [good] = traces[shapes.GOOD_TRACE]["invocations"]
    assert [u["name"] for u in good["intermediate_data"]["tool_uses"]] == ["get_weather"]
    assert shapes.HOSTILE_TRACE in traces


@pytest.mark.timeout(30)
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_run_evaluates_and_exits_with_its_verdict(cli: Callable[..., CliResult], path: Path, eval_set: Path) -> None:
    result = cli("run", path, "--eval-set", eval_set, "-m", "tool_trajectory_avg_score", "--output", "json")
    _no_traceback(result)
    statuses = [m["eval_status"] for r in result.json()["results"] for m in r["metrics"]]
    assert statuses
    # 3: a hostile trace that pairs with no case left the metric evaluated on no invocation (nothing checked)
    expected = 1 if "FAILED" in statuses else 3 if set(statuses) == {"NOT_EVALUATED"} else 0
    assert result.exit_code == expected, (statuses, result.stderr)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", ["deep_chain", "wide_fanout", "huge_attributes"])
def test_full_size_shapes_convert(cli: Callable[..., CliResult], tmp_path: Path, shape: str) -> None:
    path = tmp_path / f"{shape}.json"
    path.write_text(json.dumps(shapes.otlp_json(shapes.hostile_document("adk_v2", shape, LARGE_SIZES[shape]))))
    result = cli("convert", path, "--output", "json")
    assert result.exit_code == 0, result.stderr[-2000:]
    _no_traceback(result)
    traces = {t["trace_id"]: t for t in result.json()["traces"]}
    assert len(traces[shapes.GOOD_TRACE]["invocations"]) == 1


@pytest.mark.timeout(30)
def test_json_nested_too_deeply_is_a_clear_error(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """An attribute nested 100,000 levels deep: the file is rejected by name, the next file still converts."""
    document = shapes.otlp_json(shapes.good_invocation("genai"))
    text = json.dumps(document).replace(
        '"attributes": [', '"attributes": [{"key": "deep", "value": ' + "[" * 100_000 + "]" * 100_000 + "},", 1
    )
    deep = tmp_path / "deep_nesting.json"
    deep.write_text(text)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(document))
    result = cli("convert", deep, good, "--output", "json")
    assert result.exit_code == 2
    _no_traceback(result)
    assert "deep_nesting.json" in result.stderr and "nested too deeply" in result.stderr
    [trace] = result.json()["traces"]
    assert len(trace["invocations"]) == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("command", "exit_code"),
    [
        (("validate", "{deep}"), 1),
        (("run", "{trace}", "--eval-set", "{deep}"), 2),
        (("run", "{trace}", "--config", "{deep}"), 2),
    ],
    ids=["validate", "run --eval-set", "run --config"],
)
def test_an_eval_set_or_config_nested_too_deeply_is_a_clear_error(
    cli: Callable[..., CliResult], tmp_path: Path, command: tuple[str, ...], exit_code: int
) -> None:
    """An eval set whose cases are nested 100,000 levels deep: refused naming the file, not a RecursionError."""
    deep = tmp_path / "deep.evalset.json"
    deep.write_text('{"eval_set_id": "x", "eval_cases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    trace = tmp_path / "good.json"
    trace.write_text(json.dumps(shapes.otlp_json(shapes.good_invocation("genai"))))
    result = cli(*(part.format(deep=deep, trace=trace) for part in command))
    assert result.exit_code == exit_code, result.stderr
    _no_traceback(result)
    assert f"{deep}: JSON nested too deeply" in result.stderr + result.stdout


@pytest.mark.timeout(60)
def test_a_lone_surrogate_escape_is_written_by_every_output(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """``"\\ud800"`` in a recorded message is valid JSON with no UTF-8 form: convert's outputs and run's results file
    used to end in a traceback on it."""
    spans = json.loads((STRANDS / "otel_genai_convention_spans.json").read_text())
    attributes = spans[0]["attributes"]
    attributes["gen_ai.input.messages"] = attributes["gen_ai.input.messages"].replace("Paris", "Pa\\ud800ris")
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(spans))

    as_json = cli("convert", path, "--output", "json")
    assert as_json.exit_code == 0, as_json.stderr
    [invocation] = as_json.json()["traces"][0]["invocations"]
    assert "Pa\ufffdris" in invocation["user_content"]["parts"][0]["text"]
    as_table = cli("convert", path)
    assert as_table.exit_code == 0, as_table.stderr
    assert "Pa\\ud800ris" in as_table.stdout
    run = cli("run", path, "-m", "tool_call_count_v1", "--results-dir", tmp_path / "results")
    assert run.exit_code == 0, run.stderr
    [written] = (tmp_path / "results").iterdir()
    assert "Pa\ufffdris" in written.read_text(encoding="utf-8")
