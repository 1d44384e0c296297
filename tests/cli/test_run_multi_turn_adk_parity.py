"""Multi-turn sessions from the real producer: ADK 2.13's own evaluators on ADK's own invocations of each session
equal ``otel-eval run`` on the recorded traces, and the evaluation core (what the embedded and Kafka workers run) on
the same session as one request, for ``rubric_based_multi_turn_trajectory_quality_v1`` with the loopback judge and
for ADK custom metrics (sync and async).

Three sessions (2-4 turns, interleaved in time, one resuming after a pause; see ``tests/reconstruct/adk_sessions.py``)
run through real ADK runners with scripted models, in both telemetry schemas. Every turn is its own trace: ``run``
groups a session across traces by its session id.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.metric_evaluator_registry import (
    DEFAULT_METRIC_EVALUATOR_REGISTRY,
    register_custom_metrics_from_config,
)
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from tests.cli.conftest import CliResult
from tests.judge.fake_gemini import FakeGemini
from tests.judge.helpers import keyed_sequences
from tests.reconstruct.adk_agents import adk_telemetry
from tests.reconstruct.adk_sessions import RecordedSessions, record_sessions
from tests.waiting import wait_until

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("quiet_adk")

MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
FIXTURE = "tests.metrics.custom_metrics_fixture"
HELPFUL = "The agent answered every question the user asked."
TOOLS = "The agent used its tools before stating facts."


def block(rubric_id: str, prop: str, verdict: str) -> str:
    return f"ID: {rubric_id}\nProperty: {prop}\nRationale: read the turns\nVerdict: {verdict}\n\n"


def answers(*pairs: tuple[str, str]) -> list[str]:
    return [block("helpful", HELPFUL, a) + block("tools", TOOLS, b) for a, b in pairs]


# Keyed by each session's last user turn, which only that session's dialogue holds.
SCRIPT = {
    "USER TURN 2: And tomorrow?": answers(("yes", "yes"), ("yes", "no"), ("no", "no")),
    "USER TURN 3: And the time there?": answers(("yes", "yes")),
    "USER TURN 4: Bye": answers(("no", "yes"), ("no", "yes"), ("yes", "yes")),
}

CONFIG: dict[str, Any] = {
    "criteria": {
        MULTI_TURN: {
            "threshold": 0.6,
            "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 3},
            "rubrics": [
                {"rubric_id": "helpful", "rubric_content": {"text_property": HELPFUL}},
                {"rubric_id": "tools", "rubric_content": {"text_property": TOOLS}},
            ],
        },
        "answer_has_digit": 0.5,
        "tool_calls_per_turn": {"threshold": 1.0},
    },
    "custom_metrics": {
        "answer_has_digit": {"code_config": {"name": f"{FIXTURE}.answer_has_digit"}},
        "tool_calls_per_turn": {
            "code_config": {"name": f"{FIXTURE}.tool_calls_per_turn"},
            "metric_info": {
                "metric_name": "tool_calls_per_turn",
                "metric_value_info": {"interval": {"min_value": 0, "max_value": 100}},
            },
        },
    },
}


def summary(score: float | None, status: str, scores: list[float | None], statuses: list[str]) -> dict[str, Any]:
    return {"score": score, "eval_status": status, "per_invocation_scores": scores, "per_invocation_statuses": statuses}


async def adk_results(recorded: RecordedSessions) -> dict[str, dict[str, Any]]:
    """ADK's own evaluators (built by ADK from the same config) on ADK's own invocations of each session."""
    adk_config = AdkEvalConfig.model_validate(CONFIG)
    registry = register_custom_metrics_from_config(adk_config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork())
    results: dict[str, dict[str, Any]] = {}
    for name, invocations in recorded.invocations.items():
        by_metric = {}
        for metric in get_eval_metrics_from_config(adk_config):
            if metric.metric_name not in CONFIG["criteria"]:
                continue  # ADK's informational efficiency metrics: compared elsewhere
            result = await registry.get_evaluator(metric).evaluate_invocations(invocations, None, None)
            by_metric[metric.metric_name] = summary(
                result.overall_score,
                result.overall_eval_status.name,
                [r.score for r in result.per_invocation_results],
                [r.eval_status.name for r in result.per_invocation_results],
            )
        results[recorded.session_ids[name]] = by_metric
    return results


def run_results(result: CliResult) -> dict[str, dict[str, Any]]:
    return {
        conversation["session_id"]: {
            metric["metric_name"]: {
                key: metric[key] for key in ("score", "eval_status", "per_invocation_scores", "per_invocation_statuses")
            }
            for metric in conversation["metrics"]
            if metric["metric_name"] in CONFIG["criteria"]
        }
        for conversation in result.json()["results"]
    }


async def core_results(recorded: RecordedSessions) -> dict[str, dict[str, Any]]:
    """The evaluation core, each session as one request (its turns rebuilt from their traces), the same config."""
    core = EvaluationCore(criteria=CONFIG, judge_configured=True, emitters=Emitters(None))
    traces = rebuild_traces(spans_from_readable(recorded.spans))
    turns: list[TracedInvocation] = sorted((i for t in traces for i in t.invocations), key=lambda i: i.start_time_ns)
    results: dict[str, dict[str, Any]] = {}
    for session_id in recorded.session_ids.values():
        session = [t for t in turns if t.session_id == session_id]
        records = await core.evaluate(EvaluationRequest(invocations=session))
        by_metric: dict[str, Any] = {}
        for metric in CONFIG["criteria"]:
            mine = [r for r in records if r.metric_name == metric]
            assert [r.span_id for r in mine] == [t.span_id for t in session]
            last = mine[-1]
            overall = (last.score, last.eval_status.name) if metric == MULTI_TURN else None
            by_metric[metric] = {
                "per_invocation_scores": [r.score for r in mine],
                "per_invocation_statuses": [r.eval_status.name for r in mine],
                **({"score": overall[0], "eval_status": overall[1]} if overall else {}),
            }
        results[session_id] = by_metric
    return results


def embedded_results(recorded: RecordedSessions) -> dict[str, dict[str, Any]]:
    """The embedded processor (sessions idle after 0.5 s) fed every recorded span at once, in end order (no gaps, so
    each session is one window, as ADK judges a session): each session's per-turn scores and statuses, from the
    records it emits. Windows closed by the recording's own pause: :func:`embedded_windows_in_real_time`."""
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        CONFIG,
        settings=ProcessorSettings(sessions=SessionLimits(idle_timeout=0.5)),
        sinks=[records.extend],
        tracer_provider=TracerProvider(),
    )
    for span in sorted(recorded.spans, key=lambda s: s.end_time or 0):
        processor.on_end(span)
    turns = sum(len(v) for v in recorded.invocations.values())
    assert wait_until(lambda: sum(r.metric_name == MULTI_TURN for r in records) == turns, timeout=60)
    processor.shutdown()
    results: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.invocation_end_time_ns):
        if record.metric_name in CONFIG["criteria"]:
            metric = results.setdefault(record.session_id or "", {}).setdefault(
                record.metric_name, {"per_invocation_scores": [], "per_invocation_statuses": []}
            )
            metric["per_invocation_scores"].append(record.score)
            metric["per_invocation_statuses"].append(record.eval_status.name)
    return results


