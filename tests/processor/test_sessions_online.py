"""Sessions online, embedded: the processor scores each turn's per-invocation metrics at once and a session's
conversation-level metrics on its window (idle, turn limit, shutdown), with the real SDK and in-memory exporters;
the session results equal ``otel-eval run``'s on the same spans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.genai import types as genai_types
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.cli import main
from otel_eval.demo import Scenario, ToolStep, TravelAgent
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model import ConversationScenario, EvalCase, EvalSet, Invocation
from otel_eval.model.messages import EvaluationRecord
from tests.environment import use_loopback_judge
from tests.judge.fake_gemini import FakeGemini, hang_reply
from tests.processor.telemetry import Telemetry, hex_id
from tests.waiting import wait_until
from tests.worker._harness import OtlpSink

MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
SIMULATOR = "per_turn_user_simulator_quality_v1"
CONFIG: dict[str, Any] = {  # ADK's informational efficiency metrics (tool_call_count_v1, ...) are always added
    "criteria": {
        MULTI_TURN: {
            "threshold": 0.5,
            "judge_model_options": {"num_samples": 1},
            "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
        },
    }
}
WEATHER = Scenario("w", "w", "Weather in Paris?", (ToolStep("get_weather", {"city": "Paris"}),), "Sunny, 18 C.")
MONEY = Scenario(
    "m",
    "m",
    "How much is 100 USD in euros?",
    (ToolStep("convert_currency", {"amount": 100, "source": "USD", "target": "EUR"}),),
    "100 USD is 92 EUR.",
)
THANKS = Scenario("t", "t", "Thanks!", (), "You are welcome!")


def _judge(model: str, body: dict[str, Any]) -> str:
    """'yes' when the conversation's last answer has a digit (so both outcomes occur)."""
    verdict = "yes" if any(ch.isdigit() for ch in json.dumps(body).rsplit("TURN", 1)[-1][:80]) else "no"
    return f"ID: r\nProperty: The agent helped.\nRationale: read it\nVerdict: {verdict}\n"


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGemini]:
    with FakeGemini(_judge) as server:
        use_loopback_judge(monkeypatch, server.base_url)
        yield server


class Online:
    """An agent whose provider carries the processor; the agent's spans, and the records and telemetry it emits."""

    def __init__(self, telemetry: Telemetry, sessions: SessionLimits, **options: Any) -> None:
        self.records: list[EvaluationRecord] = []
        self.agent_spans = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.processor = EvaluationSpanProcessor(
            CONFIG,
            settings=ProcessorSettings(sessions=sessions),
            sinks=[self.records.extend],
            **telemetry.providers(),
            **options,
        )
        self.provider.add_span_processor(self.processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.agent_spans))
        self.agent = TravelAgent(self.provider)

    def run(self, scenario: Scenario, session: str | None) -> None:
        self.agent.run(scenario, conversation_id=session)

    def judged(self, metric: str = MULTI_TURN) -> list[EvaluationRecord]:
        return [r for r in self.records if r.metric_name == metric]

    def roots(self) -> list[ReadableSpan]:
        """Each turn's root span, in time order."""
        spans = [s for s in self.agent_spans.get_finished_spans() if s.parent is None]
        return sorted(spans, key=lambda s: s.start_time or 0)


def _dropped(telemetry: Telemetry, reason: str) -> int:
    points = telemetry.metric_points(semconv.METRIC_INVOCATIONS_DROPPED)
    return sum(p.value for p in points if p.attributes.get(semconv.OTEL_EVAL_DROP_REASON) == reason)


