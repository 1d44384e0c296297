"""Every ``OTEL_EVAL_*`` environment variable, in one place.

Each constant's value is its own name. The processor reads these in
:meth:`otel_eval.EvaluationSpanProcessor.from_env`; the worker's settings (``otel_eval.worker.settings``) read the
same names through pydantic-settings with the ``OTEL_EVAL_`` prefix. A ``DEFAULT_*`` constant after a variable is
its default where more than one component reads it (defined here only). A bad value fails at start-up, naming the
variable and the problem (:func:`~otel_eval._runtime.setting_values.number_setting` and the other readers there,
importable from here too; pydantic-settings in the worker); it is never replaced by a default.
"""

from __future__ import annotations

from typing import Final

from otel_eval._runtime.setting_values import flag_setting as flag_setting
from otel_eval._runtime.setting_values import names_setting as names_setting
from otel_eval._runtime.setting_values import number_setting as number_setting
from otel_eval._runtime.setting_values import shown_setting as shown_setting

ENV_PREFIX: Final = "OTEL_EVAL_"

OTEL_EVAL_CRITERIA: Final = "OTEL_EVAL_CRITERIA"
"""ADK EvalConfig JSON (``{"criteria": {...}}`` or just the criteria object), or a path to such a file."""

OTEL_EVAL_METRICS: Final = "OTEL_EVAL_METRICS"
"""Comma-separated metrics to run, each with its criterion from ``OTEL_EVAL_CRITERIA`` when that names it, else the
metric's default (as ``otel-eval run --metric``); ADK's efficiency metrics are then not added. Read by the processor
(``ProcessorSettings.metrics``) and the Kafka worker (for its own criteria; a request's honoured criteria are scored
as they were). Default empty: the criteria (else the defaults) plus ADK's efficiency metrics. An unknown name stops
start-up."""

OTEL_EVAL_REQUEST_CRITERIA: Final = "OTEL_EVAL_REQUEST_CRITERIA"
"""Kafka worker: ``true`` honours the criteria an evaluation request carries, within the allowlists below (refused
ones are counted, and the request is scored with the worker's own criteria). Default false: requests' criteria are
refused."""
DEFAULT_REQUEST_CRITERIA: Final = False

OTEL_EVAL_REQUEST_METRICS: Final = "OTEL_EVAL_REQUEST_METRICS"
"""Kafka worker: comma-separated metrics a request's criteria may name (``*``: any registered metric). Default none."""

OTEL_EVAL_REQUEST_JUDGE_MODELS: Final = "OTEL_EVAL_REQUEST_JUDGE_MODELS"
"""Kafka worker: comma-separated judge models a request's criteria may name (a criterion naming none uses the
worker's default judge). Default none."""

OTEL_EVAL_REQUEST_MAX_OUTPUT_TOKENS: Final = "OTEL_EVAL_REQUEST_MAX_OUTPUT_TOKENS"
"""Kafka worker: the largest ``judge_model_config.max_output_tokens`` a request's criteria may set. Default 4096."""
DEFAULT_REQUEST_MAX_OUTPUT_TOKENS: Final = 4096

OTEL_EVAL_MAX_NUM_SAMPLES: Final = "OTEL_EVAL_MAX_NUM_SAMPLES"
"""The largest ``judge_model_options.num_samples`` (judge calls per invocation and metric) accepted anywhere: a
request asking more is refused, a configuration asking more fails at start-up. Default 20."""
DEFAULT_MAX_NUM_SAMPLES: Final = 20

OTEL_EVAL_EVAL_SET: Final = "OTEL_EVAL_EVAL_SET"
"""Path to an ADK eval set; live invocations whose user text matches a case also get its reference metrics."""

OTEL_EVAL_CUSTOM_METRIC_TIMEOUT: Final = "OTEL_EVAL_CUSTOM_METRIC_TIMEOUT"
"""Seconds one call of an ADK custom metric function may run, counted from when it starts on one of its metric's two
threads; past it the call is NOT_EVALUATED (``error.type`` ``custom_metric_timeout``) and abandoned. A call also waits
at most this long for a free thread (both busy with the metric's earlier calls). Read by ``otel-eval run``, the
processor and the Kafka worker when they import their custom metrics. Default 120."""

OTEL_EVAL_CONSOLE: Final = "OTEL_EVAL_CONSOLE"
"""``true`` prints one line per score to stdout (embedded mode), next to the events, spans and metrics. Default false."""

