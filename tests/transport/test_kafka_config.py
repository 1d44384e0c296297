"""TLS/SASL settings pass through to aiokafka; passwords never show in repr, logs or errors."""

from __future__ import annotations

import asyncio
import logging
import ssl
import subprocess
from pathlib import Path

import pytest
from pydantic import SecretStr

from otel_eval.errors import ConfigurationError
from otel_eval.transport._kafka_config import KafkaSecurity, check_compression
from otel_eval.transport.kafka import KafkaInvocationExporter
from tests.transport._requests import request

PASSWORD = "pa55-Sup3r-S3cret"


def test_sasl_settings_pass_through_and_stay_hidden() -> None:
    security = KafkaSecurity(
        security_protocol="sasl_plaintext",
        sasl_mechanism="scram-sha-512",
        sasl_username="alice",
        sasl_password=SecretStr(PASSWORD),
    )
    kwargs = security.client_kwargs()
    assert kwargs == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": PASSWORD,
    }
    assert PASSWORD not in repr(security)
    assert PASSWORD not in str(security)
    assert security.redact(f"auth failed for alice:{PASSWORD}") == "auth failed for alice:***"
    assert PASSWORD not in security.describe_error(RuntimeError(f"bad password {PASSWORD}"))
    exporter = KafkaInvocationExporter("127.0.0.1:1", security=security)
    try:
        assert PASSWORD not in repr(exporter)
    finally:
        exporter.shutdown(200)


def test_settings_from_environment() -> None:
    security = KafkaSecurity.from_env(
        {
            "OTEL_EVAL_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "OTEL_EVAL_KAFKA_SASL_MECHANISM": "PLAIN",
            "OTEL_EVAL_KAFKA_SASL_USERNAME": "bob",
            "OTEL_EVAL_KAFKA_SASL_PASSWORD": PASSWORD,
        }
    )
    assert security.client_kwargs()["sasl_plain_username"] == "bob"
    assert security.sasl_password is not None and security.sasl_password.get_secret_value() == PASSWORD
    assert KafkaSecurity.from_env({}).client_kwargs() == {"security_protocol": "PLAINTEXT"}


def test_tls_context_is_built_from_the_files(tmp_path: Path) -> None:
    key, cert = tmp_path / "client.key", tmp_path / "client.crt"
    request_args = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=otel-eval-test"]
    subprocess.run(
        ["openssl", *request_args, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    security = KafkaSecurity(
        security_protocol="SSL", ssl_cafile=str(cert), ssl_certfile=str(cert), ssl_keyfile=str(key)
    )
    kwargs = security.client_kwargs()
    assert kwargs["security_protocol"] == "SSL"
    context = kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_bad_settings_are_reported_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"security_protocol \(OTEL_EVAL_KAFKA_SECURITY_PROTOCOL\) .TLS."):
        KafkaSecurity(security_protocol="TLS")
    with pytest.raises(ConfigurationError, match=r"sasl_mechanism \(OTEL_EVAL_KAFKA_SASL_MECHANISM\) .GSSAPI."):
        KafkaSecurity(
            security_protocol="SASL_SSL", sasl_mechanism="GSSAPI", sasl_username="a", sasl_password=SecretStr("b")
        )
    with pytest.raises(ConfigurationError, match="needs sasl_username and sasl_password"):
        KafkaSecurity(security_protocol="SASL_PLAINTEXT", sasl_username="alice")
    missing = tmp_path / "missing.pem"
    with pytest.raises(ConfigurationError, match=r"missing\.pem"):
        KafkaSecurity(security_protocol="SSL", ssl_cafile=str(missing)).client_kwargs()
    with pytest.raises(ConfigurationError, match="compression 'brotli'"):
        check_compression("brotli")
    assert check_compression("gzip") == "gzip"
    assert check_compression("none") is None


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_failing_sasl_login_never_leaks_the_password(
    kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The test broker has no users: every SASL login fails, which the exporter logs and retries.
    caplog.set_level(logging.DEBUG)
    security = KafkaSecurity(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="mallory",
        sasl_password=SecretStr(PASSWORD),
    )
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic="sasl", security=security, request_timeout_ms=1_000)
    try:
        exporter.export([request(1)])
        assert not await asyncio.to_thread(exporter.force_flush, 1_500)
    finally:
        await asyncio.to_thread(exporter.shutdown, 500)
    assert caplog.records, "the failed login should have been logged"
    assert all(PASSWORD not in record.getMessage() for record in caplog.records)
    assert PASSWORD not in caplog.text
