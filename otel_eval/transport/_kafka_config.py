"""Kafka connection settings shared by the exporter and the worker: TLS and SASL passed through to aiokafka.

Passwords are held as :class:`pydantic.SecretStr`, so ``repr()`` and ``str()`` never show them, and
:meth:`KafkaSecurity.redact` scrubs them from any text (exception messages) before it is logged or raised.
"""

from __future__ import annotations

import importlib.util
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import SecretStr

from otel_eval import environment_variables as env_vars
from otel_eval._runtime.urls import redact_url
from otel_eval.errors import ConfigurationError

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
COMPRESSION_TYPES: Final = ("none", "gzip", "snappy", "lz4", "zstd")
_CRAMJAM_CODECS: Final = ("snappy", "lz4", "zstd")
REDACTED: Final = "***"


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """TLS and SASL settings for an aiokafka client.

    Args:
        security_protocol: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``.
        sasl_mechanism: ``PLAIN``, ``SCRAM-SHA-256`` or ``SCRAM-SHA-512`` (SASL protocols only).
        sasl_username: SASL user name.
        sasl_password: SASL password; never shown by ``repr()``, logs or errors.
        ssl_cafile: CA bundle to verify the brokers (default: the system's).
        ssl_certfile: client certificate for mutual TLS.
        ssl_keyfile: client key for mutual TLS.
        ssl_key_password: password of ``ssl_keyfile``.

    Raises:
        ConfigurationError: an unknown protocol or mechanism, or SASL without user name and password.
    """

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: SecretStr | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        protocol = self.security_protocol.upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigurationError(
                f"Kafka security_protocol ({env_vars.OTEL_EVAL_KAFKA_SECURITY_PROTOCOL}) {self.security_protocol!r}: "
                f"expected one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        object.__setattr__(self, "security_protocol", protocol)
        if not self.uses_sasl:
            return
        mechanism = (self.sasl_mechanism or "PLAIN").upper()
        if mechanism not in SASL_MECHANISMS:
            raise ConfigurationError(
                f"Kafka sasl_mechanism ({env_vars.OTEL_EVAL_KAFKA_SASL_MECHANISM}) {self.sasl_mechanism!r}: "
                f"expected one of {', '.join(SASL_MECHANISMS)}"
            )
        object.__setattr__(self, "sasl_mechanism", mechanism)
        if not self.sasl_username or self.sasl_password is None or not self.sasl_password.get_secret_value():
            raise ConfigurationError(
                f"Kafka security_protocol {protocol} needs sasl_username and sasl_password "
                f"({env_vars.OTEL_EVAL_KAFKA_SASL_USERNAME}, {env_vars.OTEL_EVAL_KAFKA_SASL_PASSWORD})"
            )

    @property
    def uses_sasl(self) -> bool:
        """Whether the protocol authenticates with SASL."""
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        """Whether the protocol encrypts with TLS."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for the brokers, or None for plaintext protocols.

        Raises:
            ConfigurationError: a certificate or key file that cannot be loaded (the message names the file).
        """
        if not self.uses_tls:
            return None
        from aiokafka.helpers import create_ssl_context

        key_password = self.ssl_key_password.get_secret_value() if self.ssl_key_password else None
        try:
            context: ssl.SSLContext = create_ssl_context(
                cafile=self.ssl_cafile, certfile=self.ssl_certfile, keyfile=self.ssl_keyfile, password=key_password
            )
        except (OSError, ssl.SSLError) as exc:
            files = ", ".join(
                f"{name}={path!r}"
                for name, path in (
                    (env_vars.OTEL_EVAL_KAFKA_SSL_CAFILE, self.ssl_cafile),
                    (env_vars.OTEL_EVAL_KAFKA_SSL_CERTFILE, self.ssl_certfile),
                    (env_vars.OTEL_EVAL_KAFKA_SSL_KEYFILE, self.ssl_keyfile),
                )
                if path
            )
            raise ConfigurationError(f"Kafka TLS files ({files}) cannot be loaded: {self.redact(str(exc))}") from None
        return context

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``AIOKafkaProducer``/``AIOKafkaConsumer``/``AIOKafkaAdminClient``."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        context = self.ssl_context()
        if context is not None:
            kwargs["ssl_context"] = context
        if self.uses_sasl:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = self.sasl_password.get_secret_value() if self.sasl_password else None
        return kwargs

    def redact(self, text: str) -> str:
        """``text`` with every password replaced by ``***``."""
        for secret in (self.sasl_password, self.ssl_key_password):
            value = secret.get_secret_value() if secret is not None else ""
            if value:
                text = text.replace(value, REDACTED)
        return text

    def describe_error(self, exc: BaseException) -> str:
        """``repr(exc)`` with passwords redacted: the only form in which client errors are logged."""
        return self.redact(repr(exc))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KafkaSecurity:
        """Settings from the ``OTEL_EVAL_KAFKA_SECURITY_PROTOCOL``/``_SASL_*``/``_SSL_*`` environment variables."""
        environ = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = environ.get(name, "").strip()
            return value or None

        password = get(env_vars.OTEL_EVAL_KAFKA_SASL_PASSWORD)
        key_password = get(env_vars.OTEL_EVAL_KAFKA_SSL_KEY_PASSWORD)
        return cls(
            security_protocol=get(env_vars.OTEL_EVAL_KAFKA_SECURITY_PROTOCOL) or "PLAINTEXT",
            sasl_mechanism=get(env_vars.OTEL_EVAL_KAFKA_SASL_MECHANISM),
            sasl_username=get(env_vars.OTEL_EVAL_KAFKA_SASL_USERNAME),
            sasl_password=SecretStr(password) if password else None,
            ssl_cafile=get(env_vars.OTEL_EVAL_KAFKA_SSL_CAFILE),
            ssl_certfile=get(env_vars.OTEL_EVAL_KAFKA_SSL_CERTFILE),
            ssl_keyfile=get(env_vars.OTEL_EVAL_KAFKA_SSL_KEYFILE),
            ssl_key_password=SecretStr(key_password) if key_password else None,
        )


def check_compression(compression: str) -> str | None:
    """The aiokafka ``compression_type`` for ``compression`` (None for ``none``).

    Raises:
        ConfigurationError: an unknown codec, or lz4/zstd/snappy without the ``cramjam`` package.
    """
    codec = compression.strip().lower() or "none"
    if codec not in COMPRESSION_TYPES:
        raise ConfigurationError(f"Kafka compression {compression!r}: expected one of {', '.join(COMPRESSION_TYPES)}")
    if codec in _CRAMJAM_CODECS and importlib.util.find_spec("cramjam") is None:
        raise ConfigurationError(
            f"Kafka compression {codec!r} needs the cramjam package: pip install 'aiokafka[{codec}]'"
        )
    return None if codec == "none" else codec


def split_servers(servers: str) -> list[str]:
    """``host:port`` entries of a comma-separated bootstrap list.

    Raises:
        ConfigurationError: an empty list, or an entry with user info (``user:password@host:port``: the message shows
            it without).
    """
    entries = [s.strip() for s in servers.split(",") if s.strip()]
    if not entries:
        raise ConfigurationError("Kafka bootstrap servers: empty (expected host:port[,host:port...])")
    for entry in entries:
        if "@" in entry:  # aiokafka would fail to resolve it, and say the whole entry, password included
            raise ConfigurationError(
                f"Kafka bootstrap servers: {redact_url(entry)!r} is written with credentials; expected host:port "
                f"(credentials go in {env_vars.OTEL_EVAL_KAFKA_SASL_USERNAME} and {env_vars.OTEL_EVAL_KAFKA_SASL_PASSWORD})"
            )
    return entries