OTEL_EVAL_SAMPLE_RATE: Final = "OTEL_EVAL_SAMPLE_RATE"
"""Fraction of traces evaluated, decided deterministically: by session (a hash of the session id a trace's spans
name, so a session's turns are evaluated all or none), else by the trace id. Default 1.0. With
``OTEL_EVAL_SAMPLE_PRIORITY=false`` the decision is the trace id's alone, so a session's turns are sampled one by one
(the processor warns at start-up when conversation-level metrics run)."""

OTEL_EVAL_SAMPLE_PRIORITY: Final = "OTEL_EVAL_SAMPLE_PRIORITY"
"""``true``/``false``: with a sample rate below 1, every trace is buffered and decided when its local root ends (by
session, else trace id), and a left-out one is still evaluated when its root ended in error or carries negative
feedback (``OTEL_EVAL_PRIORITY_FEEDBACK_*``); ``false`` is pure head sampling by trace id. Default ``true``."""
DEFAULT_SAMPLE_PRIORITY: Final = True

OTEL_EVAL_AGENT_NAMES: Final = "OTEL_EVAL_AGENT_NAMES"
"""Comma-separated agent names to evaluate; empty means all."""

OTEL_EVAL_ROOT_SPAN_NAMES: Final = "OTEL_EVAL_ROOT_SPAN_NAMES"
"""Comma-separated root span name prefixes to evaluate; empty means all."""

OTEL_EVAL_MAX_OPEN_TRACES: Final = "OTEL_EVAL_MAX_OPEN_TRACES"
"""Traces buffered at once before new ones are dropped. Default 2048."""
DEFAULT_MAX_OPEN_TRACES: Final = 2048

OTEL_EVAL_MAX_SPANS_PER_TRACE: Final = "OTEL_EVAL_MAX_SPANS_PER_TRACE"
"""Spans buffered per trace before further spans of it are dropped. Default 2048."""
DEFAULT_MAX_SPANS_PER_TRACE: Final = 2048

OTEL_EVAL_MAX_BUFFER_BYTES: Final = "OTEL_EVAL_MAX_BUFFER_BYTES"
"""Approximate bytes of attribute data buffered over all traces. Default 64 MiB."""

OTEL_EVAL_TRACE_IDLE_TIMEOUT: Final = "OTEL_EVAL_TRACE_IDLE_TIMEOUT"
"""Seconds after a trace's last span before it is evaluated though its root never ended locally (the processor
waits for an invocation under way, its root running with a span under it open, up to ``OTEL_EVAL_MAX_TRACE_AGE``
however long no span ends: a slow model call, a tool awaiting approval); also the longest a root that ended waits for
spans still open under it (then it is evaluated without them, counted in ``otel_eval.invocations.incomplete``: raise
it when background tasks outlive their invocation by longer; it costs the memory of those invocations, held that
long). Default 30. ``otel-eval run --from mlflow`` leaves out a trace MLflow still has
as ``IN_PROGRESS`` (no root span yet) until its last span is this old."""
DEFAULT_TRACE_IDLE_TIMEOUT: Final = 30.0

OTEL_EVAL_MAX_TRACE_AGE: Final = "OTEL_EVAL_MAX_TRACE_AGE"
"""Seconds an agent run may last before it is evaluated as it is, without waiting for the rest, and its later spans
are dropped (``otel_eval.spans.dropped{otel_eval.drop.reason=max_trace_age}``), as at
``OTEL_EVAL_MAX_SPANS_PER_TRACE``. The processor: from the first span start of an invocation under way (its root
running with a span under it open, waited for however long no span ends; counted in
``otel_eval.invocations.incomplete``). The worker's Collector path: from a trace's earliest span start to its latest
span end (the spans' own timestamps); a trace whose spans keep coming (a long-running root with periodic children) holds its partition's committed offset at its first record until
then. Raise it for runs longer than 10 minutes (a human approval that may wait longer); it costs the memory of their
spans, held that long. Default 600 (20 idle timeouts: an agent run of up to 10 minutes is evaluated whole)."""
DEFAULT_MAX_TRACE_AGE: Final = 600.0

