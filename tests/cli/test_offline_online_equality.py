"""One evaluation core: ``otel-eval run --output json`` and the processor's ``gen_ai.evaluation.result`` events give
the same scores and statuses for the same spans, criteria and eval set (hypothesis over generated traces and eval
sets, user texts perturbed in case and whitespace so that the one pairing rule is exercised).

The only difference allowed is the documented one: online, a metric that needs a reference is not reported on an
invocation no eval case pairs with; offline it is reported NOT_EVALUATED with ``no_reference``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from google.genai import types as genai_types
from google.protobuf.json_format import MessageToDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_eval import EvaluationSpanProcessor, ProcessorSettings, semconv
from otel_eval.cli import main
from otel_eval.demo import TravelAgent
from otel_eval.demo.workload import Scenario, ToolStep
from otel_eval.metrics import NO_REFERENCE
from otel_eval.model import EvalCase, EvalSet, IntermediateData, Invocation
from tests.processor.telemetry import Telemetry, hex_id

USER_TEXTS = ("Book a flight to Paris", "What's the weather like in Paris today?", "How much is 100 USD in euros?")
TOOLS = (
    ToolStep("get_weather", {"city": "Paris"}),
    ToolStep("get_weather", {"city": "Tokyo"}),
    ToolStep("convert_currency", {"amount": 100, "source": "USD", "target": "EUR"}),
    ToolStep("get_local_time", {"city": "London"}),
)
ANSWERS = ("It is sunny and 18°C in Paris today.", "100 USD is 92 EUR.", "Your flight to Paris is booked.")


@st.composite
def _texts(draw: st.DrawFn) -> str:
    """A user text, perhaps with its case changed and its spaces doubled (the same text for the pairing rule)."""
    text = draw(st.sampled_from(USER_TEXTS))
    if draw(st.booleans()):
        text = text.replace(" ", "  ", 1)
    if draw(st.booleans()):
        text = text.upper()
    return text


_tools = st.lists(st.sampled_from(TOOLS), max_size=2).map(tuple)
_scenarios = st.builds(
    Scenario,
    key=st.just("generated"),
    description=st.just("generated"),
    user_text=_texts(),
    tool_steps=_tools,
    answer=st.sampled_from(ANSWERS),
)


@st.composite
def _eval_sets(draw: st.DrawFn) -> EvalSet:
    cases = []
    for index in range(draw(st.integers(min_value=1, max_value=3))):
        tools = draw(_tools)
        invocation = Invocation(
            user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=draw(_texts()))]),
            final_response=genai_types.Content(
                role="model", parts=[genai_types.Part(text=draw(st.sampled_from(ANSWERS)))]
            ),
            intermediate_data=IntermediateData(
                tool_uses=[genai_types.FunctionCall(name=t.name, args=t.arguments) for t in tools]
            ),
        )
        cases.append(EvalCase(eval_id=f"case-{index}", conversation=[invocation]))
    return EvalSet(eval_set_id="generated", eval_cases=cases)


_criteria = st.fixed_dictionaries(
    {
        "tool_trajectory_avg_score": st.fixed_dictionaries(
            {
                "threshold": st.sampled_from([0.5, 1.0]),
                "match_type": st.sampled_from(["EXACT", "IN_ORDER", "ANY_ORDER"]),
            }
        ),
        "response_match_score": st.sampled_from([0.3, 0.8]),
        "tool_trajectory_f1": st.sampled_from([0.5, 0.9]),
    }
)


def _offline(spans: list[Any], eval_set: EvalSet, criteria: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(trace id, metric) -> the ``--output json`` metric entry, each conversation being one trace's invocation."""
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "trace.json").write_text(json.dumps(MessageToDict(encode_spans(spans))))
        (folder / "set.evalset.json").write_text(eval_set.model_dump_json())
        (folder / "config.json").write_text(json.dumps({"criteria": criteria}))
        args = ["run", folder / "trace.json", "--eval-set", folder / "set.evalset.json"]
        args += ["--config", folder / "config.json", "--output", "json", "--allow-not-evaluated"]
        result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    found = {}
    for conversation in json.loads(result.stdout)["results"]:
        (trace_id,) = conversation["trace_ids"]
        for metric in conversation["metrics"]:
            found[(trace_id, metric["metric_name"])] = metric
    return found


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios=st.lists(_scenarios, min_size=1, max_size=3), eval_set=_eval_sets(), criteria=_criteria)
def test_otel_eval_run_and_the_processor_give_the_same_scores_and_statuses(
    scenarios: list[Scenario], eval_set: EvalSet, criteria: dict[str, Any]
) -> None:
    telemetry = Telemetry()
    processor = EvaluationSpanProcessor(
        criteria, settings=ProcessorSettings(eval_set=eval_set), **telemetry.providers()
    )
    telemetry.tracer_provider.add_span_processor(processor)
    telemetry.add_exporting_processor()
    agent = TravelAgent(telemetry.tracer_provider)
    for index, scenario in enumerate(scenarios):
        agent.run(scenario, conversation_id=f"conversation-{index}")  # one invocation per conversation
    assert processor.force_flush(30_000)
    online = {}
    for event in telemetry.result_events():
        record = event.log_record
        attributes = dict(record.attributes or {})
        online[(hex_id(record.trace_id, 32), attributes[semconv.GEN_AI_EVALUATION_NAME])] = attributes
    agent_spans = [
        s for s in telemetry.finished_spans() if s.instrumentation_scope.name != semconv.INSTRUMENTATION_SCOPE
    ]
    processor.shutdown()
    telemetry.shutdown()

    offline = _offline(agent_spans, eval_set, criteria)
    assert len({trace_id for trace_id, _ in offline}) == len(scenarios)
    for key, metric in offline.items():
        if metric["error_type"] == NO_REFERENCE:
            assert key not in online  # skipped online, reported offline: the one documented difference
            continue
        event = online.pop(key)
        (score,) = metric["per_invocation_scores"]
        (status,) = metric["per_invocation_statuses"]
        assert event.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE) == score, key
        assert event[semconv.OTEL_EVAL_STATUS] == status, key
    assert not online  # nothing scored online that offline did not score
