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
OTEL_EVAL_SESSION_WINDOW: Final = "otel_eval.session.window"
"""A session result's window: 0 for a session's first, then 1, 2, … for turns that came after a window was judged."""
OTEL_EVAL_SESSION_FIRST_TURN: Final = "otel_eval.session.first_turn"
"""Index (from 0, over the whole session) of the first turn a session result covers."""
OTEL_EVAL_SESSION_LAST_TURN: Final = "otel_eval.session.last_turn"
"""Index (from 0, over the whole session) of the last turn a session result covers."""
OTEL_EVAL_DROP_REASON: Final = "otel_eval.drop.reason"
OTEL_EVAL_PRIORITY_REASON: Final = "otel_eval.priority.reason"
"""Why priority sampling evaluated a trace the sample rate left out (error, negative_feedback): on
otel_eval.invocations.priority_sampled, and on the results of its invocations (event, evaluation span, score metrics);
absent on the results of invocations in the sample."""
OTEL_EVAL_OUTCOME: Final = "otel_eval.outcome"  # judge call outcome: ok | error | cached
OTEL_EVAL_TOKEN_TYPE: Final = "otel_eval.token.type"  # input | output
OTEL_EVAL_TRANSPORT: Final = "otel_eval.transport"  # embedded | kafka
OTEL_EVAL_QUEUE: Final = "otel_eval.queue"  # which queue the queue-size gauge measures: spans | requests
OTEL_EVAL_SCORE_ATTRIBUTE_TEMPLATE: Final = "gen_ai.evaluation.{metric}.score"  # enrichment on the agent's root span
OTEL_EVAL_LABEL_ATTRIBUTE_TEMPLATE: Final = "gen_ai.evaluation.{metric}.label"  # beside .score: pass | fail | ...

# The judge's own trace (``OTEL_EVAL_JUDGE_OWN_TRACE``): a ``judge {metric}`` root holding the judge's calls, linked
# to the ``evaluate {metric}`` span and back, so the agent's trace carries none of the judge's token usage.
JUDGE_SPAN_NAME_PREFIX: Final = "judge"  # span name: "judge {metric}"
OTEL_EVAL_JUDGE_TRACE_ID: Final = "otel_eval.judge.trace_id"  # on the evaluate span: the judge trace's id
OTEL_EVAL_EVALUATION_TRACE_ID: Final = "otel_eval.evaluation.trace_id"  # on the judge root: the evaluate span's trace
OTEL_EVAL_EVALUATION_SPAN_ID: Final = "otel_eval.evaluation.span_id"  # on the judge root: the evaluate span's id
OTEL_EVAL_LINK_TYPE: Final = "otel_eval.link.type"  # on those links: what the linked span is
LINK_TYPE_EVALUATION: Final = "evaluation"  # the judge root's link to the evaluate span
LINK_TYPE_JUDGE: Final = "judge"  # the evaluate span's link to the judge root

# Span types LLM-observability backends read, on evaluate spans: OpenInference's span kind (Phoenix, and MLflow's
# OpenInference translation) and MLflow's own span type, whose attribute values MLflow stores JSON-encoded
# (``mlflow.tracing.constant.SpanAttributeKey.SPAN_TYPE``; ``SpanType.EVALUATOR``).
OPENINFERENCE_SPAN_KIND_EVALUATOR: Final = "EVALUATOR"  # value of openinference.span.kind
MLFLOW_SPAN_TYPE: Final = "mlflow.spanType"
MLFLOW_SPAN_TYPE_EVALUATOR: Final = '"EVALUATOR"'  # json.dumps("EVALUATOR"), as MLflow writes and reads it