OTEL_EVAL_SESSION_IDLE_TIMEOUT: Final = "OTEL_EVAL_SESSION_IDLE_TIMEOUT"
"""Seconds without a new turn after which a session's conversation-level metrics run (embedded worker). Default 300:
long enough for a person to read an answer and type the next question (chat turns are usually seconds to a minute or
two apart), short enough that a conversation's scores arrive within minutes and open sessions stay few (between
Datadog's 3 idle minutes and AWS AgentCore's 15). A turn after that opens a new window, judged on its own. The idle
time runs from one turn's end to the next turn's end, so it includes the next invocation's whole run: an agent whose
turns take minutes needs it above the longest pause between questions plus its longest invocation."""
DEFAULT_SESSION_IDLE_TIMEOUT: Final = 300.0

OTEL_EVAL_SESSION_MAX_TURNS: Final = "OTEL_EVAL_SESSION_MAX_TURNS"
"""Turns after which a session's conversation-level metrics run at once; its next turn opens a new window.
Default 50."""
DEFAULT_SESSION_MAX_TURNS: Final = 50

OTEL_EVAL_MAX_OPEN_SESSIONS: Final = "OTEL_EVAL_MAX_OPEN_SESSIONS"
"""Sessions held open at once for their conversation-level metrics; a turn of a new session beyond it is not held
(``otel_eval.invocations.dropped{otel_eval.drop.reason=max_open_sessions}``; its own metrics still run). Default
10000."""
DEFAULT_MAX_OPEN_SESSIONS: Final = 10_000

OTEL_EVAL_MAX_SESSION_BYTES: Final = "OTEL_EVAL_MAX_SESSION_BYTES"
"""Approximate bytes of turns held over all open sessions; a turn that would pass it is not held
(``otel_eval.invocations.dropped{otel_eval.drop.reason=max_session_bytes}``). Default 64 MiB."""
DEFAULT_MAX_SESSION_BYTES: Final = 64 * 1024 * 1024

OTEL_EVAL_MAX_PENDING_SPANS: Final = "OTEL_EVAL_MAX_PENDING_SPANS"
"""Ended spans waiting (between ``on_end`` and the processor's background thread) before new ones are dropped.
Default 8192."""

OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Not ours: the GenAI instrumentations' content switch. Read to notice ``EVENT_ONLY`` (content on log records; also
what the older boolean ``true`` / ``1`` means) when the processor's companion ``log_record_processor`` receives none."""
CAPTURE_EVENT_ONLY: Final = "EVENT_ONLY"
CAPTURE_EVENT_ONLY_ALIASES: Final = frozenset({"TRUE", "1"})
"""The boolean values of the content switch the instrumentations (ADK among them) read as ``EVENT_ONLY``."""

OTEL_EVAL_ISOLATION: Final = "OTEL_EVAL_ISOLATION"
"""Where the embedded evaluation runs: ``thread`` (background threads of the agent's process, the default) or
``process`` (a child process fed the spans over a socket; it exports the scores as ``OTEL_TRACES_EXPORTER``,
``OTEL_LOGS_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` say)."""
ISOLATION_THREAD: Final = "thread"
ISOLATION_PROCESS: Final = "process"
DEFAULT_ISOLATION: Final = ISOLATION_THREAD

OTEL_EVAL_EMIT: Final = "OTEL_EVAL_EMIT"
"""Comma-separated OpenTelemetry signals the scores are emitted as: ``events`` (``gen_ai.evaluation.result``),
``spans`` (an ``evaluate {metric}`` span per result), ``metrics`` (the score histogram and the results counter),
``attributes`` (score attributes on the root span, with ``enrich=``); ``none`` for none of them. What is not listed
is not computed. The score sinks (``OTEL_EVAL_SINKS``) and the worker's results topic are independent of it. Default
all four; ``events,metrics`` emits what the Splunk in-process evaluator emits (plus the results counter)."""
EMIT_EVENTS: Final = "events"
EMIT_SPANS: Final = "spans"
EMIT_METRICS: Final = "metrics"
EMIT_ATTRIBUTES: Final = "attributes"
EMIT_NONE: Final = "none"
EMIT_SIGNALS: Final = (EMIT_EVENTS, EMIT_SPANS, EMIT_METRICS, EMIT_ATTRIBUTES)
DEFAULT_EMIT: Final = frozenset(EMIT_SIGNALS)

