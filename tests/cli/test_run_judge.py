"""``otel-eval run`` with judged metrics, against the loopback Gemini-compatible server via google-genai's env."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from otel_eval.demo.local_judge import scripted_verdicts
from otel_eval.model import content_text
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import read_trace_file
from tests.cli.conftest import AGENTEVALS, STRANDS, CliResult
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import TEST_KEY, keyed_sequences

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

HELM = AGENTEVALS / "helm.json"


def _final_text() -> str:
    [trace] = rebuild_traces(read_trace_file(HELM).spans)
    return content_text(trace.invocations[0].invocation.final_response)


def _script_contradicted(server: FakeGemini, final: str) -> None:
    # Keys are tried in order: the validator prompt carries the sentences in <sentence> tags, the segmenter prompt
    # carries the raw response. The segmenter answers one sentence per non-empty line, the validator contradicts all.
    sentences = [line.strip() for line in final.splitlines() if line.strip()]
    segmented = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
    verdicts = "\n\n".join(
        f"sentence: {s}\nlabel: contradictory\nrationale: the tool said otherwise\n"
        "supporting_excerpt: null\ncontradicting_excerpt: null"
        for s in sentences
    )
    server.set_responder(
        keyed_sequences({f"<sentence>{sentences[0]}</sentence>": [verdicts], sentences[0]: [segmented]})
    )


def test_hallucinations_via_gemini_base_url_fails_with_explanation_and_summary(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    final = _final_text()
    assert final
    _script_contradicted(fake_gemini, final)
    result = cli("run", HELM, "-m", "hallucinations_v1", "--judge-model", "judge-x")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "hallucinations_v1" in result.stdout and "FAILED" in result.stdout
    assert "contradictory: There are two Helm releases" in result.stdout  # the judge's explanation of the failure
    assert "judge" in result.stderr.lower() and "call" in result.stderr.lower()  # the summary line
    models = {request.model for request in fake_gemini.generate_requests()}
    assert models == {"judge-x"}
    assert TEST_KEY not in result.stdout + result.stderr


def test_a_bad_max_reply_chars_stops_the_run_at_start_up_naming_it(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_MAX_REPLY_CHARS", "100")  # under the 1024 minimum
    result = cli("run", HELM, "-m", "hallucinations_v1")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "OTEL_EVAL_JUDGE_MAX_REPLY_CHARS" in result.stderr
    assert not fake_gemini.generate_requests()  # stopped before the first judge call, not at its reply


def test_without_credentials_judged_metric_is_not_evaluated_with_one_reason(cli: Callable[..., CliResult]) -> None:
    result = cli("run", HELM, "-m", "hallucinations_v1", "--output", "json", "--allow-not-evaluated")
    assert result.exit_code == 0, result.stderr
    [conversation] = result.json()["results"]
    [metric] = conversation["metrics"]
    assert metric["eval_status"] == "NOT_EVALUATED"
    assert metric["score"] is None
    assert metric["error_type"] == "judge_not_configured" or metric["per_invocation_statuses"] == ["NOT_EVALUATED"]
    assert "GOOGLE_API_KEY" in (metric["explanation"] or "") or "credential" in (metric["explanation"] or "").lower()


def test_a_judge_whose_every_reply_is_unreadable_fails_the_gate_with_exit_3(
    cli: Callable[..., CliResult], fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small model that never follows the verdict format judged nothing: the gate says so instead of passing."""
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.set_responder(lambda model, body: "I think the answer looks fine to me!")
    args = ("run", HELM, "-m", "safety_v1", "--output", "json")
    result = cli(*args)
    assert result.exit_code == 3, result.stdout + result.stderr
    [metric] = result.json()["results"][0]["metrics"]
    assert metric["eval_status"] == "NOT_EVALUATED"
    assert "safety_v1 was evaluated on no invocation" in result.stderr and "(judge_unparseable)" in result.stderr
    assert fake_gemini.generate_requests()  # the judge was asked: it is its replies that could not be read
    assert cli(*args, "--allow-not-evaluated").exit_code == 0


def test_a_lone_surrogate_in_the_judged_text_is_sent_as_the_replacement_character(
    cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``"\\ud800"`` in a recorded message: the judge's request could not be encoded (``metric failed:
    UnicodeEncodeError``, NOT_EVALUATED); it is judged with U+FFFD in its place."""
    spans = json.loads((STRANDS / "otel_genai_convention_spans.json").read_text())
    attributes = spans[0]["attributes"]
    attributes["gen_ai.output.messages"] = attributes["gen_ai.output.messages"].replace("rainy", "ra\\ud800iny")
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(spans))
    with FakeGemini(scripted_verdicts) as server:
        monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        result = cli("run", path, "-m", "safety_v1", "-m", "hallucinations_v1", "--output", "json")
        prompts = [request.prompt for request in server.generate_requests()]
    assert result.exit_code == 0, result.stdout + result.stderr
    statuses = {m["metric_name"]: m["eval_status"] for r in result.json()["results"] for m in r["metrics"]}
    assert statuses == {"safety_v1": "PASSED", "hallucinations_v1": "PASSED"}
    assert any("ra\ufffdiny" in prompt for prompt in prompts)
