"""The shipped quality rules read only results of the sample, on series our emitters really wrote.

With ``OTEL_EVAL_SAMPLE_RATE`` below 1, priority sampling also evaluates left-out invocations that errored; their
results carry ``otel_eval.priority.reason``. A batch a minute in which every invocation in the sample is grounded and
every rescued (errored, left-out) one hallucinates: counting every result, the hallucination rate would read 30 % and
page; the shipped rule reads the sample (0 %) and no alert fires, while the rescued turns' own rate shows them (100 %).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.trace import Status, StatusCode

from otel_eval import ProcessorSettings, semconv
from otel_eval.demo.workload import TravelAgent
from tests.deploy import emitted
from tests.deploy.emitted import AGENT_NAME, GROUNDED, HALLUCINATING, JOB, Sample
from tests.deploy.test_emitted_alerts import _one_batch, _promtool_test, _run_promtool
from tests.processor.test_rescued_results import _ChosenTraceIds

RATE = 0.3
BATCH = ((GROUNDED, True, False),) * 7 + ((HALLUCINATING, False, True),) * 3 + ((HALLUCINATING, False, False),) * 2
"""(scenario, in the sample, root status ERROR): 7 grounded in the sample, 3 hallucinating errored turns the rate left
out (rescued), 2 hallucinating turns left out and not evaluated."""


class RescuingAgent(emitted.Agent):
    """The travel agent at sample rate 0.3, each turn under a ``POST /chat`` local root, its trace id chosen in or out
    of the sample."""

    def __init__(self, meter_provider: MeterProvider) -> None:
        criteria = {"hallucinations_v1": emitted.CRITERIA["hallucinations_v1"]}
        super().__init__(meter_provider, criteria=criteria, settings=ProcessorSettings(sample_rate=RATE))
        self._ids = _ChosenTraceIds()
        self.tracer_provider.id_generator = self._ids
        self._travel = TravelAgent(tracer_provider=self.tracer_provider)

    def run_batch(self) -> None:
        tracer = self.tracer_provider.get_tracer("web.server")
        for scenario, in_sample, error in BATCH:
            self._ids.in_sample = in_sample
            with tracer.start_as_current_span("POST /chat") as root:
                self._travel.run(scenario)
                if error:
                    root.set_status(Status(StatusCode.ERROR, "upstream failed"))
        assert self.processor.force_flush(60_000), "the evaluation of a batch did not finish"


@pytest.fixture(scope="module")
def rescued_samples() -> list[Sample]:
    with _one_batch(emitted.judge_answers, emitted.JUDGE_ENVIRONMENT, RescuingAgent) as in_memory:
        return emitted.collected_otlp_samples(in_memory)


def test_the_emitters_label_only_the_rescued_results(rescued_samples: list[Sample]) -> None:
    results = emitted.named(rescued_samples, "gen_ai_evaluation_results_total")
    reason = "otel_eval_priority_reason"
    by = {
        (s.label(reason), s.label("gen_ai_evaluation_score_label")): s.value
        for s in results
        if s.label("gen_ai_evaluation_name") == "hallucinations_v1"
    }
    assert by == {(None, "pass"): 7, (semconv.PRIORITY_REASON_ERROR, "fail"): 3}


@pytest.mark.integration
def test_rescued_results_do_not_bias_the_hallucination_rate_or_page(
    rescued_samples: list[Sample], promtool: str, tmp_path: Path
) -> None:
    agent = f'{{job="{JOB}",gen_ai_agent_name="{AGENT_NAME}"}}'
    hallucinations = 'gen_ai_evaluation_results_total{gen_ai_evaluation_name="hallucinations_v1",'
    every_result = (
        f'sum by (job, gen_ai_agent_name) (rate({hallucinations}gen_ai_evaluation_score_label="fail"}}[5m]))'
        f' / sum by (job, gen_ai_agent_name) (rate({hallucinations}gen_ai_evaluation_score_label=~"pass|fail"}}[5m]))'
    )
    rescued = "job_agent_reason:gen_ai_evaluation_rescued_hallucination_rate:ratio_rate1h"
    test = _promtool_test(rescued_samples)
    test["tests"][0]["promql_expr_test"] = [
        {  # what a rule counting every result reads: 3 of 10, over the 5 % threshold
            "expr": f"round({every_result}, 0.001)",
            "eval_time": "30m",
            "exp_samples": [{"labels": agent, "value": 0.3}],
        },
        {
            "expr": "job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m",
            "eval_time": "30m",
            "exp_samples": [
                {"labels": f"job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate5m{agent}", "value": 0}
            ],
        },
        {
            "expr": rescued,
            "eval_time": "30m",
            "exp_samples": [
                {
                    "labels": f'{rescued}{{job="{JOB}",gen_ai_agent_name="{AGENT_NAME}",'
                    f'otel_eval_priority_reason="{semconv.PRIORITY_REASON_ERROR}"}}',
                    "value": 1,
                }
            ],
        },
        {"expr": "ALERTS", "eval_time": "30m", "exp_samples": []},
        {"expr": "ALERTS", "eval_time": "80m", "exp_samples": []},
    ]
    process = _run_promtool(promtool, test, tmp_path)
    assert process.returncode == 0, f"promtool on rescued series:\n{process.stdout}{process.stderr}"