# Evaluator provenance: which evaluator, of which kind and which version produced a result, on the event, the
# evaluation span and the results topic; only the version goes on the metrics (``otel_eval_evaluator_version``, one
# value per evaluator configuration), so a rate can be split by it and an evaluator change told from a regression.
# semantic-conventions-genai PR #359 proposes ``gen_ai.evaluation.evaluator.id`` / ``.type`` / ``.version`` (and
# ``gen_ai.evaluation.reference_set.id``); it is still open and being revised, so ours stay in our namespace until it
# is settled: otel_eval.evaluator.id -> gen_ai.evaluation.evaluator.id, otel_eval.evaluator.type ->
# gen_ai.evaluation.evaluator.type, otel_eval.evaluator.version -> gen_ai.evaluation.evaluator.version.
OTEL_EVAL_EVALUATOR_ID: Final = "otel_eval.evaluator.id"  # metric name + digest of its criterion
OTEL_EVAL_EVALUATOR_TYPE: Final = "otel_eval.evaluator.type"  # llm_judge | deterministic
OTEL_EVAL_EVALUATOR_VERSION: Final = "otel_eval.evaluator.version"  # digest of everything that changes the score
# On a backend score (Phoenix annotation, MLflow assessment) that replaced an earlier otel-eval score of the same
# (trace, span, metric) made by another evaluator version: that version and id, so the change is visible there.
OTEL_EVAL_REPLACED_EVALUATOR_ID: Final = "otel_eval.replaced.evaluator.id"
OTEL_EVAL_REPLACED_EVALUATOR_VERSION: Final = "otel_eval.replaced.evaluator.version"
EVALUATOR_TYPE_LLM_JUDGE: Final = "llm_judge"
EVALUATOR_TYPE_DETERMINISTIC: Final = "deterministic"

# The label contract: ``gen_ai.evaluation.score.label`` is one of these four words for every metric, on the event,
# the evaluation span, the results topic and the metrics, so one PromQL matcher (``label="fail"``) serves every
# metric's rate, alert and panel. A metric's own verdict word ("hallucinated", "unsafe", "invalid") goes in
# ``otel_eval.score.verdict`` on the event and the span only (never on metrics: the label set stays uniform).
LABEL_PASS: Final = "pass"  # EvalStatus.PASSED
LABEL_FAIL: Final = "fail"  # EvalStatus.FAILED
LABEL_NOT_EVALUATED: Final = "not_evaluated"  # EvalStatus.NOT_EVALUATED (with error.type)
LABEL_INFORMATIONAL: Final = "informational"  # EvalStatus.INFORMATIONAL (efficiency metrics: a value, no verdict)
SCORE_LABELS: Final[tuple[str, ...]] = (LABEL_PASS, LABEL_FAIL, LABEL_NOT_EVALUATED, LABEL_INFORMATIONAL)
LABEL_VALUE_OTHER: Final = "other"  # a metric label value read from spans (gen_ai.agent.name) past its bound
OTEL_EVAL_SCORE_VERDICT: Final = "otel_eval.score.verdict"  # metric-specific word for pass/fail, events and spans

# Also emitted on evaluation spans and events (processor, worker core and emitters).
GEN_AI_OPERATION_EVALUATION: Final = "evaluation"  # gen_ai.operation.name of an evaluation span
OTEL_EVAL_CONVENTION: Final = "otel_eval.convention"  # trace convention the invocation was rebuilt from

# ``error.type`` of a NOT_EVALUATED result whose metric gave no reason (a custom metric's, a turn it left out).
ERROR_TYPE_NOT_EVALUATED: Final = "not_evaluated"
# ``error.type`` of a session window's turns before its last for a conversation-level metric: NOT_EVALUATED by design,
# as ADK's multi-turn evaluators leave them (the conversation is scored on its last turn). Not an error: not counted
# in otel_eval_evaluation_errors_total, so a healthy session does not raise the evaluation-error alert.
ERROR_TYPE_SCORED_ON_LAST_TURN: Final = "scored_on_last_turn"

# ``error.type`` of a judged metric refused by the judge budget (``OTEL_EVAL_JUDGE_BUDGET``): NOT_EVALUATED, counted in
# otel_eval_evaluation_errors_total and otel_eval_judge_budget_refusals_total.
ERROR_TYPE_BUDGET_EXHAUSTED: Final = "budget_exhausted"

# ``error.type`` of a judge sample whose reply is longer than ``OTEL_EVAL_JUDGE_MAX_REPLY_CHARS``: never parsed; the
# invocation is NOT_EVALUATED when no sample could be read, counted in otel_eval_evaluation_errors_total.
ERROR_TYPE_JUDGE_REPLY_TOO_LONG: Final = "judge_reply_too_long"