OTEL_EVAL_EXPLANATIONS: Final = "OTEL_EVAL_EXPLANATIONS"
"""Whether results carry their explanation (``gen_ai.evaluation.explanation``: the judge's rationale, which quotes
the agent's answer, or a deterministic metric's, which quotes tool calls and their arguments). ``false``: no result
carries one, wherever it goes (result events, evaluation spans and their status, the score sinks, the worker's
results topic, the console lines, ``otel-eval run``'s ``--sinks`` and ``--export-otlp``), so no score carries the
user's or the model's text (the judge still reads it; the Kafka requests topic still carries the invocations); the
score, label, verdict and ``error.type`` stay. Read by the processor (``ProcessorSettings.explanations``), the Kafka
worker and ``otel-eval run``. Default true."""
DEFAULT_EXPLANATIONS: Final = True

OTEL_EVAL_QUEUE_SIZE: Final = "OTEL_EVAL_QUEUE_SIZE"
"""Evaluation requests waiting for the embedded worker or the Kafka producer. Default 1024."""
DEFAULT_QUEUE_SIZE: Final = 1024

OTEL_EVAL_JUDGE_MODEL: Final = "OTEL_EVAL_JUDGE_MODEL"
"""Default judge model when a criterion names none, any provider's (resolved as ADK resolves it: ``gpt-4o-mini``,
``claude-sonnet-4-5``, ``anthropic/claude-sonnet-4-5``, ``ollama/llama3.1``, …). Default gemini-2.5-flash."""

OTEL_EVAL_JUDGE_NUM_SAMPLES: Final = "OTEL_EVAL_JUDGE_NUM_SAMPLES"
"""Override of ``judge_model_options.num_samples`` for every judged metric."""

OTEL_EVAL_JUDGE_MAX_CONCURRENCY: Final = "OTEL_EVAL_JUDGE_MAX_CONCURRENCY"
"""Judge calls in flight at once, shared by all metrics of the process. Default 8."""

OTEL_EVAL_JUDGE_TIMEOUT: Final = "OTEL_EVAL_JUDGE_TIMEOUT"
"""Seconds per judge call before it is abandoned (and retried). Default 60."""

OTEL_EVAL_JUDGE_MAX_ATTEMPTS: Final = "OTEL_EVAL_JUDGE_MAX_ATTEMPTS"
"""Attempts per judge call on 429/5xx/timeouts. Default 5."""

OTEL_EVAL_JUDGE_PRICES: Final = "OTEL_EVAL_JUDGE_PRICES"
"""JSON price table, USD per million tokens: ``{"model": {"input": 0.3, "output": 2.5}}``."""

OTEL_EVAL_JUDGE_INPUT_LIMITS: Final = "OTEL_EVAL_JUDGE_INPUT_LIMITS"
"""JSON object of judge input limits in tokens, ``{"model-or-prefix": 32000}``, over the built-in table (longest
name prefix wins; positive integers); a prompt over its judge model's limit is not sent (``context_overflow``)."""

OTEL_EVAL_JUDGE_MAX_REPLY_CHARS: Final = "OTEL_EVAL_JUDGE_MAX_REPLY_CHARS"
"""Longest judge reply, in characters, that a judged metric reads; a longer sample is not parsed (``error.type``
``judge_reply_too_long``; the invocation is NOT_EVALUATED when no sample could be read). An integer >= 1024. Default
65536 (64 KiB): room for a hallucination validator's labels on about 200 sentences, while parsing stays a few
milliseconds."""
DEFAULT_JUDGE_MAX_REPLY_CHARS: Final = 65_536

OTEL_EVAL_JUDGE_BUDGET: Final = "OTEL_EVAL_JUDGE_BUDGET"
"""Judge spend limit, USD per hour per process: ``2.5`` (all judged metrics together), or per metric,
``hallucinations_v1=1.0,safety_v1=0.5,*=2`` (``*``: the metrics not named, together; without ``*`` they are not
limited). Unset: no limit."""

OTEL_EVAL_JUDGE_BASE_URL: Final = "OTEL_EVAL_JUDGE_BASE_URL"
"""The judge's endpoint, for the judge only (``GOOGLE_GEMINI_BASE_URL`` would move the agent's own google-genai
calls too), e.g. the scripted loopback server of ``otel-eval judge-server``; it applies to every judge provider (the
OpenAI base URL, Claude on Vertex AI's endpoint, LiteLLM's ``api_base``). Unset: each provider's own."""