_PAUSE_SECONDS = 3.0
"""How long the replay pauses where the recording pauses (see :func:`embedded_windows_in_real_time`)."""


def embedded_windows_in_real_time(recorded: RecordedSessions) -> dict[str, list[tuple[int, int, int]]]:
    """The embedded processor (sessions idle after 0.8 s) fed the recorded spans in the order they ended, with a pause
    where the recording has its longest gap (1.5 s, before the turn after it) and no other gap, so the pause closes
    every session's window: per session, the (window, first turn, last turn) of each window the processor judged, from
    the records it emits. The other gaps are not replayed: on a loaded machine a turn recorded slowly took longer than
    the 0.8 s, and its gap closed a window the recording's schedule does not have. The pause is 3 s, not the
    recording's 1.5: a session is idle from when the evaluation thread took its last turn in, which on a loaded machine
    lagged the spans fed by more than the 0.7 s a 1.5 s pause leaves, and no window closed."""
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        CONFIG,
        settings=ProcessorSettings(sessions=SessionLimits(idle_timeout=0.8)),
        sinks=[records.extend],
        tracer_provider=TracerProvider(),
    )
    spans = sorted(recorded.spans, key=lambda s: s.end_time or 0)
    gaps = [(later.end_time or 0) - (earlier.end_time or 0) for earlier, later in itertools.pairwise(spans)]
    pause = gaps.index(max(gaps)) + 1
    for index, span in enumerate(spans):
        if index == pause:
            time.sleep(_PAUSE_SECONDS)
        processor.on_end(span)
    turns = sum(len(v) for v in recorded.invocations.values())
    assert wait_until(lambda: sum(r.metric_name == MULTI_TURN for r in records) == turns, timeout=60)
    processor.shutdown()
    windows: dict[str, set[tuple[int, int, int]]] = {}
    for record in records:
        if record.metric_name == MULTI_TURN:
            assert record.session_window is not None and record.session_first_turn is not None
            assert record.session_last_turn is not None
            windows.setdefault(record.session_id or "", set()).add(
                (record.session_window, record.session_first_turn, record.session_last_turn)
            )
    return {session_id: sorted(found) for session_id, found in windows.items()}