# ``error.type`` of an ADK custom metric (``custom_metrics`` of an ``EvalConfig``) that gave no score: NOT_EVALUATED,
# counted in otel_eval_evaluation_errors_total; never a crash.
ERROR_TYPE_CUSTOM_METRIC_ERROR: Final = "custom_metric_error"  # the function raised
ERROR_TYPE_CUSTOM_METRIC_TIMEOUT: Final = "custom_metric_timeout"  # the function did not return within its deadline
ERROR_TYPE_CUSTOM_METRIC_INVALID_RESULT: Final = "custom_metric_invalid_result"
"""The function returned something ADK would refuse: not ADK's ``EvaluationResult``, or the wrong number of
per-invocation results with a verdict."""

# Why a span or an invocation was dropped (``otel_eval.drop.reason``).
DROP_QUEUE_FULL: Final = "queue_full"
"""The processor's span intake queue was full (a span dropped there drops its trace whole: its other spans and its
invocations are counted with this reason, never rebuilt without it)."""
DROP_MAX_OPEN_TRACES: Final = "max_open_traces"  # a new trace while OTEL_EVAL_MAX_OPEN_TRACES traces were buffered
DROP_MAX_SPANS_PER_TRACE: Final = "max_spans_per_trace"  # a trace past OTEL_EVAL_MAX_SPANS_PER_TRACE spans
DROP_MAX_BUFFER_BYTES: Final = "max_buffer_bytes"  # a trace whose span passed OTEL_EVAL_MAX_BUFFER_BYTES in all
DROP_MAX_TRACE_AGE: Final = "max_trace_age"
"""A span (or Collector-path log record) of a trace handed on at ``OTEL_EVAL_MAX_TRACE_AGE`` (its root still running)."""
DROP_SHUTDOWN: Final = "shutdown"
"""Held at shutdown and not evaluated: a trace whose root had not ended (a process restarted mid-invocation), a
request (or session turn) not yet delivered or scored within the shutdown's timeout."""
DROP_RECONSTRUCTION_ERROR: Final = "reconstruction_error"  # rebuilding a trace's invocations raised (logged)
DROP_REBUILD_TIMEOUT: Final = "rebuild_timeout"  # rebuilding a trace's invocations took past its deadline
DROP_RECORD_TIMEOUT: Final = "record_timeout"  # the worker gave up decoding or rebuilding a record (dead-lettered)
DROP_UNREADABLE: Final = "unreadable"  # the worker could not parse a record (dead-lettered)
DROP_MAX_OPEN_SESSIONS: Final = "max_open_sessions"  # a turn of a new session, past the open-session bound
DROP_MAX_SESSION_BYTES: Final = "max_session_bytes"  # a turn that would pass the session buffer's bytes
DROP_EVALUATION_ERROR: Final = "evaluation_error"  # the worker core itself failed on a request
DROP_NO_SESSION_METRICS: Final = "no_session_metrics"
"""A turn read from the sessions topic whose metrics no longer wait for its session (the worker's criteria have no
conversation-level metric now, e.g. changed since the turn was re-keyed): nothing is left to judge."""
DROP_TRANSPORT_QUEUE_FULL: Final = "transport_queue_full"
DROP_TRANSPORT_ERROR: Final = "transport_error"
DROP_TRANSPORT_MESSAGE_TOO_LARGE: Final = "transport_message_too_large"  # over the Kafka max_request_size
DROP_TRANSPORT_SERIALIZATION_ERROR: Final = "transport_serialization_error"
DROP_INCOMPLETE: Final = "incomplete"  # a span still open when its local root was handed on at the idle timeout
DROP_LATE: Final = "late"  # a content log record (or a Collector-path span) of a trace already handed on
DROP_NO_TRACE: Final = "no_trace"  # a content log record whose span never came within the idle timeout
# Tenancy (the worker, docs/security.md)
DROP_TENANT_MAX_OPEN_TRACES: Final = "tenant_max_open_traces"  # a new trace past its tenant's open-trace bound
DROP_TENANT_MAX_OPEN_SESSIONS: Final = "tenant_max_open_sessions"  # a new session past its tenant's bound
TRANSPORT_KAFKA: Final = "kafka"  # value of otel_eval.transport
TRANSPORT_PROCESS: Final = "process"  # the processor's spans to its evaluation process (isolation="process")

