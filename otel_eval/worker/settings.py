"""``WorkerSettings``: every setting of the ``otel-eval worker`` service, from flags or ``OTEL_EVAL_*`` variables.

Field ``x`` is read from ``OTEL_EVAL_X`` (the names are listed in :mod:`otel_eval.environment_variables`). The
worker's own telemetry is configured by the standard ``OTEL_EXPORTER_OTLP_*`` / ``OTEL_SERVICE_NAME`` variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Any, Final, Literal, Union, get_args, get_origin

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from otel_eval._runtime.urls import redact_url
from otel_eval.emit.selection import emit_signals, emit_text
from otel_eval.environment_variables import (
    DEFAULT_CONCURRENCY,
    DEFAULT_EXPLANATIONS,
    DEFAULT_KAFKA_COMPRESSION,
    DEFAULT_KAFKA_REQUESTS_TOPIC,
    DEFAULT_KAFKA_RESULTS_TOPIC,
    DEFAULT_KAFKA_SESSIONS_TOPIC,
    DEFAULT_MAX_NUM_SAMPLES,
    DEFAULT_MAX_OPEN_SESSIONS,
    DEFAULT_MAX_OPEN_TRACES,
    DEFAULT_MAX_SESSION_BYTES,
    DEFAULT_MAX_SPANS_PER_TRACE,
    DEFAULT_MAX_TRACE_AGE,
    DEFAULT_REQUEST_CRITERIA,
    DEFAULT_REQUEST_MAX_OUTPUT_TOKENS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SESSION_MAX_TURNS,
    DEFAULT_TRACE_IDLE_TIMEOUT,
    EMIT_SIGNALS,
    ENV_PREFIX,
    shown_setting,
)
from otel_eval.errors import ConfigurationError
from otel_eval.evaluation.criteria import metric_names_setting
from otel_eval.evaluation.request_criteria import RequestCriteriaPolicy
from otel_eval.evaluation.sessions import SessionLimits
from otel_eval.transport import KafkaSecurity, check_compression, split_servers

SOURCE_REQUESTS: Final = "requests"
"""Consume :class:`~otel_eval.model.messages.EvaluationRequest` JSON from the requests topic."""
SOURCE_OTLP_SPANS: Final = "otlp_spans"
"""Consume OTLP protobuf spans the Collector's Kafka exporter writes (the Collector path)."""
SOURCE_OTLP_LOGS: Final = "otlp_logs"
"""OTLP protobuf log messages (GenAI content captured as events), joined to the ``otlp_spans`` traces by trace id."""
SOURCE_SESSIONS: Final = "sessions"
"""The sessions topic: the Collector path's rebuilt invocations keyed by session id, whose turns are held and whose
session windows are judged (their per-invocation metrics were scored where they were rebuilt)."""
SOURCES: Final = (SOURCE_REQUESTS, SOURCE_OTLP_SPANS, SOURCE_OTLP_LOGS, SOURCE_SESSIONS)

_TOPIC_FIELDS: Final[Mapping[str, str]] = {
    SOURCE_REQUESTS: "kafka_requests_topic",
    SOURCE_OTLP_SPANS: "kafka_spans_topic",
    SOURCE_OTLP_LOGS: "kafka_logs_topic",
    SOURCE_SESSIONS: "kafka_sessions_topic",
}
"""The setting naming each source's topic."""

TelemetryMode = Literal["otlp", "prometheus", "console", "none"]

ALL_INTERFACES: Final = "0.0.0.0"
LOOPBACK: Final = "127.0.0.1"
CONTAINER_MARKERS: tuple[str, ...] = ("/.dockerenv", "/run/.containerenv")
"""Files whose presence says the process runs in a container (Docker's, Podman's)."""


def in_container(environ: Mapping[str, str] | None = None, markers: Sequence[str] | None = None) -> bool:
    """Whether this process runs in a container: Kubernetes (``KUBERNETES_SERVICE_HOST`` in ``environ``), Docker or
    Podman (one of ``markers``, :data:`CONTAINER_MARKERS` by default, exists)."""
    environ = os.environ if environ is None else environ
    markers = CONTAINER_MARKERS if markers is None else markers
    return bool(environ.get("KUBERNETES_SERVICE_HOST")) or any(os.path.exists(p) for p in markers)


