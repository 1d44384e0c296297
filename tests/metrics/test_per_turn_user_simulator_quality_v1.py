"""per_turn_user_simulator_quality_v1: first turn without judge, judged turns, stop signal, ADK parity."""

from __future__ import annotations

import pytest

from otel_eval.judge import JUDGE_SERVER_ERROR
from otel_eval.judge.budget import BudgetSpec
from otel_eval.metrics.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1, render_prompt
from otel_eval.model import ConversationScenario, EvalStatus, LlmBackedUserSimulatorCriterion
from otel_eval.model.eval_case import UserBehavior, UserPersona
from tests.judge.fake_gemini import FakeGemini, Reply, Responder, error_reply
from tests.judge.helpers import adk_invocations, adk_metric, invocation, keyed_sequences, make_judge, traced

pytest_plugins = ("tests.judge.plugin",)
pytestmark = pytest.mark.usefixtures("clean_genai_env")

VALID = '{"criteria": [], "is_valid": True}'
INVALID = '{"criteria": [], "is_valid": False}'
SCENARIO = ConversationScenario(starting_prompt="  Book a table for two. ", conversation_plan="Book, then confirm.")


def conversation() -> list:
    return [
        invocation("Book a table for two.", "Which day?"),
        invocation("Friday please.", "Booked for Friday."),
        invocation("Thanks, confirmed.", "You're welcome."),
    ]


def criterion(num_samples: int = 3) -> LlmBackedUserSimulatorCriterion:
    return LlmBackedUserSimulatorCriterion.model_validate(
        {"threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": num_samples}}
    )


# Keys are the generated user responses, looked for in the prompt's "# Generated User Response" section.
SCRIPT = {
    "</finished>": [INVALID, INVALID, VALID],  # stop signal check fails -> replaces the last turn
    "Friday please.": [VALID, VALID, INVALID],
    "Thanks, confirmed.": [VALID, INVALID, "garbage"],  # tie -> invalid
}


def generated_response(prompt: str) -> str:
    return prompt.rsplit("# Generated User Response", 1)[-1]


def script(table: dict[str, list[str | Reply]] = SCRIPT, default: str | None = None) -> Responder:
    return keyed_sequences(table, default, section=generated_response)


async def test_turns_and_stop_signal(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(script())
    evaluator = PerTurnUserSimulatorQualityV1(criterion(), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(*conversation()), conversation_scenario=SCENARIO)
    scores = [r.score for r in result.per_invocation_results]
    assert scores == [1.0, 1.0, 0.0]  # first turn matches after strip; last replaced by the failed stop check
    assert result.overall_score == pytest.approx(2 / 3)
    assert len(fake_gemini.requests) == 9  # 3 samples x (2 later turns + stop check); the first turn has no call
    assert "Book, then confirm." in fake_gemini.requests[0].prompt


async def test_wrong_first_turn_and_missing_scenario(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: VALID)
    evaluator = PerTurnUserSimulatorQualityV1(criterion(1), judge=make_judge(fake_gemini))
    result = await evaluator.evaluate(traced(invocation("Hello", "Hi")), conversation_scenario=SCENARIO)
    assert [r.score for r in result.per_invocation_results] == [0.0]
    assert result.overall_score == 0.0
    missing = await evaluator.evaluate(traced(invocation("Hello", "Hi")))
    assert missing.overall_eval_status is EvalStatus.NOT_EVALUATED and missing.error_type == "no_reference"


async def test_judge_failure_is_not_evaluated(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(script({"Friday please.": [error_reply(500)]}, default=VALID))
    evaluator = PerTurnUserSimulatorQualityV1(criterion(1), judge=make_judge(fake_gemini, max_attempts=1))
    result = await evaluator.evaluate(traced(*conversation()), conversation_scenario=SCENARIO)
    assert result.overall_eval_status is EvalStatus.NOT_EVALUATED and result.error_type == JUDGE_SERVER_ERROR
    assert result.per_invocation_results[1].error_type == JUDGE_SERVER_ERROR


def test_prompt_rendering_equals_adk_jinja() -> None:
    from google.adk.evaluation.simulation.per_turn_user_simulator_quality_prompts import (
        get_per_turn_user_simulator_quality_prompt,
    )
    from google.adk.evaluation.simulation.user_simulator_personas import UserPersona as AdkPersona

    persona = UserPersona(
        id="custom",
        description="A terse user.",
        behaviors=[
            UserBehavior(
                name="Terse",
                description="Answers in a few words; ends with {{ stop_signal }}.",
                behavior_instructions=["be brief"],
                violation_rubrics=["Long answers.", "Does not use {{ stop_signal }}."],
            )
        ],
    )
    args = {
        "conversation_plan": "Plan {x}",
        "conversation_history": "user: hi\n\nmodel: hello",
        "generated_user_response": "bye",
        "stop_signal": "</finished>",
    }
    assert render_prompt(**args, persona=None) == get_per_turn_user_simulator_quality_prompt(**args)
    adk_persona = AdkPersona.model_validate(persona.model_dump())
    assert render_prompt(**args, persona=persona) == get_per_turn_user_simulator_quality_prompt(
        **args, user_persona=adk_persona
    )


async def test_parity_with_adk_evaluator(adk_env: FakeGemini) -> None:
    from google.adk.evaluation.eval_case import ConversationScenario as AdkScenario
    from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import (
        PerTurnUserSimulatorQualityV1 as AdkEvaluator,
    )

    spec = {"threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 3}}
    adk_env.set_responder(script())
    theirs = await AdkEvaluator(adk_metric("per_turn_user_simulator_quality_v1", spec)).evaluate_invocations(
        adk_invocations(conversation()), conversation_scenario=AdkScenario.model_validate(SCENARIO.model_dump())
    )
    adk_env.reset()
    adk_env.set_responder(script())
    ours = await PerTurnUserSimulatorQualityV1(criterion(), judge=make_judge(adk_env)).evaluate(
        traced(*conversation()), conversation_scenario=SCENARIO
    )
    assert [r.score for r in ours.per_invocation_results] == [r.score for r in theirs.per_invocation_results]
    assert [r.eval_status.value for r in ours.per_invocation_results] == [
        r.eval_status.value for r in theirs.per_invocation_results
    ]
    assert ours.overall_score == pytest.approx(theirs.overall_score)


async def test_the_judge_budget_admits_the_whole_conversation_or_none_of_it(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(script())
    refused = await PerTurnUserSimulatorQualityV1(
        criterion(), judge=make_judge(fake_gemini, budget=BudgetSpec.parse("0.001"))
    ).evaluate(traced(*conversation()), conversation_scenario=SCENARIO)
    assert refused.overall_eval_status is EvalStatus.NOT_EVALUATED and refused.error_type == "budget_exhausted"
    assert fake_gemini.requests == []  # 9 calls at about $0.0026 each do not fit $0.001 (less its reserve)
    admitted = await PerTurnUserSimulatorQualityV1(
        criterion(), judge=make_judge(fake_gemini, budget=BudgetSpec.parse("1"))
    ).evaluate(traced(*conversation()), conversation_scenario=SCENARIO)
    assert admitted.overall_score == pytest.approx(2 / 3) and len(fake_gemini.requests) == 9