OTEL_EVAL_JUDGE_API_KEY: Final = "OTEL_EVAL_JUDGE_API_KEY"
"""The judge's API key, for the judge only, for every judge provider (else each provider's own: ``GOOGLE_API_KEY`` /
``GEMINI_API_KEY``, ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, …; an access token for Claude on Vertex AI). Never
logged."""

OTEL_EVAL_JUDGE_OWN_TRACE: Final = "OTEL_EVAL_JUDGE_OWN_TRACE"
"""``true`` (default): the judge's ``generate_content`` spans go into a trace of their own, a ``judge {metric}`` root
linked to the ``evaluate {metric}`` span (and back), so a backend's token and cost totals for the agent's trace are
the agent's own. ``false``: they are children of the ``evaluate`` span, in the agent's trace."""
DEFAULT_JUDGE_OWN_TRACE: Final = True

OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE: Final = "OTEL_EVAL_PRIORITY_FEEDBACK_ATTRIBUTE"
"""Root-span attribute holding the user's feedback on an invocation. Default ``user.feedback``."""

OTEL_EVAL_PRIORITY_FEEDBACK_VALUES: Final = "OTEL_EVAL_PRIORITY_FEEDBACK_VALUES"
"""Comma-separated values of that attribute that mark negative feedback (case-insensitive). Default
``negative,thumbs_down,dislike,-1``."""

OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS: Final = "OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS"
"""Kafka bootstrap servers. When set, the processor sends requests to Kafka instead of the embedded worker."""

OTEL_EVAL_KAFKA_DELIVERY_TIMEOUT_MS: Final = "OTEL_EVAL_KAFKA_DELIVERY_TIMEOUT_MS"
"""How long the processor's Kafka exporter waits, in ``force_flush()`` and ``shutdown()``, while the broker
acknowledges nothing; with the broker unreachable, ``TracerProvider.shutdown()`` returns within it and what was not
delivered is dropped and counted (``otel_eval.drop.reason=shutdown``). Default 5000."""

OTEL_EVAL_KAFKA_REQUESTS_TOPIC: Final = "OTEL_EVAL_KAFKA_REQUESTS_TOPIC"
"""Topic of evaluation requests. Default otel_eval.requests."""
DEFAULT_KAFKA_REQUESTS_TOPIC: Final = "otel_eval.requests"

OTEL_EVAL_KAFKA_RESULTS_TOPIC: Final = "OTEL_EVAL_KAFKA_RESULTS_TOPIC"
"""Topic of evaluation results. Default otel_eval.results."""
DEFAULT_KAFKA_RESULTS_TOPIC: Final = "otel_eval.results"

OTEL_EVAL_KAFKA_SPANS_TOPIC: Final = "OTEL_EVAL_KAFKA_SPANS_TOPIC"
"""Topic the Collector's Kafka exporter writes OTLP spans to. Default otlp_spans."""

OTEL_EVAL_KAFKA_LOGS_TOPIC: Final = "OTEL_EVAL_KAFKA_LOGS_TOPIC"
"""Topic the Collector's Kafka exporter writes OTLP logs to (GenAI content captured as events). Default otlp_logs."""

OTEL_EVAL_KAFKA_SESSIONS_TOPIC: Final = "OTEL_EVAL_KAFKA_SESSIONS_TOPIC"
"""Collector path: topic the worker re-keys rebuilt invocations to by session id (those whose conversation-level
metrics wait for their session), consumed by workers with the ``sessions`` source; empty = not re-keyed (each trace's
conversation-level metrics then run on it alone). Give it as many partitions as the requests topic. Default
otel_eval.sessions."""
DEFAULT_KAFKA_SESSIONS_TOPIC: Final = "otel_eval.sessions"

OTEL_EVAL_KAFKA_DEAD_LETTER_TOPIC: Final = "OTEL_EVAL_KAFKA_DEAD_LETTER_TOPIC"
"""Topic for messages the worker cannot parse. Default otel_eval.dead_letter."""

OTEL_EVAL_KAFKA_GROUP_ID: Final = "OTEL_EVAL_KAFKA_GROUP_ID"
"""Consumer group of the workers. Default otel-eval-worker."""