class WorkerSettings(BaseSettings):
    """Settings of one worker process. Constructor arguments win over environment variables.

    Raises:
        pydantic.ValidationError: a value of the wrong type or out of range (the CLI reports it as a usage error).
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    kafka_bootstrap_servers: str = Field(default="localhost:9092", description="host:port[,host:port...]")
    kafka_requests_topic: str = Field(default=DEFAULT_KAFKA_REQUESTS_TOPIC, description="Evaluation requests (JSON).")
    kafka_results_topic: str = Field(
        default=DEFAULT_KAFKA_RESULTS_TOPIC, description="Where each result is published; empty = do not publish."
    )
    kafka_spans_topic: str = Field(default="otlp_spans", description="OTLP spans from the Collector (otlp_proto).")
    kafka_logs_topic: str = Field(default="otlp_logs", description="OTLP logs from the Collector (otlp_proto).")
    kafka_sessions_topic: str = Field(
        default=DEFAULT_KAFKA_SESSIONS_TOPIC,
        description="Collector path: invocations re-keyed by session id for the sessions source; empty = not re-keyed.",
    )
    kafka_dead_letter_topic: str = Field(default="otel_eval.dead_letter", description="Messages that cannot be read.")
    kafka_group_id: str = Field(
        default="otel-eval-worker", min_length=1, description="Consumer group shared by all workers."
    )
    kafka_compression: str = Field(
        default=DEFAULT_KAFKA_COMPRESSION, description="Compression of the results and dead letters."
    )
    kafka_session_timeout_ms: int = Field(default=30_000, ge=6_000, description="Consumer-group session timeout.")
    kafka_max_poll_interval_ms: int | None = Field(
        default=None,
        ge=1_000,
        description="Longest a worker may go without polling before it leaves its group (None: 300000, or twice "
        "the shutdown timeout if longer).",
    )
    kafka_request_timeout_ms: int = Field(
        default=30_000, ge=1_000, description="Producer wait for the broker before a publish fails (batch retried)."
    )
    kafka_fetch_max_wait_ms: int = Field(
        default=20,
        ge=0,
        description="Longest the broker holds a fetch open waiting for new requests (latency; 500 for throughput).",
    )
    kafka_security_protocol: str = "PLAINTEXT"
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_cafile: str | None = None
    kafka_ssl_certfile: str | None = None
    kafka_ssl_keyfile: str | None = None
    kafka_ssl_key_password: SecretStr | None = None

    worker_sources: str = Field(
        default=SOURCE_REQUESTS,
        description="Comma-separated: requests, otlp_spans (the Collector path), otlp_logs (with otlp_spans), sessions "
        "(the Collector path's sessions topic).",
    )
    worker_concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1, description="Invocations evaluated at once.")
    worker_max_batch_size: int = Field(default=64, ge=1, description="Records per fetched batch (one commit each).")
    worker_shutdown_timeout: float = Field(default=30.0, ge=0, description="Seconds to drain on SIGTERM.")
    worker_record_timeout: float = Field(
        default=30.0, gt=0, description="Seconds to decode or rebuild one record before it is dead-lettered."
    )
    worker_dedup_cache_size: int = Field(default=100_000, ge=0, description="Emitted result ids remembered.")
    worker_dedup_readback: int = Field(
        default=10_000, ge=0, description="Results per partition read back on assignment (0 = off)."
    )
    worker_telemetry: TelemetryMode = Field(
        default="otlp", description="otlp (OTEL_EXPORTER_OTLP_*), prometheus (/metrics), console, none."
    )
    worker_metrics_host: str | None = Field(
        default=None,
        description="Address of /healthz, /readyz and /metrics; unset = 0.0.0.0 in a container (probes and scrapes "
        "come from outside it), 127.0.0.1 elsewhere (the endpoints are unauthenticated).",
    )
    worker_metrics_port: int = Field(default=9464, ge=0, le=65535, description="Port of /healthz, /readyz, /metrics.")
    worker_flush_timeout: float = Field(default=10.0, gt=0, description="Seconds to export a batch's telemetry.")

    trace_idle_timeout: float = Field(
        default=DEFAULT_TRACE_IDLE_TIMEOUT,
        gt=0,
        description="Collector path: seconds after a trace's last span before it is evaluated.",
    )
    max_open_traces: int = Field(
        default=DEFAULT_MAX_OPEN_TRACES, ge=1, description="Collector path: traces assembled at once."
    )
    max_spans_per_trace: int = Field(
        default=DEFAULT_MAX_SPANS_PER_TRACE, ge=1, description="Collector path: spans kept per trace."
    )
    max_trace_age: float = Field(
        default=DEFAULT_MAX_TRACE_AGE,
        gt=0,
        description="Collector path: seconds from a trace's first span start to its last span end after which it is "
        "evaluated as it is (its later spans dropped).",
    )

    session_idle_timeout: float = Field(
        default=DEFAULT_SESSION_IDLE_TIMEOUT,
        gt=0,
        description="Seconds without a new turn after which a session's conversation-level metrics run.",
    )
    session_max_turns: int = Field(
        default=DEFAULT_SESSION_MAX_TURNS, ge=1, description="Turns after which a session is judged at once."
    )
    max_open_sessions: int = Field(default=DEFAULT_MAX_OPEN_SESSIONS, ge=1, description="Sessions held at once.")
    max_session_bytes: int = Field(
        default=DEFAULT_MAX_SESSION_BYTES, ge=1, description="Approximate bytes of turns held over all open sessions."
    )

    # --- tenancy (docs/security.md): whose traces and sessions a record's content is, and each one's share ---------
    tenant_header: str | None = Field(
        default=None,
        description="Kafka header naming a record's tenant (set by an authenticated Collector or a trusted producer); "
        "when set it alone decides (no header: the default tenant).",
    )
    tenant_attribute: str | None = Field(
        default=None,
        description="Collector path, without a tenant header: the resource attribute naming a span's tenant "
        "(e.g. tenant.id, service.namespace).",
    )
    max_open_traces_per_tenant: int | None = Field(
        default=None, ge=1, description="Collector path: traces one tenant may have open (unset: max_open_traces)."
    )
    max_open_sessions_per_tenant: int | None = Field(
        default=None, ge=1, description="Sessions one tenant may hold open (unset: max_open_sessions)."
    )

    criteria: str | None = Field(default=None, description="ADK EvalConfig/criteria JSON, or a path to such a file.")
    metrics: str = Field(
        default="",
        description="Comma-separated metrics to run on the requests scored with the worker's own criteria (each with "
        "its criterion from them, else its default; no efficiency metrics added); empty: the criteria plus those.",
    )
    request_criteria: bool = Field(
        default=DEFAULT_REQUEST_CRITERIA,
        description="Honour the criteria requests carry, within the allowlists (else they are refused and counted).",
    )
    request_metrics: str = Field(default="", description="Comma-separated metrics request criteria may name; * any.")
    request_judge_models: str = Field(default="", description="Comma-separated judge models request criteria may name.")
    request_max_output_tokens: int = Field(
        default=DEFAULT_REQUEST_MAX_OUTPUT_TOKENS, ge=1, description="Largest max_output_tokens request criteria set."
    )
    max_num_samples: int = Field(
        default=DEFAULT_MAX_NUM_SAMPLES, ge=1, description="Largest num_samples a request may ask for."
    )
    eval_set: str | None = Field(default=None, description="Path to an ADK eval set for online reference metrics.")

    _flags: dict[str, str] = PrivateAttr(default_factory=dict)

    # --- What the scores are emitted as (OTEL_EVAL_EMIT, --emit) ---
    emit: str = Field(
        default=",".join(EMIT_SIGNALS),
        description="Comma-separated signals the scores are emitted as: events, spans, metrics (attributes is "
        "accepted and has no root span to go on here), or none. The results topic and the sinks do not depend on it.",
    )

    @field_validator("emit")
    @classmethod
    def _check_emit(cls, value: str) -> str:
        return emit_text(emit_signals(value))  # the setting is named by settings_error: the flag or the variable

    @property
    def emit_signals(self) -> frozenset[str]:
        """The selected signals (:mod:`otel_eval.emit.selection`)."""
        return frozenset(self.emit.split(",")) & frozenset(EMIT_SIGNALS)

    explanations: bool = Field(
        default=DEFAULT_EXPLANATIONS,
        description="Results carry their explanation (false: on no event, span, sink or results-topic record).",
    )

    # --- end of the emit block ---

    @field_validator("metrics")
    @classmethod
    def _check_metrics(cls, value: str) -> str:
        return ",".join(metric_names_setting(value))  # the names are checked against the registry when the core starts

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics to run (:attr:`metrics`; empty: the criteria plus the efficiency metrics)."""
        return metric_names_setting(self.metrics)

    @field_validator("worker_sources")
    @classmethod
    def _check_sources(cls, value: str) -> str:
        sources = [s.strip().lower() for s in value.split(",") if s.strip()]
        unknown = [s for s in sources if s not in SOURCES]
        if not sources or unknown:
            raise ValueError(f"expected a comma-separated list of {', '.join(SOURCES)}")
        if SOURCE_OTLP_LOGS in sources and SOURCE_OTLP_SPANS not in sources:
            raise ValueError(f"{SOURCE_OTLP_LOGS} is joined to the traces of {SOURCE_OTLP_SPANS}: consume both")
        return ",".join(dict.fromkeys(sources))

    @field_validator("kafka_bootstrap_servers", "kafka_compression")
    @classmethod
    def _check_kafka(cls, value: str, info: ValidationInfo) -> str:
        check = split_servers if info.field_name == "kafka_bootstrap_servers" else check_compression
        try:
            check(value)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_default(cls, value: object, info: ValidationInfo) -> object:
        """A blank flag or number means its default (as OpenTelemetry's SDK reads an empty variable, and as the
        processor and ``otel-eval run`` read these); a blank string setting keeps its own meaning."""
        name = info.field_name
        if isinstance(value, str) and not value.strip() and name is not None and _scalar_kind(name) is not None:
            return cls.model_fields[name].get_default(call_default_factory=True)
        return value

    @property
    def sources(self) -> tuple[str, ...]:
        """The configured sources, in order."""
        return tuple(self.worker_sources.split(","))

    @property
    def topics(self) -> dict[str, str]:
        """Topic -> source kind, for every consumed topic."""
        return {getattr(self, _TOPIC_FIELDS[source]): source for source in self.sources}

    def check_topics(self) -> None:
        """Every consumed source has a topic: an empty one would be subscribed to and never be assigned.

        Raises:
            ConfigurationError: naming the source setting and the empty topic setting, as the user gave them.
        """
        for source in self.sources:
            field = _TOPIC_FIELDS[source]
            if not getattr(self, field).strip():
                sources = shown_setting(self.setting_name("worker_sources"), self.worker_sources)
                topic = shown_setting(self.setting_name(field), getattr(self, field))
                raise ConfigurationError(f"{sources} consumes {source}, but {topic} is empty: name its topic")

    @property
    def session_limits(self) -> SessionLimits:
        """When open sessions are judged, and how many are held (the embedded worker's settings)."""
        return SessionLimits(
            idle_timeout=self.session_idle_timeout,
            max_turns=self.session_max_turns,
            max_sessions=self.max_open_sessions,
            max_bytes=self.max_session_bytes,
            max_sessions_per_tenant=self.max_open_sessions_per_tenant,
        )

    @property
    def request_policy(self) -> RequestCriteriaPolicy:
        """Which criteria carried by requests are honoured (off by default)."""
        return RequestCriteriaPolicy.create(
            honour=self.request_criteria,
            metrics=self.request_metrics,
            judge_models=self.request_judge_models,
            max_num_samples=self.max_num_samples,
            max_output_tokens=self.request_max_output_tokens,
        )

    @property
    def metrics_host(self) -> str:
        """The address the HTTP endpoints listen on: :attr:`worker_metrics_host`, else 0.0.0.0 in a container and
        127.0.0.1 outside one."""
        if self.worker_metrics_host:
            return self.worker_metrics_host
        return ALL_INTERFACES if in_container() else LOOPBACK

    @classmethod
    def from_flags(cls, flags: Mapping[str, tuple[str, Any]]) -> WorkerSettings:
        """Settings with ``flags`` (field -> the command-line flag and the value it was given) over the environment;
        start-up errors about them name the flag (:meth:`setting_name`).

        Raises:
            pydantic.ValidationError: as the constructor (:func:`settings_error` words it for the user).
            ConfigurationError: a consumed source without a topic (:meth:`check_topics`).
        """
        settings = cls(**{field: value for field, (_, value) in flags.items()})
        settings._flags = {field: flag for field, (flag, _) in flags.items()}
        settings.check_topics()
        return settings

    def setting_name(self, field: str) -> str:
        """What an error calls ``field``: the flag it was given by (:meth:`from_flags`), else its variable."""
        return self._flags.get(field) or ENV_PREFIX + field.upper()

    @property
    def servers(self) -> list[str]:
        """The bootstrap servers as a list."""
        return split_servers(self.kafka_bootstrap_servers)

    def security(self) -> KafkaSecurity:
        """TLS/SASL settings for the aiokafka clients.

        Raises:
            ConfigurationError: inconsistent security settings.
        """
        return KafkaSecurity(
            security_protocol=self.kafka_security_protocol,
            sasl_mechanism=self.kafka_sasl_mechanism,
            sasl_username=self.kafka_sasl_username,
            sasl_password=self.kafka_sasl_password,
            ssl_cafile=self.kafka_ssl_cafile,
            ssl_certfile=self.kafka_ssl_certfile,
            ssl_keyfile=self.kafka_ssl_keyfile,
            ssl_key_password=self.kafka_ssl_key_password,
        )


