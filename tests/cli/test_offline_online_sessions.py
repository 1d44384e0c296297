"""Offline = online for sessions spread over several traces (hypothesis over generated sessions, one trace per turn,
sessions interleaved): ``otel-eval run`` groups each session across its traces; the evaluation core (what the
embedded and Kafka workers run) given the same session as one request gives every invocation the same score and
status, for reference-free deterministic metrics, ADK custom metrics (sync and async) and the conversation-level
``rubric_based_multi_turn_trajectory_quality_v1`` (loopback judge).

Online, the embedded processor on the agent's provider (a short session idle timeout) scores each turn at once and
the conversation-level metric on each session's window once idle: its records equal ``otel-eval run``'s too.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from google.protobuf.json_format import MessageToDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.cli import main
from otel_eval.demo import TravelAgent
from otel_eval.demo.workload import Scenario, ToolStep
from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable
from tests.environment import use_loopback_judge
from tests.judge.fake_gemini import FakeGemini
from tests.waiting import wait_until

FIXTURE = "tests.metrics.custom_metrics_fixture"
MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
USER_TEXTS = ("Weather in Paris?", "How much is 100 USD in euros?", "Thanks!", "And the time in London?")
TOOLS = (
    ToolStep("get_weather", {"city": "Paris"}),
    ToolStep("convert_currency", {"amount": 100, "source": "USD", "target": "EUR"}),
    ToolStep("get_local_time", {"city": "London"}),
)
ANSWERS = ("Sunny and 18°C in Paris.", "100 USD is 92 EUR.", "You are welcome!", "It is 10:30 in London.")
CONFIG: dict[str, Any] = {
    "criteria": {
        "answer_has_digit": 0.5,
        "tool_calls_per_turn": {"threshold": 1.0},
        MULTI_TURN: {
            "threshold": 0.5,
            "judge_model_options": {"num_samples": 1},
            "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
        },
    },
    "custom_metrics": {
        "answer_has_digit": {"code_config": {"name": f"{FIXTURE}.answer_has_digit"}},
        "tool_calls_per_turn": {
            "code_config": {"name": f"{FIXTURE}.tool_calls_per_turn"},
            "metric_info": {
                "metric_name": "tool_calls_per_turn",
                "metric_value_info": {"interval": {"min_value": 0, "max_value": 9}},
            },
        },
    },
}
COMPARED = (*CONFIG["criteria"], "tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")

_turns = st.builds(
    Scenario,
    key=st.just("turn"),
    description=st.just("turn"),
    user_text=st.sampled_from(USER_TEXTS),
    tool_steps=st.lists(st.sampled_from(TOOLS), max_size=2).map(tuple),
    answer=st.sampled_from(ANSWERS),
)
# Sessions of 1-3 turns; the schedule interleaves them (a permutation of every session's turns in order).
_sessions = st.lists(st.lists(_turns, min_size=1, max_size=3), min_size=1, max_size=3)


def _judge(model: str, body: dict[str, Any]) -> str:
    """The loopback judge: 'yes' when the conversation's last answer has a digit (so both outcomes occur)."""
    text = json.dumps(body)
    verdict = "yes" if any(ch.isdigit() for ch in text.rsplit("TURN", 1)[-1][:80]) else "no"
    return f"ID: r\nProperty: The agent helped.\nRationale: read it\nVerdict: {verdict}\n"