OTEL_EVAL_KAFKA_SECURITY_PROTOCOL: Final = "OTEL_EVAL_KAFKA_SECURITY_PROTOCOL"
"""PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""

OTEL_EVAL_KAFKA_SASL_MECHANISM: Final = "OTEL_EVAL_KAFKA_SASL_MECHANISM"
"""PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."""

OTEL_EVAL_KAFKA_SASL_USERNAME: Final = "OTEL_EVAL_KAFKA_SASL_USERNAME"
"""SASL user name."""

OTEL_EVAL_KAFKA_SASL_PASSWORD: Final = "OTEL_EVAL_KAFKA_SASL_PASSWORD"
"""SASL password. Never logged."""

OTEL_EVAL_KAFKA_SSL_CAFILE: Final = "OTEL_EVAL_KAFKA_SSL_CAFILE"
"""CA bundle for TLS."""

OTEL_EVAL_KAFKA_SSL_CERTFILE: Final = "OTEL_EVAL_KAFKA_SSL_CERTFILE"
"""Client certificate for mutual TLS."""

OTEL_EVAL_KAFKA_SSL_KEYFILE: Final = "OTEL_EVAL_KAFKA_SSL_KEYFILE"
"""Client key for mutual TLS."""

OTEL_EVAL_KAFKA_SSL_KEY_PASSWORD: Final = "OTEL_EVAL_KAFKA_SSL_KEY_PASSWORD"
"""Password of the client key. Never logged."""

OTEL_EVAL_KAFKA_COMPRESSION: Final = "OTEL_EVAL_KAFKA_COMPRESSION"
"""Producer compression: zstd (default), gzip, none, snappy or lz4. zstd compresses the JSON as well as gzip does (aiokafka's
gzip runs at level 9) for about a tenth of the CPU; gzip for consumers whose Kafka client lacks zstd (Kafka >= 2.1)."""
DEFAULT_KAFKA_COMPRESSION: Final = "zstd"

OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS: Final = "OTEL_EVAL_KAFKA_SESSION_TIMEOUT_MS"
"""Consumer-group session timeout of the workers. Default 30000."""

OTEL_EVAL_KAFKA_MAX_POLL_INTERVAL_MS: Final = "OTEL_EVAL_KAFKA_MAX_POLL_INTERVAL_MS"
"""Longest a worker may go without polling its consumer before it leaves its group (and its partitions go to
another). A batch waiting on a slow judge does not count: the worker keeps polling, its partitions paused, while the
batch runs (see "Kafka and the Collector"). Default 300000, or twice ``OTEL_EVAL_WORKER_SHUTDOWN_TIMEOUT`` if longer."""

OTEL_EVAL_KAFKA_REQUEST_TIMEOUT_MS: Final = "OTEL_EVAL_KAFKA_REQUEST_TIMEOUT_MS"
"""How long the worker's producer waits for the broker before a publish fails and the batch is retried. Default 30000."""

OTEL_EVAL_KAFKA_LINGER_MS: Final = "OTEL_EVAL_KAFKA_LINGER_MS"
"""How long the agent's Kafka exporter waits to fill a batch before sending. Default 0 (each request is sent at once:
latency); tens of ms (e.g. 50) send fewer, larger batches (throughput)."""

OTEL_EVAL_KAFKA_FETCH_MAX_WAIT_MS: Final = "OTEL_EVAL_KAFKA_FETCH_MAX_WAIT_MS"
"""Longest the broker holds a worker's fetch open waiting for new requests. Default 20 (latency: a broker that
does not answer a waiting fetch early, like tansu, adds up to this to each score's delay); 500 polls an idle broker
less (throughput)."""

OTEL_EVAL_WORKER_CONCURRENCY: Final = "OTEL_EVAL_WORKER_CONCURRENCY"
"""Invocations a worker evaluates at once. Default 16."""
DEFAULT_CONCURRENCY: Final = 16

OTEL_EVAL_WORKER_SHUTDOWN_TIMEOUT: Final = "OTEL_EVAL_WORKER_SHUTDOWN_TIMEOUT"
"""Seconds from SIGTERM/SIGINT to the worker's exit, whatever the broker does: it drains the batch in flight, then
stops its Kafka clients. After a clean drain the signal ends the process (as uvicorn does); 75 when fetched records
were left uncommitted (the group redelivers them); see the worker's exit codes in "Kafka and the Collector".
Default 30."""

OTEL_EVAL_WORKER_SOURCES: Final = "OTEL_EVAL_WORKER_SOURCES"
"""Comma-separated topic kinds the worker consumes: ``requests`` (default), ``otlp_spans`` (the Collector path),
``otlp_logs`` (with ``otlp_spans``: GenAI content log records joined to their traces), ``sessions`` (the
Collector path's sessions topic, ``OTEL_EVAL_KAFKA_SESSIONS_TOPIC``: session windows judged). Each consumed kind needs
its topic set (not empty)."""