# Instrumentation scopes of Kafka clients: spans of these are never buffered (the evaluator's own transport).
KAFKA_CLIENT_SCOPES: Final[tuple[str, ...]] = (
    "opentelemetry.instrumentation.aiokafka",
    "opentelemetry.instrumentation.kafka",
    "opentelemetry.instrumentation.confluent_kafka",
)

# --- emitted: instruments -----------------------------------------------------------------------------------------
# Scope of everything otel-eval emits; also how its own traffic is recognised and never evaluated.
INSTRUMENTATION_SCOPE: Final = "otel_eval"

METRIC_EVALUATION_SCORE: Final = "gen_ai.evaluation.score"  # histogram; prom: gen_ai_evaluation_score_bucket
METRIC_EVALUATION_RESULTS: Final = "gen_ai.evaluation.results"  # counter; prom: gen_ai_evaluation_results_total
METRIC_INVOCATIONS_SAMPLED: Final = "otel_eval.invocations.sampled"  # prom: otel_eval_invocations_sampled_total
# Local roots left out by the trace-id sampling decision: not rescued (not a loss), or rescued by priority.
METRIC_INVOCATIONS_SAMPLED_OUT: Final = (
    "otel_eval.invocations.sampled_out"  # prom: otel_eval_invocations_sampled_out_total
)
METRIC_INVOCATIONS_PRIORITY_SAMPLED: Final = (
    "otel_eval.invocations.priority_sampled"  # prom: otel_eval_invocations_priority_sampled_total
)
PRIORITY_REASON_ERROR: Final = "error"  # otel_eval.priority.reason: the local root's status is ERROR
PRIORITY_REASON_NEGATIVE_FEEDBACK: Final = "negative_feedback"  # its feedback attribute is a negative value
METRIC_INVOCATIONS_DROPPED: Final = "otel_eval.invocations.dropped"  # prom: otel_eval_invocations_dropped_total
METRIC_INVOCATIONS_EVALUATED: Final = "otel_eval.invocations.evaluated"  # prom: otel_eval_invocations_evaluated_total
METRIC_EVALUATION_ERRORS: Final = "otel_eval.evaluation.errors"  # prom: otel_eval_evaluation_errors_total
METRIC_SPANS_DROPPED: Final = "otel_eval.spans.dropped"  # prom: otel_eval_spans_dropped_total
METRIC_LOG_RECORDS_DROPPED: Final = "otel_eval.log_records.dropped"  # prom: otel_eval_log_records_dropped_total
METRIC_QUEUE_SIZE: Final = "otel_eval.queue.size"  # gauge; prom: otel_eval_queue_size
METRIC_JUDGE_CALLS: Final = "otel_eval.judge.calls"  # prom: otel_eval_judge_calls_total
METRIC_JUDGE_TOKENS: Final = "otel_eval.judge.tokens"  # prom: otel_eval_judge_tokens_total
METRIC_JUDGE_COST: Final = "otel_eval.judge.cost"  # USD; prom: otel_eval_judge_cost_total
METRIC_JUDGE_BUDGET_REFUSALS: Final = (
    "otel_eval.judge.budget.refusals"  # invocations refused by the budget; prom: otel_eval_judge_budget_refusals_total
)
METRIC_JUDGE_DURATION: Final = "otel_eval.judge.duration"  # s; prom: otel_eval_judge_duration_seconds_bucket
METRIC_CONSUMER_LAG: Final = "otel_eval.worker.consumer_lag"  # gauge; prom: otel_eval_worker_consumer_lag
METRIC_BATCH_DURATION: Final = (
    "otel_eval.worker.batch.duration"  # s; prom: otel_eval_worker_batch_duration_seconds_bucket
)
METRIC_WORKER_DEAD_LETTERS: Final = "otel_eval.worker.dead_letters"  # prom: otel_eval_worker_dead_letters_total
METRIC_WORKER_DUPLICATES_SKIPPED: Final = (
    "otel_eval.worker.duplicates_skipped"  # results not emitted again on redelivery; prom: ..._skipped_total
)
METRIC_WORKER_RESULTS_PUBLISHED: Final = "otel_eval.worker.results_published"  # prom: ..._results_published_total
METRIC_WORKER_ERRORS: Final = "otel_eval.worker.errors"  # by error.type; prom: otel_eval_worker_errors_total
METRIC_WORKER_CRITERIA_REFUSED: Final = (
    "otel_eval.worker.criteria_refused"  # request criteria refused, by reason; prom: ..._criteria_refused_total
)
OTEL_EVAL_REFUSAL_REASON: Final = "otel_eval.refusal.reason"  # not_allowed | metric | judge_model | num_samples | ...
# Broker outages, from the Kafka exporter (agent) and the worker, by otel_eval.transport.
METRIC_TRANSPORT_FAILED_ATTEMPTS: Final = (
    "otel_eval.transport.failed_attempts"  # prom: otel_eval_transport_failed_attempts_total
)
METRIC_TRANSPORT_OUTAGE_DURATION: Final = "otel_eval.transport.outage.duration"  # gauge, s; 0 while reachable; prom: otel_eval_transport_outage_duration_seconds
# Score sinks (otel_eval/emit/sinks): scores posted to a backend's own API (Phoenix, MLflow, Langfuse), by otel_eval.sink.
OTEL_EVAL_SINK: Final = "otel_eval.sink"  # phoenix | mlflow | langfuse
OTEL_EVAL_SINK_REASON: Final = "otel_eval.sink.reason"  # why an attempt failed or a score was dropped (SINK_* below)
METRIC_SINK_DELIVERED: Final = (
    "otel_eval.sink.delivered"  # scores the backend accepted; prom: otel_eval_sink_delivered_total
)
METRIC_SINK_DROPPED: Final = "otel_eval.sink.dropped"  # scores given up, by reason; prom: otel_eval_sink_dropped_total
METRIC_SINK_FAILED_ATTEMPTS: Final = (
    "otel_eval.sink.failed_attempts"  # requests that failed, by reason; prom: otel_eval_sink_failed_attempts_total
)
SINK_UNREACHABLE: Final = "unreachable"  # no connection, a timeout, or a 5xx/429 answer
SINK_SPAN_MISSING: Final = "span_missing"  # the annotated span or trace has not reached the backend (yet)
SINK_REJECTED: Final = "rejected"  # the backend refused the score (a 4xx answer): not retried
SINK_QUEUE_FULL: Final = "queue_full"  # the sink's bounded queue was full
SINK_SHUTDOWN: Final = "shutdown"  # still queued when the sink shut down
OTEL_EVAL_SOURCE: Final = "otel_eval.worker.source"  # requests | otlp_spans
KAFKA_TOPIC: Final = "messaging.destination.name"  # topic attribute of the worker's own metrics
KAFKA_PARTITION: Final = "messaging.destination.partition.id"