@pytest.fixture(scope="module")
def judge_server() -> Any:
    with FakeGemini(_judge) as server:
        yield server


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(sessions=_sessions, order=st.randoms(use_true_random=False))
def test_run_and_the_core_agree_on_sessions_over_several_traces(
    sessions: list[list[Scenario]], order: Any, judge_server: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_loopback_judge(monkeypatch, judge_server.base_url)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    online_records: list[EvaluationRecord] = []
    processor = EvaluationSpanProcessor(
        CONFIG, settings=ProcessorSettings(sessions=SessionLimits(idle_timeout=0.2)), sinks=[online_records.extend]
    )
    provider.add_span_processor(processor)
    agent = TravelAgent(provider)
    schedule = [index for index, turns in enumerate(sessions) for _ in turns]
    order.shuffle(schedule)
    cursor = [0] * len(sessions)
    for index in schedule:  # each turn is its own trace; sessions interleave
        agent.run(sessions[index][cursor[index]], conversation_id=f"session-{index}")
        cursor[index] += 1
    spans = list(exporter.get_finished_spans())
    total = sum(len(turns) for turns in sessions)
    assert wait_until(lambda: sum(r.metric_name == MULTI_TURN for r in online_records) == total, timeout=30)
    processor.shutdown()

    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "traces.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
        (folder / "config.json").write_text(json.dumps(CONFIG))
        args = ["run", str(folder / "traces.json"), "--config", str(folder / "config.json"), "--output", "json"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    offline = {
        conversation["session_id"]: {
            m["metric_name"]: list(zip(m["per_invocation_scores"], m["per_invocation_statuses"], strict=True))
            for m in conversation["metrics"]
            if m["metric_name"] in COMPARED
        }
        for conversation in json.loads(result.stdout)["results"]
    }
    assert sorted(offline) == sorted(f"session-{i}" for i in range(len(sessions)))
    for index, turns in enumerate(sessions):  # grouped across traces, in time order; the judge really judged
        judged = offline[f"session-{index}"][MULTI_TURN]
        assert [status for _, status in judged] == ["NOT_EVALUATED"] * (len(turns) - 1) + [judged[-1][1]]
        assert judged[-1][1] in ("PASSED", "FAILED")
        assert [score for score, _ in offline[f"session-{index}"]["tool_calls_per_turn"]] == [
            float(len(turn.tool_steps)) for turn in turns
        ]

    core = EvaluationCore(criteria=CONFIG, judge_configured=True, emitters=Emitters(None))
    turns = sorted(
        (i for t in rebuild_traces(spans_from_readable(spans)) for i in t.invocations), key=lambda i: i.start_time_ns
    )

    async def online() -> dict[str, dict[str, list[tuple[float | None, str]]]]:
        found: dict[str, dict[str, list[tuple[float | None, str]]]] = {}
        for session_id in offline:
            session = [t for t in turns if t.session_id == session_id]
            records = await core.evaluate(EvaluationRequest(invocations=session))
            found[session_id] = {
                metric: [(r.score, r.eval_status.name) for r in records if r.metric_name == metric]
                for metric in COMPARED
            }
        return found

    assert asyncio.run(online()) == offline
    embedded: dict[str, dict[str, list[tuple[float | None, str]]]] = {}
    for record in sorted(online_records, key=lambda r: r.invocation_end_time_ns):
        if record.metric_name in COMPARED:
            metrics = embedded.setdefault(record.session_id or "", {})
            metrics.setdefault(record.metric_name, []).append((record.score, record.eval_status.name))
    assert embedded == offline


def _run_multi_turn_only(recorded: Path) -> Result:
    """``otel-eval run --output json`` of ``recorded`` with the multi-turn metric alone (exit 0 or 1: scored)."""
    criteria = {"criteria": {MULTI_TURN: CONFIG["criteria"][MULTI_TURN]}}
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "config.json"
        config.write_text(json.dumps(criteria))
        args = ["run", str(recorded), "--config", str(config), "--output", "json"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return result


def test_langgraph_turns_under_openllmetry_join_the_session_their_thread_id_or_metadata_names(
    judge_server: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded LangGraph conversations under OpenLLMetry: a checkpointer's ``thread_id`` (``gen_ai.conversation.id``
    on the root) and a ``session_id`` in the run's metadata (``traceloop.association.properties.session_id`` on the
    spans under the root, the attribute the processor samples sessions by) each join a session's turns, so the
    conversation-level metric judges the whole conversation, its verdict on the last turn."""
    use_loopback_judge(monkeypatch, judge_server.base_url)
    recorded = Path(__file__).parents[1] / "data" / "frameworks" / "langgraph_openllmetry" / "sessions.otlp.json.gz"
    result = _run_multi_turn_only(recorded)
    conversations = {c["session_id"]: c for c in json.loads(result.stdout)["results"]}
    assert sorted(conversations, key=str) == ["chat-1", "chat-2", "thread-a"]
    for session_id, turns in (("thread-a", 2), ("chat-1", 2), ("chat-2", 1)):
        (judged,) = [m for m in conversations[session_id]["metrics"] if m["metric_name"] == MULTI_TURN]
        statuses = judged["per_invocation_statuses"]
        assert len(conversations[session_id]["trace_ids"]) == len(statuses) == turns
        assert statuses[:-1] == ["NOT_EVALUATED"] * (turns - 1) and statuses[-1] in ("PASSED", "FAILED")


def test_openai_agents_turns_join_a_session_by_using_session_not_by_the_trace_group_id(
    judge_server: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded OpenAI Agents SDK turns under OpenInference, each in ``trace(..., group_id=...)``: the group id reaches
    no span, so the turns naming only a group are conversations of their own; the turns run in OpenInference's
    ``using_session`` (``session.id``) join their session, judged as one conversation (docs/frameworks.md)."""
    use_loopback_judge(monkeypatch, judge_server.base_url)
    frameworks = Path(__file__).parents[1] / "data" / "frameworks"
    recorded = frameworks / "openai_agents_openinference" / "sessions.otlp.json.gz"
    assert b"group-" not in gzip.decompress(recorded.read_bytes())
    result = _run_multi_turn_only(recorded)
    conversations = json.loads(result.stdout)["results"]
    assert sorted((c["session_id"] or "", len(c["trace_ids"])) for c in conversations) == [
        ("", 1),
        ("", 1),
        ("chat-b", 2),
    ]
    (session,) = [c for c in conversations if c["session_id"] == "chat-b"]
    (judged,) = [m for m in session["metrics"] if m["metric_name"] == MULTI_TURN]
    assert judged["per_invocation_statuses"][0] == "NOT_EVALUATED"
    assert judged["per_invocation_statuses"][1] in ("PASSED", "FAILED")
