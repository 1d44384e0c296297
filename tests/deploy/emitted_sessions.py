"""A sessions workload for the tests that tie ``deploy/`` to the code: chat sessions of three turns, scored per turn
and, for the conversation-level metric, on each session's window (ADK's layout: the verdict on the last turn, the
earlier turns ``NOT_EVALUATED`` with ``error.type`` ``scored_on_last_turn``).

:class:`SessionAgent` runs the travel agent with ``EvaluationSpanProcessor`` attached as the README says (criteria and
a ``meter_provider``; the default judge from the environment, pointed at the loopback Gemini server). A session's
window closes at its third turn (``max_turns``), so a batch is judged before :meth:`SessionAgent.run_batch` returns.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider

from otel_eval import ProcessorSettings
from otel_eval.demo import Scenario, ToolStep
from otel_eval.evaluation.sessions import SessionLimits
from tests.deploy.emitted import Agent
from tests.judge.fake_gemini import Reply, error_reply, request_text

MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
TURNS = 3
CRITERIA: dict[str, Any] = {
    MULTI_TURN: {
        "threshold": 0.5,
        "judge_model_options": {"num_samples": 1},
        "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
    },
}
WEATHER = Scenario("w", "w", "Weather in Paris?", (ToolStep("get_weather", {"city": "Paris"}),), "Sunny, 18 C.")
THANKS = Scenario("t", "t", "Thanks!", (), "You are welcome!")
UNHELPFUL = Scenario("u", "u", "How much is 100 USD in euros?", (), "I cannot say.")
SESSIONS: tuple[tuple[Scenario, ...], ...] = (
    (WEATHER, THANKS, WEATHER),
    (WEATHER, THANKS, UNHELPFUL),
    (THANKS, WEATHER, WEATHER),
    (WEATHER, WEATHER, THANKS),
)
"""One batch: four sessions of three turns; the judge finds the one ending unhelpfully did not help."""
PASS_SHARE = 0.75
"""The conversation-level metric's pass rate over the verdicts (one per session)."""


def judge_answers(model: str, body: dict[str, Any]) -> Reply:
    """The rubric judge: the agent helped unless the conversation holds the unhelpful answer."""
    verdict = "no" if UNHELPFUL.answer in request_text(body) else "yes"
    return Reply(text=f"ID: r\nProperty: The agent helped.\nRationale: read it\nVerdict: {verdict}\n")


def judge_down(model: str, body: dict[str, Any]) -> Reply:
    """A judge that answers HTTP 500 to every call."""
    return error_reply(500, "the judge is down")


class SessionAgent(Agent):
    """The travel agent in chat sessions, with the evaluation processor reporting metrics on ``meter_provider``."""

    def __init__(self, meter_provider: MeterProvider) -> None:
        limits = SessionLimits(idle_timeout=600, max_turns=TURNS)
        super().__init__(meter_provider, criteria=CRITERIA, settings=ProcessorSettings(sessions=limits))

    def run_batch(self) -> None:
        """One batch of sessions, every turn and every session window evaluated before it returns."""
        for index, turns in enumerate(SESSIONS):
            for scenario in turns:
                self._agent.run(scenario, conversation_id=f"session-{index}")
        assert self.processor.force_flush(60_000), "the evaluation of a batch did not finish"