_KINDS: Final[Mapping[object, str]] = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
_BOUNDS: Final = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def settings_error(error: ValidationError, flags: Mapping[str, tuple[str, object]]) -> str:
    """The first problem of ``error`` (raised by :class:`WorkerSettings`) as one line naming the setting as the user
    gave it: ``--flag value`` for a field in ``flags`` (field -> the flag and the value it was given), else
    ``OTEL_EVAL_FIELD='value'``; then what is expected."""
    problem = error.errors()[0]
    field = str(problem["loc"][0]) if problem["loc"] else ""
    if field in flags:
        setting, value = flags[field]
    else:
        setting = ENV_PREFIX + field.upper()
        value = os.environ.get(setting, problem.get("input"))
    info = WorkerSettings.model_fields.get(field)
    if info is not None and SecretStr in (info.annotation, *get_args(info.annotation)):
        value = "***"
    elif isinstance(value, str) and "@" in value:  # user:password@host (the bootstrap servers refuse it)
        value = ",".join(redact_url(entry) if "@" in entry else entry for entry in value.split(","))
    shown = shown_setting(setting, value)
    ctx = problem.get("ctx") or {}
    if problem["type"] == "value_error" and "error" in ctx:
        return f"{shown}: {ctx['error']}"  # a validator's own words
    if problem["type"] == "string_too_short":
        return f"{shown}: empty (expected a name)"
    return f"{shown}: expected {_expected(field)}"


def _kind(field: str) -> Any:
    """The type of ``field`` without ``| None`` (None for a union of several types or an unknown field)."""
    info = WorkerSettings.model_fields.get(field)
    if info is None:
        return None
    annotation = info.annotation
    union = get_origin(annotation) in (Union, UnionType)
    kinds = [kind for kind in get_args(annotation) if kind is not type(None)] if union else [annotation]
    return kinds[0] if len(kinds) == 1 else None


def _scalar_kind(field: str) -> type | None:
    """``bool``, ``int`` or ``float`` for a field of that type (optional or not), else None."""
    kind = _kind(field)
    return kind if kind in (bool, int, float) else None


def _expected(field: str) -> str:
    """What ``field`` takes, from its type and bounds (``an integer >= 1``, ``one of otlp, prometheus, ...``)."""
    info = WorkerSettings.model_fields.get(field)
    if info is None:
        return "a valid value"
    kind = _kind(field)
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(map(str, get_args(kind)))
    bounds = [f"{sign} {getattr(m, name)}" for m in info.metadata for name, sign in _BOUNDS if hasattr(m, name)]
    return " ".join([_KINDS.get(kind, "a valid value"), " and ".join(bounds)]).strip()