# Kafka headers the worker writes on dead-lettered messages (values UTF-8).
HEADER_DEAD_LETTER_ERROR: Final = "otel_eval.error"  # what was wrong with the message, one line
HEADER_DEAD_LETTER_ERROR_TYPE: Final = "otel_eval.error.type"  # exception class name
HEADER_DEAD_LETTER_TOPIC: Final = "otel_eval.source.topic"
HEADER_DEAD_LETTER_PARTITION: Final = "otel_eval.source.partition"
HEADER_DEAD_LETTER_OFFSET: Final = "otel_eval.source.offset"
HEADER_DEAD_LETTER_VALUE_BYTES: Final = "otel_eval.source.value_bytes"  # set when the value was too large to copy
METRIC_TRACES_IDLE_FLUSHED: Final = "otel_eval.traces.idle_flushed"  # prom: otel_eval_traces_idle_flushed_total
METRIC_INVOCATIONS_INCOMPLETE: Final = (
    "otel_eval.invocations.incomplete"  # root handed on with spans under it still open; prom: ..._incomplete_total
)

SCORE_HISTOGRAM_BUCKETS: Final[tuple[float, ...]] = (
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
)  # fmt: skip
"""Explicit buckets for 0-1 and 1-5 scores (the SDK's defaults start at 5)."""
JUDGE_DURATION_BUCKETS: Final[tuple[float, ...]] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
"""Seconds of a judge request, retries and back-off included."""
BATCH_DURATION_BUCKETS: Final[tuple[float, ...]] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0,
)  # fmt: skip
"""Seconds of a worker's batch, from one of deterministic metrics (milliseconds) to one waiting on a slow judge
(minutes). The SDK's default buckets are for milliseconds: every batch under 5 s would fall in the first one."""

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

