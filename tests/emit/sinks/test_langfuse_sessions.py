"""Conversation-level results in Langfuse: session scores (``sessionId``), against the loopback server, which refuses
what Langfuse's ``POST /api/public/scores`` schema refuses (``loopback_langfuse.invalid_score``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.cli import main
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model.messages import EvaluationRecord
from tests.emit.sinks.loopback_langfuse import PUBLIC_KEY, SECRET_KEY, LoopbackLangfuse
from tests.metrics.custom_metrics_fixture import TURNS_IN_CONVERSATION_CONFIG
from tests.waiting import wait_until

pytestmark = pytest.mark.usefixtures("clean_genai_env")

CONVERSATION = "turns_in_conversation"
PER_TURN = "answer_has_digit"
CONFIG: dict[str, Any] = {
    "criteria": {PER_TURN: 0.5, CONVERSATION: 1.0},
    "custom_metrics": {
        PER_TURN: {"code_config": {"name": "tests.metrics.custom_metrics_fixture.answer_has_digit"}},
        CONVERSATION: TURNS_IN_CONVERSATION_CONFIG,
    },
}
SESSIONS = {"conversation-a": SCENARIOS[:3], "conversation-b": SCENARIOS[3:5]}


@pytest.fixture
def langfuse(monkeypatch: pytest.MonkeyPatch) -> Any:
    with LoopbackLangfuse() as server:
        monkeypatch.setenv("OTEL_EVAL_SINKS", "langfuse")
        monkeypatch.setenv("LANGFUSE_BASE_URL", server.base_url)
        monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
        monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
        yield server


def _session_scores(langfuse: LoopbackLangfuse) -> list[dict[str, Any]]:
    return [s for s in langfuse.scores.values() if s.get("sessionId")]


def _online(langfuse: LoopbackLangfuse) -> tuple[list[EvaluationRecord], list[Any]]:
    """Both conversations through the processor (its sinks from the environment); its records and the spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        CONFIG, settings=ProcessorSettings(sessions=SessionLimits(idle_timeout=2.0)), sinks=[records.extend]
    )
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for session_id, scenarios in SESSIONS.items():
        for scenario in scenarios:
            agent.run(scenario, conversation_id=session_id)
    assert wait_until(lambda: len(_session_scores(langfuse)) == len(SESSIONS), 30)
    processor.shutdown()
    provider.shutdown()
    return records, list(exporter.get_finished_spans())


def test_a_conversations_result_is_a_session_score_and_a_backfill_of_its_turns_replaces_it(
    langfuse: LoopbackLangfuse, tmp_path: Path
) -> None:
    records, spans = _online(langfuse)
    assert langfuse.refused == []
    verdicts = {r.session_id: r for r in records if r.metric_name == CONVERSATION and r.score is not None}
    sessions = {s["sessionId"]: s for s in _session_scores(langfuse)}
    assert sorted(sessions) == sorted(SESSIONS)
    for session_id, scenarios in SESSIONS.items():
        score, last_turn = sessions[session_id], verdicts[session_id]
        assert (score["name"], score["value"], score["dataType"]) == (CONVERSATION, len(scenarios), "NUMERIC")
        assert "traceId" not in score and "observationId" not in score
        assert (score["metadata"]["traceId"], score["metadata"]["observationId"]) == (
            last_turn.trace_id,
            last_turn.span_id,
        )
        assert score["metadata"]["otel_eval.session.last_turn"] == len(scenarios) - 1
    turns = sum(len(scenarios) for scenarios in SESSIONS.values())
    trace_scores = [s for s in langfuse.scores.values() if s.get("traceId")]
    assert sorted(s["name"] for s in trace_scores) == sorted(  # each turn's own score, and the earlier turns'
        [PER_TURN] * turns + [CONVERSATION] * (turns - len(SESSIONS))  # placeholders, stay on their turn's trace
    )
    assert {s["value"] for s in trace_scores if s["name"] == CONVERSATION} == {"not_evaluated"}
    with httpx2.Client(base_url=langfuse.base_url, auth=(PUBLIC_KEY, SECRET_KEY)) as client:
        listed = client.get("/api/public/v2/scores", params={"sessionId": "conversation-a"}).json()["data"]
    assert [s["id"] for s in listed] == [sessions["conversation-a"]["id"]]

    online = {score_id: dict(score) for score_id, score in langfuse.scores.items()}
    posts = langfuse.posts
    (tmp_path / "traces.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    args = ["run", str(tmp_path / "traces.json"), "--config", str(tmp_path / "config.json"), "--sinks", "langfuse"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    assert langfuse.posts == 2 * posts  # every score sent again ...
    assert langfuse.refused == []
    assert sorted(langfuse.scores) == sorted(online)  # ... under the same ids: replaced, none added
    for score_id, score in online.items():
        again = langfuse.scores[score_id]
        assert (again.get("sessionId"), again.get("traceId"), again["value"]) == (
            score.get("sessionId"),
            score.get("traceId"),
            score["value"],
        )


def test_each_window_of_a_resumed_session_keeps_its_own_session_score(langfuse: LoopbackLangfuse) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    processor = EvaluationSpanProcessor(CONFIG, settings=ProcessorSettings(sessions=SessionLimits(idle_timeout=0.3)))
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for window, scenario in enumerate(SCENARIOS[:2]):  # one turn a window: no timing decides where a window ends
        agent.run(scenario, conversation_id="resumed")
        assert wait_until(lambda window=window: len(_session_scores(langfuse)) == window + 1, 30)
    processor.shutdown()
    provider.shutdown()
    windows = sorted(
        (s["metadata"]["otel_eval.session.window"], s["metadata"]["otel_eval.session.first_turn"], s["value"])
        for s in _session_scores(langfuse)
    )
    assert windows == [(0, 0, 1.0), (1, 1, 1.0)]
    assert {s["sessionId"] for s in _session_scores(langfuse)} == {"resumed"}


@pytest.mark.parametrize(
    ("body", "accepted"),
    [
        ({"traceId": "t", "observationId": "o"}, True),
        ({"sessionId": "s"}, True),
        ({"datasetRunId": "r"}, True),
        ({"traceId": "t", "sessionId": "s"}, False),
        ({"sessionId": "s", "observationId": "o"}, False),
        ({"observationId": "o"}, False),
        ({}, False),
    ],
)
def test_the_loopback_takes_exactly_one_of_trace_session_and_dataset_run_as_langfuse_does(
    langfuse: LoopbackLangfuse, body: dict[str, Any], accepted: bool
) -> None:
    with httpx2.Client(base_url=langfuse.base_url, auth=(PUBLIC_KEY, SECRET_KEY)) as client:
        answer = client.post("/api/public/scores", json={**body, "name": "m", "value": 1.0, "dataType": "NUMERIC"})
    assert answer.status_code == (200 if accepted else 400), answer.text
    assert len(langfuse.scores) == int(accepted)
