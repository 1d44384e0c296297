"""Every telemetry name otel-eval reads or emits: attributes, events, spans and instruments.

Names we *emit* follow the OpenTelemetry GenAI evaluation conventions where one exists (``gen_ai.evaluation.*``),
and use the ``otel_eval.`` namespace otherwise. Prometheus names (after the OTLP translation: dots become
underscores, counters get ``_total``, a unit of ``s`` gets ``_seconds``) are given in comments, because the
shipped alert rules and dashboard query them.
"""

from __future__ import annotations

from typing import Final

# --- emitted: the evaluation result event and the evaluation span -------------------------------------------------
EVALUATION_RESULT_EVENT: Final = "gen_ai.evaluation.result"
EVALUATION_SPAN_NAME_PREFIX: Final = "evaluate"  # span name: "evaluate {metric}"

GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
ERROR_TYPE: Final = "error.type"

OTEL_EVAL_METRIC_VERSION: Final = "otel_eval.metric.version"
OTEL_EVAL_THRESHOLD: Final = "otel_eval.threshold"
OTEL_EVAL_STATUS: Final = "otel_eval.eval_status"  # PASSED | FAILED | NOT_EVALUATED | INFORMATIONAL
OTEL_EVAL_JUDGE_MODEL: Final = "otel_eval.judge.model"
OTEL_EVAL_EVAL_ID: Final = "otel_eval.eval_id"
OTEL_EVAL_EVAL_SET_ID: Final = "otel_eval.eval_set_id"
OTEL_EVAL_RESULT_ID: Final = "otel_eval.result.id"
OTEL_EVAL_INVOCATION_ID: Final = "otel_eval.invocation.id"
OTEL_EVAL_DROP_REASON: Final = "otel_eval.drop.reason"
OTEL_EVAL_OUTCOME: Final = "otel_eval.outcome"  # judge call outcome: ok | error | cached
OTEL_EVAL_TOKEN_TYPE: Final = "otel_eval.token.type"  # input | output
OTEL_EVAL_TRANSPORT: Final = "otel_eval.transport"  # embedded | kafka
OTEL_EVAL_SCORE_ATTRIBUTE_TEMPLATE: Final = "gen_ai.evaluation.{metric}.score"  # enrichment on the agent's root span

# Score labels. A metric may document its own labels; these are the defaults.
LABEL_PASS: Final = "pass"
LABEL_FAIL: Final = "fail"
LABEL_NOT_EVALUATED: Final = "not_evaluated"
LABEL_INFORMATIONAL: Final = "informational"

# --- emitted: instruments -----------------------------------------------------------------------------------------
# Scope of everything otel-eval emits; also how its own traffic is recognised and never evaluated.
INSTRUMENTATION_SCOPE: Final = "otel_eval"

METRIC_EVALUATION_SCORE: Final = "gen_ai.evaluation.score"  # histogram; prom: gen_ai_evaluation_score_bucket
METRIC_EVALUATION_RESULTS: Final = "gen_ai.evaluation.results"  # counter; prom: gen_ai_evaluation_results_total
METRIC_INVOCATIONS_SAMPLED: Final = "otel_eval.invocations.sampled"  # prom: otel_eval_invocations_sampled_total
METRIC_INVOCATIONS_DROPPED: Final = "otel_eval.invocations.dropped"  # prom: otel_eval_invocations_dropped_total
METRIC_INVOCATIONS_EVALUATED: Final = "otel_eval.invocations.evaluated"  # prom: otel_eval_invocations_evaluated_total
METRIC_EVALUATION_ERRORS: Final = "otel_eval.evaluation.errors"  # prom: otel_eval_evaluation_errors_total
METRIC_SPANS_DROPPED: Final = "otel_eval.spans.dropped"  # prom: otel_eval_spans_dropped_total
METRIC_QUEUE_SIZE: Final = "otel_eval.queue.size"  # gauge; prom: otel_eval_queue_size
METRIC_JUDGE_CALLS: Final = "otel_eval.judge.calls"  # prom: otel_eval_judge_calls_total
METRIC_JUDGE_TOKENS: Final = "otel_eval.judge.tokens"  # prom: otel_eval_judge_tokens_total
METRIC_JUDGE_COST: Final = "otel_eval.judge.cost"  # USD; prom: otel_eval_judge_cost_total
METRIC_JUDGE_DURATION: Final = "otel_eval.judge.duration"  # s; prom: otel_eval_judge_duration_seconds_bucket
METRIC_CONSUMER_LAG: Final = "otel_eval.worker.consumer_lag"  # gauge; prom: otel_eval_worker_consumer_lag
METRIC_BATCH_DURATION: Final = (
    "otel_eval.worker.batch.duration"  # s; prom: otel_eval_worker_batch_duration_seconds_bucket
)
METRIC_WORKER_DEAD_LETTERS: Final = "otel_eval.worker.dead_letters"  # prom: otel_eval_worker_dead_letters_total

SCORE_HISTOGRAM_BUCKETS: Final[tuple[float, ...]] = (
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
)  # fmt: skip
"""Explicit buckets for 0-1 and 1-5 scores (the SDK's defaults start at 5)."""

# --- read: GenAI semantic conventions -----------------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_SYSTEM: Final = "gen_ai.system"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"  # deprecated name, still emitted in the wild
GEN_AI_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"  # deprecated name
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_OPERATION_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
GEN_AI_DEPRECATED_MESSAGE_EVENTS: Final = (
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
    "gen_ai.choice",
)

# --- read: Google ADK ---------------------------------------------------------------------------------------------
ADK_SCOPE: Final = "gcp.vertex.agent"
ADK_INVOCATION_ID: Final = "gcp.vertex.agent.invocation_id"
ADK_SESSION_ID: Final = "gcp.vertex.agent.session_id"
ADK_EVENT_ID: Final = "gcp.vertex.agent.event_id"
ADK_LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
ADK_TOOL_CALL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"

# --- read: OpenInference / OpenLLMetry ----------------------------------------------------------------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
SESSION_ID: Final = "session.id"