OTEL_EVAL_WORKER_RECORD_TIMEOUT: Final = "OTEL_EVAL_WORKER_RECORD_TIMEOUT"
"""Seconds a worker may spend decoding or rebuilding one record off its event loop before the record is
dead-lettered (reason in the headers), counted, and the partition moves on. Default 30."""

OTEL_EVAL_WORKER_MAX_BATCH_SIZE: Final = "OTEL_EVAL_WORKER_MAX_BATCH_SIZE"
"""Records a worker fetches per batch; offsets are committed after each batch. Default 64."""

OTEL_EVAL_WORKER_DEDUP_CACHE_SIZE: Final = "OTEL_EVAL_WORKER_DEDUP_CACHE_SIZE"
"""Result ids a worker remembers as emitted, to skip them on redelivery. Default 100000."""

OTEL_EVAL_WORKER_DEDUP_READBACK: Final = "OTEL_EVAL_WORKER_DEDUP_READBACK"
"""Results per partition read back from the results topic when partitions are assigned (0 = off). Default 10000."""

OTEL_EVAL_WORKER_TELEMETRY: Final = "OTEL_EVAL_WORKER_TELEMETRY"
"""Where the worker's telemetry goes: otlp (default; ``OTEL_EXPORTER_OTLP_*``), prometheus (metrics served on
``/metrics``, needs ``otel-eval[prometheus]``; spans and events over OTLP when an ``OTEL_EXPORTER_OTLP_*ENDPOINT`` is set), console or none."""

OTEL_EVAL_WORKER_METRICS_HOST: Final = "OTEL_EVAL_WORKER_METRICS_HOST"
"""Address the worker's HTTP endpoints (``/healthz``, ``/readyz``, ``/metrics``, unauthenticated) listen on. Default
``0.0.0.0`` in a container (Kubernetes, Docker, Podman), ``127.0.0.1`` elsewhere; the deploy manifests set it."""

# --- tenancy and bounds on untrusted input (docs/security.md) ---------------------------------------------------------
OTEL_EVAL_TENANT_HEADER: Final = "OTEL_EVAL_TENANT_HEADER"
"""Worker: the Kafka record header whose value is the record's tenant (set by an authenticated Collector or a trusted
producer). When set, it alone decides the tenant (a record without it is the default tenant ``""``). Default unset."""
OTEL_EVAL_TENANT_ATTRIBUTE: Final = "OTEL_EVAL_TENANT_ATTRIBUTE"
"""Worker, Collector path: the resource attribute whose value is a span's (and a content log record's) tenant, e.g.
``tenant.id`` or ``service.namespace``; used when no tenant header is set. Default unset (one tenant)."""
OTEL_EVAL_MAX_OPEN_TRACES_PER_TENANT: Final = "OTEL_EVAL_MAX_OPEN_TRACES_PER_TENANT"
"""Worker, Collector path: traces one tenant may have open at once; a new trace past it is refused (its spans counted
in ``otel_eval.spans.dropped{otel_eval.drop.reason=tenant_max_open_traces}``). Default unset (only the global
bound)."""
OTEL_EVAL_MAX_OPEN_SESSIONS_PER_TENANT: Final = "OTEL_EVAL_MAX_OPEN_SESSIONS_PER_TENANT"
"""Worker: sessions one tenant may hold open at once; a turn of a new session past it is not held
(``otel_eval.invocations.dropped{otel_eval.drop.reason=tenant_max_open_sessions}``). Default unset (only the global
bound)."""
OTEL_EVAL_METRIC_AGENT_NAMES: Final = "OTEL_EVAL_METRIC_AGENT_NAMES"
"""Distinct ``gen_ai.agent.name`` values (read from spans) the score metrics keep as a label; later ones are counted
as ``other``. Default 100."""
DEFAULT_METRIC_AGENT_NAMES: Final = 100

OTEL_EVAL_WORKER_METRICS_PORT: Final = "OTEL_EVAL_WORKER_METRICS_PORT"
"""Port of the worker's HTTP endpoints. Default 9464 (the OpenTelemetry Prometheus exporter's); 0 turns them off."""