def _reset(server: FakeGemini) -> None:
    server.reset()
    server.set_responder(keyed_sequences(SCRIPT))


@pytest.mark.parametrize("schema", [1, 2])
def test_sessions_equal_adks_evaluators_offline_and_in_the_core(
    cli: Callable[..., CliResult], adk_env: FakeGemini, tmp_path: Path, schema: int
) -> None:
    async def record() -> RecordedSessions:
        with adk_telemetry(schema=schema, capture_content=True):
            return await record_sessions()

    recorded = asyncio.run(record())  # the command runs its own event loop, so the agents run in one first
    assert sorted(len(v) for v in recorded.invocations.values()) == [2, 3, 4]
    trace_file = tmp_path / f"sessions_schema_{schema}.otlp.json"
    trace_file.write_text(json.dumps(MessageToDict(encode_spans(recorded.spans))))
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))

    _reset(adk_env)
    adks = asyncio.run(adk_results(recorded))
    _reset(adk_env)
    result = cli("run", trace_file, "--config", config, "--output", "json")
    ours = run_results(result)
    assert ours == adks
    assert result.exit_code == 1  # two sessions fail the multi-turn rubrics

    statuses = {session[MULTI_TURN]["eval_status"] for session in adks.values()}
    assert statuses == {"PASSED", "FAILED"}
    for session in adks.values():  # ADK's layout: the first N-1 turns NOT_EVALUATED, the verdict on the last
        assert session[MULTI_TURN]["per_invocation_statuses"][:-1] == ["NOT_EVALUATED"] * (
            len(session[MULTI_TURN]["per_invocation_statuses"]) - 1
        )
    assert [adks[s]["tool_calls_per_turn"]["per_invocation_scores"] for s in sorted(adks)] == [
        [0.0, 2.0, 0.0, 0.0],  # chat
        [1.0, 0.0, 1.0],  # plan
        [2.0, 0.0],  # trip: the transfer and the weather call, read from ADK's events
    ]

    _reset(adk_env)
    online = asyncio.run(core_results(recorded))
    for session_id, metrics in online.items():
        for metric, values in metrics.items():
            for key, value in values.items():
                assert value == ours[session_id][metric][key], (session_id, metric, key)

    _reset(adk_env)
    embedded = embedded_results(recorded)  # online, embedded: the session windows the processor judged
    assert embedded == {
        session_id: {
            metric: {key: values[key] for key in ("per_invocation_scores", "per_invocation_statuses")}
            for metric, values in metrics.items()
        }
        for session_id, metrics in ours.items()
    }

    _reset(adk_env)
    # Replayed with the recording's own timing: the pause every session spans closes its window, and the turn after
    # it opens window 1, which names the turns it covers (turns before the pause: trip 1, plan 2, chat 3).
    before_pause = {"trip": 1, "plan": 2, "chat": 3}
    assert embedded_windows_in_real_time(recorded) == {
        recorded.session_ids[name]: [(0, 0, count - 1), (1, count, count)] for name, count in before_pause.items()
    }
