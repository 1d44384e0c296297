"""``isolation="process"``: a shutdown whose judge never answers still ends with the evaluation process's own account
of what it could not evaluate. Its deadline used to be the caller's, so this side killed it just as it was saying so:
its counts and its last reply were lost, and all the agent's log had was ``did not stop ...; killed``."""

from __future__ import annotations

import logging
import socket

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_eval import EvaluationSpanProcessor, ProcessorSettings
from otel_eval.demo import SCENARIOS, TravelAgent
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


# A starting evaluation process (nice 10) gets little CPU on a busy machine, and its start alone took over 8 s under
# the test suite's own load: the cases where the shutdown finds it starting get the SDK's default 30 s.
@pytest.mark.parametrize(
    ("before", "timeout_millis"), [("judge_called", 8_000), ("at_once", 30_000), ("after_a_flush", 30_000)]
)
def test_a_shutdown_waiting_on_a_silent_judge_gets_the_evaluation_process_account(
    before: str,
    timeout_millis: int,
    silent_judge: tuple[str, list[socket.socket]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Whether the evaluation process is already waiting on the judge, still starting (it reads the shutdown late),
    or still busy with a flush that timed out."""
    url, called = silent_judge
    monkeypatch.setenv("OTEL_EVAL_JUDGE_BASE_URL", url)
    monkeypatch.setenv("OTEL_EVAL_JUDGE_API_KEY", "test-key")
    caplog.set_level(logging.WARNING, logger="otel_eval.processor._process.feeder")
    processor = EvaluationSpanProcessor(
        {"hallucinations_v1": 0.5}, settings=ProcessorSettings(isolation="process"), sinks=[lambda records: None]
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    TravelAgent(provider).run(SCENARIOS[0])
    if before == "judge_called":
        assert wait_until(lambda: bool(called), timeout=60)  # the evaluation process runs, its judge call hangs
    elif before == "after_a_flush":
        assert not processor.force_flush(3_000)  # sent while the evaluation process starts: it cannot be done
    processor.shutdown(timeout_millis=timeout_millis)
    stats = processor.stats()
    assert stats.get("evaluation_process.invocations.dropped.shutdown") == 1, stats  # its last reply arrived
    assert not [r.getMessage() for r in caplog.records if "killed" in r.getMessage()]
