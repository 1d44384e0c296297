"""Log lines about failures never carry the user's text: a judge reply that fails validation (pydantic's
``input_value=`` quotes it), a judge error that disables the provider, a metric or a reconstruction whose exception
message quotes the invocation. They name the problem, the exception's type and where it was raised; the full text is
at DEBUG only."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import ClassVar

import pytest

from otel_eval.emit import Emitters
from otel_eval.errors import JudgeError
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.judge import JUDGE_AUTH, JUDGE_BAD_RESPONSE, JudgeRequest
from otel_eval.metrics import Evaluator, MetricInfo
from otel_eval.model import (
    BaseCriterion,
    ConversationScenario,
    EvalStatus,
    EvaluationResult,
    Invocation,
    TracedInvocation,
    content_text,
)
from otel_eval.reconstruct import Convention, Reads, TraceInvocations, rebuild_trace
from otel_eval.traces import Span
from tests.judge.fake_gemini import FakeGemini, Reply, error_reply
from tests.judge.helpers import make_judge
from tests.reconstruct.sdk_traces import TraceRecorder
from tests.worker._core_helpers import registry_with, request, traced

pytest_plugins = ("tests.judge.plugin",)

USER_TEXT = "my card number is 4111 1111 1111 1111"


def judge_request() -> JudgeRequest:
    return JudgeRequest(model="gemini-2.5-flash", prompt=f"Judge this: {USER_TEXT}", system_instruction="be a judge")


async def test_a_judge_reply_that_fails_validation_is_named_without_its_value(fake_gemini: FakeGemini) -> None:
    body = {"candidates": [{"content": {"parts": f"The user said: {USER_TEXT}", "role": "model"}}]}
    fake_gemini.set_responder(lambda model, request: Reply(raw_body=json.dumps(body).encode()))
    with pytest.raises(JudgeError) as caught:
        await make_judge(fake_gemini).generate(judge_request(), metric="safety_v1")
    assert caught.value.error_type == JUDGE_BAD_RESPONSE
    message = str(caught.value)
    assert "4111" not in message and "input_value" not in message
    assert "GenerateContentResponse: candidates.0.content.parts: Input should be a valid list [list_type]" in message


async def test_the_error_that_disables_a_judge_provider_is_logged_without_the_value(
    fake_gemini: FakeGemini, caplog: pytest.LogCaptureFixture
) -> None:
    echoed = (
        f"1 validation error for Request\ncontents\n  bad [type=string_type, input_value='{USER_TEXT}', input_type=str]"
    )
    fake_gemini.set_responder(lambda model, request: error_reply(403, echoed))
    judge = make_judge(fake_gemini)
    with caplog.at_level(logging.ERROR, "otel_eval.judge"), pytest.raises(JudgeError) as caught:
        await judge.generate(judge_request(), metric="safety_v1")
    assert caught.value.error_type == JUDGE_AUTH
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "disabled for this process" in line and "judge rejected the credentials" in line
    assert "4111" not in line and "input_value=<left out>, input_type=str" in line
    assert "4111" not in judge.summary_line()


class _Quoting(Evaluator):
    """A metric with a bug whose exception quotes the user's text."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="quoting_v1", description="raises", criterion_type=BaseCriterion, default_threshold=0.5
    )

    async def evaluate(
        self,
        actual: Sequence[TracedInvocation],
        expected: Sequence[Invocation] | None = None,
        *,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult:
        raise ValueError(f"cannot score {content_text(actual[0].invocation.user_content)!r}")


async def test_a_failing_metric_is_logged_with_its_type_and_place_not_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = EvaluationCore(
        emitters=Emitters(None), criteria={"quoting_v1": 0.5}, registry=registry_with(_Quoting), judge_configured=False
    )
    with caplog.at_level(logging.DEBUG, "otel_eval.evaluation"):
        records = await core.evaluate(request(traced(user=USER_TEXT)))
    (failed,) = [r for r in records if r.metric_name == "quoting_v1"]
    assert failed.eval_status is EvalStatus.NOT_EVALUATED and failed.error_type == "ValueError"
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    line = error.getMessage()
    assert "4111" not in line and error.exc_info is None
    assert "metric quoting_v1 failed on trace" in line
    assert "ValueError at evaluation/test_error_logs_without_content.py:" in line and "in evaluate" in line
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert any(USER_TEXT in str(r.exc_info[1]) for r in debug if r.exc_info)


class _Breaking(Convention):
    """A convention with a bug whose exception quotes an attribute of the span."""

    name = "breaking"

    def detect(self, spans: Sequence[Span]) -> bool:
        return True

    def rebuild(self, spans: Sequence[Span], reads: Reads = Reads.ALL) -> TraceInvocations:
        count = int(str(spans[0].attributes["n"]))  # ValueError: invalid literal for int() with base 10: '<the text>'
        return TraceInvocations(spans[0].trace_id, self.name, warnings=[f"{count} spans"])


def test_a_failing_reconstruction_is_logged_with_its_type_and_place_not_the_span_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = TraceRecorder()
    with recorder.span("agent", {"n": USER_TEXT}, new_trace=True):
        pass
    with caplog.at_level(logging.WARNING, "otel_eval.reconstruct"):
        rebuilt = rebuild_trace(recorder.spans(), [_Breaking()])
    (line,) = [r.getMessage() for r in caplog.records if "reconstruction failed" in r.getMessage()]
    assert "4111" not in line
    assert "breaking reconstruction failed: ValueError at evaluation/test_error_logs_without_content.py:" in line
    assert rebuilt.invocations == [] and all("4111" not in w for w in rebuilt.warnings)
