"""``response_match_score``: ADK 2.13's ``RougeEvaluator`` (ROUGE-1 F-measure of the final response), score for score.

Per invocation: the ROUGE-1 F-measure (rouge-score, Porter stemming, ADK 2.13's Unicode-aware tokenisation, see
:mod:`otel_eval.metrics._text`) of the actual final response's text against the expected one's, where a response's
text is its text parts joined by newlines (thought parts included, as ADK reads them) and an empty text scores 0.0.
The overall score is the mean over invocations, PASSED when it is at least the threshold (0.8 when requested by name).

Differences from ADK, all where ADK would raise or cannot run: no expected invocations, or a different number of
actual and expected invocations, give NOT_EVALUATED with the reason; an invocation whose spans carried no message
content is NOT_EVALUATED (its response text is unknown, not empty).
"""

from __future__ import annotations

from typing import ClassVar

from otel_eval.metrics._reference import ReferenceEvaluator, not_captured
from otel_eval.metrics._text import rouge1_fmeasure
from otel_eval.metrics.base import MetricInfo
from otel_eval.model import BaseCriterion, Invocation, PerInvocationResult, TracedInvocation, content_text
from otel_eval.reconstruct.reads import Reads


class ResponseMatchScoreEvaluator(ReferenceEvaluator):
    """ROUGE-1 F-measure of each actual final response against the expected one, averaged."""

    reads = Reads.FINAL_RESPONSE

    info: ClassVar[MetricInfo] = MetricInfo(
        name="response_match_score",
        description=(
            "ROUGE-1 F-measure (with stemming, Unicode-aware tokenisation as ADK 2.13) of the agent's final response "
            "against the expected final response, averaged over invocations."
        ),
        criterion_type=BaseCriterion,
        requires_reference=True,
        default_threshold=0.8,
    )

    def score_invocation(self, traced: TracedInvocation, reference: Invocation) -> PerInvocationResult:
        """ROUGE-1 F-measure of the actual final response against the expected one."""
        if not traced.content_captured:
            return not_captured("the final response was not captured in the trace (message content capture off)")
        actual_text = content_text(traced.invocation.final_response)
        score = rouge1_fmeasure(actual_text, content_text(reference.final_response))
        return PerInvocationResult(score=score, eval_status=self.status_of(score))