# --- read: more GenAI semantic conventions and framework quirks (reconstruct/genai.py) ----------------------------
GEN_AI_AGENT_SYSTEM_PROMPT: Final = "gen_ai.agent.system_prompt"  # Strands, non-standard
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS_LEGACY: Final = "gen_ai.usage.cache_read_input_tokens"  # Strands, OpenLLMetry
GEN_AI_USAGE_REASONING_TOKENS_LEGACY: Final = "gen_ai.usage.reasoning_tokens"  # OpenLLMetry
GEN_AI_HANDOFF_FROM_AGENT: Final = "gen_ai.handoff.from_agent"
GEN_AI_HANDOFF_TO_AGENT: Final = "gen_ai.handoff.to_agent"
GEN_AI_EVENT_CONTENT: Final = "gen_ai.event.content"  # Azure SDKs: the whole deprecated-event body as JSON
AGENT_FRAMEWORK_SCOPE: Final = "agent_framework"  # Microsoft Agent Framework (Python)'s tracer
AGENT_FRAMEWORK_WORKFLOW_RUN: Final = "workflow.run"  # its workflow's run: no GenAI attribute, its agents' parent
PYDANTIC_AI_ALL_MESSAGES: Final = "pydantic_ai.all_messages"
PYDANTIC_AI_FINAL_RESULT: Final = "final_result"

# --- read: OpenInference (reconstruct/openinference.py) -----------------------------------------------------------
OPENINFERENCE_SCOPE_PREFIX: Final = "openinference.instrumentation"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
LLM_INPUT_MESSAGES: Final = "llm.input_messages"  # flattened: llm.input_messages.<i>.message.<field>
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_TOOLS: Final = "llm.tools"  # flattened: llm.tools.<i>.tool.json_schema
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
LLM_TOKEN_COUNT_REASONING: Final = "llm.token_count.completion_details.reasoning"
TOOL_NAME: Final = "tool.name"
EXCEPTION_EVENT: Final = "exception"  # the span event OpenTelemetry's record_exception adds
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_TYPE: Final = "exception.type"
TOOL_ID: Final = "tool.id"
TOOL_PARAMETERS: Final = "tool.parameters"
TOOL_DESCRIPTION: Final = "tool.description"
AGENT_NAME: Final = "agent.name"
GRAPH_NODE_ID: Final = "graph.node.id"
SMOLAGENTS_TOOLS_NAMES: Final = "smolagents.tools_names"  # on a smolagents agent's span
SMOLAGENTS_FINAL_ANSWER: Final = "final_answer"  # the tool a smolagents agent answers with
LLAMA_INDEX_SCOPE: Final = "openinference.instrumentation.llama_index"
LLAMA_INDEX_AGENT_NAME: Final = "current_agent_name"  # in the Python reprs of a LlamaIndex agent's step inputs

# --- read: OpenLLMetry / Traceloop (reconstruct/openllmetry.py) ---------------------------------------------------
GEN_AI_PROMPT: Final = "gen_ai.prompt"  # flattened: gen_ai.prompt.<i>.{role,content,tool_call_id,tool_calls.<j>.*}
GEN_AI_COMPLETION: Final = "gen_ai.completion"  # flattened: gen_ai.completion.<i>.{role,content,tool_calls.<j>.*}
LLM_REQUEST_FUNCTIONS: Final = "llm.request.functions"  # flattened: llm.request.functions.<i>.{name,description,...}
LLM_REQUEST_TYPE: Final = "llm.request.type"
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
TRACELOOP_WORKFLOW_NAME: Final = "traceloop.workflow.name"
TRACELOOP_ASSOCIATION_SESSION_ID: Final = "traceloop.association.properties.session_id"