OTEL_EVAL_WORKER_FLUSH_TIMEOUT: Final = "OTEL_EVAL_WORKER_FLUSH_TIMEOUT"
"""Seconds a worker waits for its telemetry to be exported before committing a batch. Default 10."""


OTEL_EVAL_SINKS: Final = "OTEL_EVAL_SINKS"
"""Comma-separated score sinks besides the OpenTelemetry signals: ``console``, ``phoenix``, ``mlflow``, ``langfuse``.
Each backend sink is configured by that backend's own variables (below). Default none."""

OTEL_EVAL_SINKS_INFORMATIONAL: Final = "OTEL_EVAL_SINKS_INFORMATIONAL"
"""``true`` also sends informational results (no threshold) to the backend sinks. Default false."""

OTEL_EVAL_SINKS_RETRY_SECONDS: Final = "OTEL_EVAL_SINKS_RETRY_SECONDS"
"""Seconds a backend sink keeps retrying a score (its span not there yet, the backend down). Default 120."""
DEFAULT_SINKS_RETRY_SECONDS: Final = 120.0

OTEL_EVAL_SINKS_QUEUE_SIZE: Final = "OTEL_EVAL_SINKS_QUEUE_SIZE"
"""Scores each backend sink holds at most (queued and awaiting retry); further ones are dropped. Default 10000."""
DEFAULT_SINKS_QUEUE_SIZE: Final = 10_000

# The backends' own variables, read by the score sinks and `otel-eval run --from` as their own clients read them.
PHOENIX_COLLECTOR_ENDPOINT: Final = "PHOENIX_COLLECTOR_ENDPOINT"
"""Phoenix's base URL (a trailing ``/v1/traces`` is ignored). Default ``http://localhost:6006``."""
PHOENIX_API_KEY: Final = "PHOENIX_API_KEY"
"""Phoenix API key, sent as a bearer token. Default none."""
PHOENIX_CLIENT_HEADERS: Final = "PHOENIX_CLIENT_HEADERS"
"""Extra headers for Phoenix's API, ``k=v,k2=v2`` (W3C baggage style, as the OTLP header variables)."""
PHOENIX_PROJECT_NAME: Final = "PHOENIX_PROJECT_NAME"
"""The Phoenix project the agent's spans go to, where the ``phoenix`` sink assigns its annotation configs (which
direction of each score is good). Default: ``openinference.project.name`` in ``OTEL_RESOURCE_ATTRIBUTES``, else
``default``."""
MLFLOW_TRACKING_URI: Final = "MLFLOW_TRACKING_URI"
"""MLflow tracking server URL (``http(s)://`` only). Default ``http://localhost:5000``."""
MLFLOW_TRACKING_TOKEN: Final = "MLFLOW_TRACKING_TOKEN"
"""MLflow bearer token. Default none."""
MLFLOW_TRACKING_USERNAME: Final = "MLFLOW_TRACKING_USERNAME"
"""MLflow basic-auth user (with ``MLFLOW_TRACKING_PASSWORD``). Default none."""
MLFLOW_TRACKING_PASSWORD: Final = "MLFLOW_TRACKING_PASSWORD"
"""MLflow basic-auth password. Default none."""
MLFLOW_EXPERIMENT_ID: Final = "MLFLOW_EXPERIMENT_ID"
"""The MLflow experiment ``otel-eval run --from mlflow`` reads (over ``MLFLOW_EXPERIMENT_NAME``). Default ``0``."""
MLFLOW_EXPERIMENT_NAME: Final = "MLFLOW_EXPERIMENT_NAME"
"""The MLflow experiment ``otel-eval run --from mlflow`` reads, by name. Default: ``MLFLOW_EXPERIMENT_ID``."""
LANGFUSE_BASE_URL: Final = "LANGFUSE_BASE_URL"
"""Langfuse's base URL (``LANGFUSE_HOST``, its older name, too). Default ``https://cloud.langfuse.com``."""
LANGFUSE_HOST: Final = "LANGFUSE_HOST"
"""Langfuse's base URL, older name of ``LANGFUSE_BASE_URL``."""
LANGFUSE_PUBLIC_KEY: Final = "LANGFUSE_PUBLIC_KEY"
"""Langfuse public key (basic-auth user). Required by the ``langfuse`` sink."""
LANGFUSE_SECRET_KEY: Final = "LANGFUSE_SECRET_KEY"
"""Langfuse secret key (basic-auth password). Required by the ``langfuse`` sink."""
