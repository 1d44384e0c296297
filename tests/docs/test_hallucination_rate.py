"""One text on the hallucination rate's definition: the same words in docs/deploying.md and
deploy/prometheus/README.md, and the recording rules compute what they say (failed verdicts over verdicts, the
not_evaluated results in neither count)."""

from __future__ import annotations

import re

import yaml

from tests.docs.recipes import REPO

DEFINITION = re.compile(r"The \*\*hallucination rate\*\* is (.*?)those\.", re.DOTALL)
RULES = REPO / "deploy" / "prometheus" / "rules" / "otel-eval.rules.yaml"


def _definition(path: str) -> str:
    match = DEFINITION.search((REPO / path).read_text(encoding="utf-8"))
    assert match, f"{path} does not define the hallucination rate"
    return " ".join(match.group(1).split())


def test_the_docs_and_the_rules_readme_say_the_same() -> None:
    site = _definition("docs/deploying.md")
    assert site == _definition("deploy/prometheus/README.md")
    assert "(`pass` + `fail`)" in site and "`not_evaluated`" in site


def test_the_recording_rules_compute_failed_verdicts_over_verdicts() -> None:
    rules = {r.get("record"): r["expr"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    for window in ("5m", "1h"):
        expr = " ".join(rules[f"job_agent:gen_ai_evaluation_hallucination_rate:ratio_rate{window}"].split())
        numerator, denominator = expr.rsplit(" / ", 1)
        selector = 'gen_ai_evaluation_name="hallucinations_v1",gen_ai_evaluation_score_label'
        sample = 'otel_eval_priority_reason=""'  # the sample only: rescued results would weigh 1 / rate times more
        assert f'{selector}="fail",{sample}}}[{window}]' in numerator
        assert denominator == (
            f'sum by (job, gen_ai_agent_name) (rate(gen_ai_evaluation_results_total{{{selector}=~"pass|fail",{sample}}}'
            f"[{window}]))"
        )
    guard = " ".join(rules["job_agent:gen_ai_evaluation_hallucination_results:increase1h"].split())
    assert 'gen_ai_evaluation_score_label=~"pass|fail",otel_eval_priority_reason=""' in guard
