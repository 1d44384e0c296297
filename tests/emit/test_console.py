"""``ConsoleRecordSink`` and ``OTEL_EVAL_CONSOLE``: one line per score on stdout from a real processor."""

from __future__ import annotations

import io
import re

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.emit.console import ConsoleRecordSink, format_record
from otel_eval.metrics import EFFICIENCY_METRICS
from otel_eval.model import EvalStatus
from otel_eval.model.messages import EvaluationRecord

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")  # no judge: the reference-free default is the efficiency set

LINE = re.compile(
    r"^otel-eval: (?P<metric>\w+) (?P<score>\S+) (?P<label>\w+) agent=\S+ trace_id=[0-9a-f]{32} span_id=[0-9a-f]{16}"
)


def _record(**fields: object) -> EvaluationRecord:
    values: dict[str, object] = {
        "result_id": "r",
        "trace_id": "a" * 32,
        "span_id": "b" * 16,
        "metric_name": "response_match_score",
        "score": 0.25,
        "eval_status": EvalStatus.FAILED,
        "label": "fail",
        "explanation": "score 0.25\nbelow the threshold 0.8",
        "agent_name": "weather",
    }
    values.update(fields)
    return EvaluationRecord.model_validate(values)


def test_a_line_names_metric_score_label_agent_and_ids_and_why_it_failed() -> None:
    assert format_record(_record()) == (
        f"otel-eval: response_match_score 0.25 fail agent=weather trace_id={'a' * 32} span_id={'b' * 16}"
        " — score 0.25 below the threshold 0.8\n"
    )
    passed = format_record(_record(eval_status=EvalStatus.PASSED, label="pass", score=1.0))
    assert passed.endswith(f"span_id={'b' * 16}\n")
    not_evaluated = format_record(
        _record(eval_status=EvalStatus.NOT_EVALUATED, label="not_evaluated", score=None, explanation=None,
                error_type="judge_not_configured")
    )  # fmt: skip
    assert " - not_evaluated " in not_evaluated and not_evaluated.endswith(" — judge_not_configured\n")
    bare = format_record(
        _record(eval_status=EvalStatus.NOT_EVALUATED, label="not_evaluated", score=None, explanation=None,
                error_type="not_evaluated")
    )  # fmt: skip
    assert bare.endswith(f"span_id={'b' * 16}\n")  # a custom metric's NOT_EVALUATED with no why: not said twice
    long = format_record(_record(explanation="x" * 500))
    assert long.endswith("x…\n") and len(long) < 300


def test_the_sink_writes_whole_lines_to_its_stream() -> None:
    out = io.StringIO()
    ConsoleRecordSink(out)([_record(), _record(metric_name="tool_call_count_v1")])
    lines = out.getvalue().splitlines()
    assert [LINE.match(line)["metric"] for line in lines] == ["response_match_score", "tool_call_count_v1"]  # type: ignore[index]


def test_otel_eval_console_prints_every_score_of_a_live_agent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_EVAL_CONSOLE", "true")
    provider = TracerProvider(shutdown_on_exit=False)
    processor = EvaluationSpanProcessor.from_env()
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS[:3]:
        agent.run(scenario)
    assert processor.force_flush(30_000)
    provider.shutdown()
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("otel-eval: ")]
    assert len(lines) == 3 * len(EFFICIENCY_METRICS)
    assert all(LINE.match(line) for line in lines)
    assert {LINE.match(line)["metric"] for line in lines} == set(EFFICIENCY_METRICS)  # type: ignore[index]


def test_without_the_switch_nothing_is_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OTEL_EVAL_CONSOLE", raising=False)
    provider = TracerProvider(shutdown_on_exit=False)
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(sinks=[records.extend])
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    assert processor.force_flush(30_000)
    provider.shutdown()
    assert records
    assert "otel-eval: " not in capsys.readouterr().out