def _offline(spans: list[ReadableSpan], tmp_path: Path) -> dict[str, dict[str, list[tuple[float | None, str]]]]:
    (tmp_path / "traces.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    args = ["run", str(tmp_path / "traces.json"), "--config", str(tmp_path / "config.json"), "--output", "json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return {
        c["session_id"]: {
            m["metric_name"]: list(zip(m["per_invocation_scores"], m["per_invocation_statuses"], strict=True))
            for m in c["metrics"]
        }
        for c in json.loads(result.stdout)["results"]
    }


def test_session_results_equal_otel_eval_run_after_the_idle_timeout(
    telemetry: Telemetry, judge: FakeGemini, tmp_path: Path
) -> None:
    online = Online(telemetry, SessionLimits(idle_timeout=0.5))
    sessions = {"s-a": [WEATHER, THANKS, MONEY], "s-b": [MONEY, THANKS], "s-c": [THANKS]}
    for turn in range(3):  # interleaved: one turn of each session in turn
        for session, turns in sessions.items():
            if turn < len(turns):
                online.run(turns[turn], session)
    # per-invocation metrics at once; the conversation-level one only once the sessions went idle
    assert wait_until(lambda: len(online.judged("tool_call_count_v1")) == 6)
    assert len(online.judged()) < 6
    assert wait_until(lambda: len(online.judged()) == 6, timeout=20)
    assert online.processor.force_flush()

    offline = _offline(list(online.agent_spans.get_finished_spans()), tmp_path)
    by_session: dict[str, dict[str, list[tuple[float | None, str]]]] = {}
    for record in sorted(online.records, key=lambda r: r.invocation_end_time_ns):
        assert record.session_id is not None
        metrics = by_session.setdefault(record.session_id, {})
        metrics.setdefault(record.metric_name, []).append((record.score, record.eval_status.name))
    assert by_session == offline
    for metrics in offline.values():  # the judge really judged each session, on its last turn
        statuses = [status for _, status in metrics[MULTI_TURN]]
        assert statuses[:-1] == ["NOT_EVALUATED"] * (len(statuses) - 1) and statuses[-1] in ("PASSED", "FAILED")
    online.processor.shutdown()


def test_a_session_result_is_emitted_in_the_last_turns_trace_linked_to_every_turn(
    telemetry: Telemetry, judge: FakeGemini
) -> None:
    telemetry.add_exporting_processor()  # where the evaluation spans go
    online = Online(telemetry, SessionLimits(idle_timeout=0.3))
    for scenario in (WEATHER, THANKS, MONEY):
        online.run(scenario, "s-1")
    assert wait_until(lambda: len(online.judged()) == 3, timeout=20)
    assert online.processor.force_flush()
    roots = online.roots()
    turns = [(hex_id(r.context.trace_id, 32), hex_id(r.context.span_id, 16)) for r in roots]

    events = [
        e for e in telemetry.result_events() if e.log_record.attributes[semconv.GEN_AI_EVALUATION_NAME] == MULTI_TURN
    ]
    assert len(events) == 3
    by_context = {(hex_id(e.log_record.trace_id, 32), hex_id(e.log_record.span_id, 16)): e for e in events}
    assert sorted(by_context) == sorted(turns)
    last = by_context[turns[-1]].log_record.attributes
    assert last[semconv.OTEL_EVAL_STATUS] == "PASSED"  # the last answer has digits
    assert last[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    for trace_span in turns[:-1]:  # ADK's layout: the verdict on the last turn only
        earlier = by_context[trace_span].log_record.attributes
        assert earlier[semconv.OTEL_EVAL_STATUS] == "NOT_EVALUATED"
        assert earlier[semconv.ERROR_TYPE] == semconv.ERROR_TYPE_SCORED_ON_LAST_TURN
    for event in events:
        attributes = event.log_record.attributes
        assert attributes[semconv.GEN_AI_CONVERSATION_ID] == "s-1"
        assert (attributes[semconv.OTEL_EVAL_SESSION_WINDOW], attributes[semconv.OTEL_EVAL_SESSION_FIRST_TURN],
                attributes[semconv.OTEL_EVAL_SESSION_LAST_TURN]) == (0, 0, 2)  # fmt: skip
    assert len({e.log_record.attributes[semconv.OTEL_EVAL_RESULT_ID] for e in events}) == 3

    spans = [s for s in telemetry.evaluation_spans() if s.name == f"evaluate {MULTI_TURN}"]
    assert len(spans) == 1  # one evaluation span per session result, in the last turn's trace
    (span,) = spans
    assert span.parent is not None
    assert (hex_id(span.context.trace_id, 32), hex_id(span.parent.span_id, 16)) == turns[-1]
    linked = [(hex_id(link.context.trace_id, 32), hex_id(link.context.span_id, 16)) for link in span.links]
    assert linked[: len(turns)] == turns  # (then the judge's own trace, linked when it is called)
    assert span.attributes is not None and span.attributes[semconv.GEN_AI_CONVERSATION_ID] == "s-1"
    # the same score metrics, the same labels
    points = telemetry.metric_points(semconv.METRIC_EVALUATION_SCORE)
    labels = {p.attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL] for p in points
              if p.attributes[semconv.GEN_AI_EVALUATION_NAME] == MULTI_TURN}  # fmt: skip
    assert semconv.LABEL_PASS in labels
    # by design, not errors: the evaluation-error alert does not count them
    errors = telemetry.metric_points(semconv.METRIC_EVALUATION_ERRORS)
    assert not [p for p in errors if p.attributes[semconv.GEN_AI_EVALUATION_NAME] == MULTI_TURN], errors
    online.processor.shutdown()


def test_turn_limit_then_shutdown_judge_windows_with_their_own_ids(telemetry: Telemetry, judge: FakeGemini) -> None:
    online = Online(telemetry, SessionLimits(idle_timeout=600, max_turns=2))
    for scenario in (WEATHER, MONEY, THANKS):
        online.run(scenario, "s-1")
    # the first two turns filled the window: judged without waiting for the idle timeout
    assert wait_until(lambda: len(online.judged()) == 2, timeout=20)
    first = online.judged()
    assert {(r.session_window, r.session_first_turn, r.session_last_turn) for r in first} == {(0, 0, 1)}
    assert [r.eval_status.name for r in first] == ["NOT_EVALUATED", "PASSED"]
    online.processor.shutdown()  # the third turn's window closes at shutdown, judged within its timeout
    second = online.judged()[2:]
    assert [(r.session_window, r.session_first_turn, r.session_last_turn) for r in second] == [(1, 2, 2)]
    assert second[0].eval_status.name in ("PASSED", "FAILED")  # judged
    assert len({r.result_id for r in online.judged()}) == 3
    assert _dropped(telemetry, semconv.DROP_SHUTDOWN) == 0


def test_a_session_resumed_after_its_window_closed_opens_a_new_window(telemetry: Telemetry, judge: FakeGemini) -> None:
    online = Online(telemetry, SessionLimits(idle_timeout=0.3))
    online.run(MONEY, "s-1")
    online.run(THANKS, "s-1")
    assert wait_until(lambda: len(online.judged()) == 2, timeout=20)
    online.run(WEATHER, "s-1")
    assert wait_until(lambda: len(online.judged()) == 3, timeout=20)
    windows = [(r.session_window, r.session_first_turn, r.session_last_turn) for r in online.judged()]
    assert windows == [(0, 0, 1), (0, 0, 1), (1, 2, 2)]
    assert len({r.result_id for r in online.judged()}) == 3
    online.processor.shutdown()


def test_open_session_bounds_drop_and_count_turns_whose_own_metrics_still_run(
    telemetry: Telemetry, judge: FakeGemini
) -> None:
    online = Online(telemetry, SessionLimits(idle_timeout=600, max_sessions=1))
    online.run(WEATHER, "s-1")
    online.run(MONEY, "s-2")  # a second open session: not held
    online.run(THANKS, "s-2")
    assert wait_until(lambda: len(online.judged("tool_call_count_v1")) == 3)
    assert wait_until(lambda: _dropped(telemetry, semconv.DROP_MAX_OPEN_SESSIONS) == 2)
    online.processor.shutdown()
    assert [r.session_id for r in online.judged()] == ["s-1"]

    small = Telemetry()
    try:
        bytes_bound = Online(small, SessionLimits(idle_timeout=600, max_bytes=100))
        bytes_bound.run(WEATHER, "s-1")
        assert wait_until(lambda: _dropped(small, semconv.DROP_MAX_SESSION_BYTES) == 1)
        bytes_bound.processor.shutdown()
        assert bytes_bound.judged() == [] and len(bytes_bound.judged("tool_call_count_v1")) == 1
    finally:
        small.shutdown()


def test_without_a_session_id_the_conversation_metric_runs_on_the_one_trace_at_once(
    telemetry: Telemetry, judge: FakeGemini
) -> None:
    online = Online(telemetry, SessionLimits(idle_timeout=600))
    online.run(MONEY, None)
    assert wait_until(lambda: len(online.judged()) == 1, timeout=20)
    (record,) = online.judged()
    assert record.eval_status.name == "PASSED" and record.session_window is None
    online.processor.shutdown()


def test_shutdown_past_its_timeout_counts_the_sessions_not_judged(telemetry: Telemetry, monkeypatch: Any) -> None:
    with FakeGemini(lambda model, body: hang_reply()) as server:  # a judge that never answers
        use_loopback_judge(monkeypatch, server.base_url)
        online = Online(telemetry, SessionLimits(idle_timeout=600))
        online.run(MONEY, "s-1")
        online.run(WEATHER, "s-1")
        online.run(THANKS, "s-2")
        assert wait_until(lambda: len(online.judged("tool_call_count_v1")) == 3)
        online.processor.shutdown(timeout_millis=300)
        assert online.judged() == []
        assert _dropped(telemetry, semconv.DROP_SHUTDOWN) == 3  # every turn of the windows not judged


def test_session_settings_are_read_from_the_environment() -> None:
    settings = ProcessorSettings.from_env(
        {"OTEL_EVAL_SESSION_IDLE_TIMEOUT": "12.5", "OTEL_EVAL_SESSION_MAX_TURNS": "7",
         "OTEL_EVAL_MAX_OPEN_SESSIONS": "3", "OTEL_EVAL_MAX_SESSION_BYTES": "4096"}
    )  # fmt: skip
    assert settings.sessions == SessionLimits(idle_timeout=12.5, max_turns=7, max_sessions=3, max_bytes=4096)
    assert ProcessorSettings.from_env({}).sessions.idle_timeout == 300.0


def _session_results(records: list[EvaluationRecord]) -> list[tuple[Any, ...]]:
    """Each conversation-level record by session, turn order and window (ids differ between runs: new traces)."""
    ordered = sorted(records, key=lambda r: r.invocation_end_time_ns)
    return [
        (r.session_id, r.score, r.eval_status.name, r.session_window, r.session_first_turn, r.session_last_turn)
        for r in ordered
        if r.metric_name == MULTI_TURN
    ]


WORKLOAD = ((WEATHER, "s-1"), (MONEY, "s-2"), (THANKS, "s-1"), (MONEY, "s-1"))


@pytest.mark.integration
def test_process_isolation_judges_the_same_session_windows(telemetry: Telemetry, judge: FakeGemini) -> None:
    in_thread = Online(telemetry, SessionLimits(idle_timeout=0.3, max_turns=2))
    for scenario, session in WORKLOAD:
        in_thread.run(scenario, session)
    assert wait_until(lambda: len(in_thread.judged()) == 4, timeout=20)
    in_thread.processor.shutdown()

    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        CONFIG,
        settings=ProcessorSettings(isolation="process", sessions=SessionLimits(idle_timeout=0.3, max_turns=2)),
        sinks=[records.extend],
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario, session in WORKLOAD:
        agent.run(scenario, conversation_id=session)
    assert wait_until(lambda: sum(r.metric_name == MULTI_TURN for r in records) == 4, timeout=60)
    processor.shutdown()
    assert _session_results(records) == _session_results(in_thread.records)
    assert {(w[0], w[3:]) for w in _session_results(records)} == {
        ("s-1", (0, 0, 1)), ("s-2", (0, 0, 0)), ("s-1", (1, 2, 2))
    }  # fmt: skip


def test_a_session_pairs_with_its_case_by_the_first_user_text_and_a_scenario_serves_the_simulator_metric(
    telemetry: Telemetry, judge: FakeGemini
) -> None:
    def turn(scenario: Scenario) -> Invocation:
        return Invocation(
            user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=scenario.user_text)])
        )

    eval_set = EvalSet(
        eval_set_id="golden",
        eval_cases=[
            EvalCase(eval_id="trip", conversation=[turn(WEATHER), turn(MONEY)]),
            EvalCase(
                eval_id="polite",
                conversation_scenario=ConversationScenario(starting_prompt=THANKS.user_text, conversation_plan="Chat."),
            ),
        ],
    )
    criteria = {**CONFIG["criteria"], SIMULATOR: {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}
    records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(criteria, settings=ProcessorSettings(eval_set=eval_set, sessions=SessionLimits(idle_timeout=0.3)), sinks=[records.extend], **telemetry.providers())  # fmt: skip
    provider = TracerProvider()
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    for scenario, session in ((WEATHER, "s-trip"), (THANKS, "s-polite"), (MONEY, "s-trip"), (WEATHER, "s-polite")):
        agent.run(scenario, conversation_id=session)
    assert wait_until(lambda: sum(r.metric_name == MULTI_TURN for r in records) == 4, timeout=20)
    processor.shutdown()
    judged = {(r.session_id, r.metric_name, r.eval_id) for r in records if r.session_window is not None}
    # the whole session pairs with the case its first user text starts (its second turn alone would not)
    assert judged == {
        ("s-trip", MULTI_TURN, "trip"), ("s-polite", MULTI_TURN, "polite"),
        ("s-trip", SIMULATOR, "trip"), ("s-polite", SIMULATOR, "polite"),
    }  # fmt: skip
    simulated = {
        session: [r.error_type for r in records if r.metric_name == SIMULATOR and r.session_id == session]
        for session in ("s-trip", "s-polite")
    }
    # the scenario case's conversation_scenario serves the simulator metric (the judge was asked about the second
    # turn); the case without one has no reference for it
    assert simulated["s-trip"] == ["no_reference", "no_reference"]
    assert "no_reference" not in simulated["s-polite"] and len(simulated["s-polite"]) == 2


@pytest.mark.parametrize(
    ("criteria", "sample_rate", "priority", "warned"),
    [
        # head sampling decides each turn by its trace id in on_end: a session would lose some
        (CONFIG, 0.5, False, True),
        ({"criteria": {**CONFIG["criteria"], "tool_trajectory_avg_score": 1.0}}, 0.5, False, True),
        (CONFIG, 0.5, True, False),  # priority sampling (the default) decides by session: whole sessions
        (CONFIG, 1.0, False, False),  # every trace: whole sessions
        ({"tool_trajectory_avg_score": 1.0}, 0.5, False, False),  # per-turn metrics only: a left-out turn is not scored
    ],
)
def test_a_sample_rate_that_would_thin_sessions_is_said_at_start_up(
    criteria: dict[str, Any],
    sample_rate: float,
    priority: bool,
    warned: bool,
    telemetry: Telemetry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = ProcessorSettings(
        sample_rate=sample_rate, sample_priority=priority, sessions=SessionLimits(idle_timeout=600)
    )
    with caplog.at_level("WARNING", logger="otel_eval"):
        processor = EvaluationSpanProcessor(criteria, settings=settings, **telemetry.providers())
    processor.shutdown()
    said = [r.getMessage() for r in caplog.records if "samples traces, not sessions" in r.getMessage()]
    if warned:
        assert said == [
            f"OTEL_EVAL_SAMPLE_RATE={sample_rate} without priority sampling samples traces, not sessions: the "
            f"conversation-level metrics {MULTI_TURN} would judge each session from its sampled turns only, a "
            "conversation with turns left out. Leave OTEL_EVAL_SAMPLE_PRIORITY on to sample whole sessions, set "
            "OTEL_EVAL_SAMPLE_RATE=1, or leave these metrics out"
        ]
    else:
        assert said == []


def test_a_backfill_of_a_session_emits_the_records_online_evaluation_emitted(
    telemetry: Telemetry, judge: FakeGemini, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``otel-eval run --export-otlp`` over the session's traces emits what the processor emitted online: the same
    result ids (so a backfill replaces, never doubles), scores, statuses and error types (the earlier turns are
    ``scored_on_last_turn``, not errors the evaluation-error alert counts)."""
    online = Online(telemetry, SessionLimits(idle_timeout=0.3))
    for scenario in (WEATHER, THANKS, MONEY):
        online.run(scenario, "s-1")
    online.run(THANKS, "s-2")
    assert wait_until(lambda: len(online.judged()) == 4, timeout=20)
    online.processor.shutdown()
    (tmp_path / "traces.json").write_text(
        json.dumps(MessageToDict(encode_spans(online.agent_spans.get_finished_spans())))
    )
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))

    sink = OtlpSink().start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
        monkeypatch.setenv("OTEL_EVAL_SINKS", "")
        args = ["run", str(tmp_path / "traces.json"), "--config", str(tmp_path / "config.json"), "--export-otlp"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code in (0, 1), result.stderr
        events = sink.events()
    finally:
        sink.stop()
    backfilled = {(e.trace_id, e.span_id, e.metric): (e.result_id, e.score, e.label, e.error_type) for e in events}
    emitted = {
        (r.trace_id, r.span_id, r.metric_name): (r.result_id, r.score, r.label, r.error_type) for r in online.records
    }
    assert backfilled == emitted
    earlier = [r for r in online.judged() if r.eval_status.name == "NOT_EVALUATED"]
    assert len(earlier) == 2 and {r.error_type for r in earlier} == {semconv.ERROR_TYPE_SCORED_ON_LAST_TURN}
