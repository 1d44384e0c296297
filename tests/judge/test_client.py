"""The judge client over real HTTP (google-genai -> loopback server): retries, timeouts, auth, limit, cache, costs."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import pytest

from otel_eval.errors import ConfigurationError, JudgeError
from otel_eval.judge import (
    JUDGE_AUTH,
    JUDGE_BAD_RESPONSE,
    JUDGE_NOT_CONFIGURED,
    JUDGE_QUOTA_EXHAUSTED,
    JUDGE_RATE_LIMITED,
    JUDGE_SERVER_ERROR,
    JUDGE_TIMEOUT,
    JudgeClient,
    JudgeRequest,
    JudgeSettings,
    PriceTable,
)
from otel_eval.judge.retry import Backoff, parse_retry_after
from tests.judge.fake_gemini import (
    FakeGemini,
    Reply,
    error_reply,
    hang_reply,
    malformed_reply,
    sequence,
    text_reply,
)
from tests.judge.helpers import TEST_KEY, make_judge

MODEL = "gemini-2.5-flash"


def request(prompt: str = "judge this") -> JudgeRequest:
    return JudgeRequest(model=MODEL, prompt=prompt, system_instruction="be a judge")


async def test_request_reaches_server_with_genai_wire_format(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("verdict", prompt_tokens=7, output_tokens=3))
    judge = make_judge(fake_gemini)
    reply = await judge.generate(request(), metric="m")
    assert reply.text == "verdict" and not reply.cached
    [sent] = fake_gemini.requests
    assert sent.path.endswith(f"/models/{MODEL}:generateContent")
    assert sent.headers["x-goog-api-key"] == TEST_KEY
    assert sent.prompt == "judge this" and sent.system_instruction == "be a judge"
    usage = judge.accounting.by_metric()["m"]
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (1, 7, 3)


async def test_genai_environment_configuration_is_used_unchanged(
    fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", TEST_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.set_responder(lambda model, body: "ok")
    judge = JudgeClient(JudgeSettings(timeout_seconds=2))
    assert judge.configured
    assert (await judge.generate(request(), metric="m")).text == "ok"
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == TEST_KEY


async def test_retries_429_and_5xx_then_succeeds(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(sequence([error_reply(429, retry_after=0.01), error_reply(503), text_reply("fine")]))
    judge = make_judge(fake_gemini, max_attempts=5)
    reply = await judge.generate(request(), metric="m")
    assert reply.text == "fine"
    assert len(fake_gemini.requests) == 3
    usage = judge.accounting.by_metric()["m"]
    assert (usage.calls, usage.retries, usage.failures) == (3, 2, 0)


@pytest.mark.parametrize(
    ("reply", "error_type"), [(error_reply(500), JUDGE_SERVER_ERROR), (error_reply(429), JUDGE_RATE_LIMITED)]
)
async def test_retries_exhausted_raise_with_error_type(fake_gemini: FakeGemini, reply: Reply, error_type: str) -> None:
    fake_gemini.set_responder(lambda model, body: reply)
    judge = make_judge(fake_gemini, max_attempts=3)
    with pytest.raises(JudgeError) as caught:
        await judge.generate(request(), metric="m")
    assert caught.value.error_type == error_type
    assert len(fake_gemini.requests) == 3
    assert judge.accounting.by_metric()["m"].failures == 1


async def test_hanging_judge_times_out(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: hang_reply())
    judge = make_judge(
        fake_gemini, timeout_seconds=1.0, max_attempts=2
    )  # each attempt reaches the server, however loaded
    with pytest.raises(JudgeError) as caught:
        await judge.generate(request(), metric="m")
    assert caught.value.error_type == JUDGE_TIMEOUT
    assert len(fake_gemini.requests) == 2


async def test_malformed_body_is_not_retried(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: malformed_reply())
    judge = make_judge(fake_gemini)
    with pytest.raises(JudgeError) as caught:
        await judge.generate(request(), metric="m")
    assert caught.value.error_type == JUDGE_BAD_RESPONSE
    assert len(fake_gemini.requests) == 1


async def test_401_fails_fast_and_is_reported_once(fake_gemini: FakeGemini, caplog: pytest.LogCaptureFixture) -> None:
    fake_gemini.set_responder(lambda model, body: error_reply(401, f"API key {TEST_KEY} is not valid"))
    judge = make_judge(fake_gemini)
    errors = []
    with caplog.at_level(logging.DEBUG):
        for index in range(4):
            with pytest.raises(JudgeError) as caught:
                await judge.generate(request(f"item {index}"), metric="m")
            errors.append(caught.value)
    assert len(fake_gemini.requests) == 1, "no retry, and no call once the credentials were rejected"
    assert {e.error_type for e in errors} == {JUDGE_AUTH}
    assert len(judge.accounting.fatal_errors) == 1
    error_logs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(error_logs) == 1
    assert TEST_KEY not in caplog.text and all(TEST_KEY not in str(e) for e in errors)
    assert TEST_KEY not in judge.summary_line()
    assert judge.accounting.by_metric()["m"].failures == 4


async def test_credentials_of_a_url_in_a_judge_error_are_redacted(fake_gemini: FakeGemini) -> None:
    # a gateway that echoes its upstream's URL, credentials and all, in its error body
    echoed = (
        "upstream https://proxy-user:proxy-pw@llm.internal/v1?key=q-secret refused the call "
        "(signed https://blob.internal/reply?alt=json&sig=s-secret&token=t-secret)"
    )
    fake_gemini.set_responder(lambda model, body: error_reply(400, echoed))
    judge = make_judge(fake_gemini, max_attempts=1)
    with pytest.raises(JudgeError) as caught:
        await judge.generate(request(), metric="m")
    message = str(caught.value)
    assert "https://***@llm.internal/v1" in message
    assert "proxy-pw" not in message and "proxy-user" not in message and "q-secret" not in message
    assert "https://blob.internal/reply?***" in message and "s-secret" not in message and "t-secret" not in message


async def test_exhausted_quota_fails_fast(fake_gemini: FakeGemini) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "RequestsPerDay"}]}]
    fake_gemini.set_responder(lambda model, body: error_reply(429, "You exceeded your quota", details=details))
    judge = make_judge(fake_gemini)
    for _ in range(2):
        with pytest.raises(JudgeError) as caught:
            await judge.generate(request(), metric="m")
        assert caught.value.error_type == JUDGE_QUOTA_EXHAUSTED
    assert len(fake_gemini.requests) == 1


async def test_rate_limit_with_retry_info_is_retried(fake_gemini: FakeGemini) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0s"}]
    fake_gemini.set_responder(sequence([error_reply(429, "exceeded your current quota", details=details), "ok"]))
    judge = make_judge(fake_gemini)
    assert (await judge.generate(request(), metric="m")).text == "ok"
    assert len(fake_gemini.requests) == 2


async def test_concurrency_never_exceeds_limit(fake_gemini: FakeGemini) -> None:
    fake_gemini.latency = 0.05
    fake_gemini.set_responder(lambda model, body: "ok")
    judge = make_judge(fake_gemini, max_concurrency=3)
    await asyncio.gather(*(judge.generate(request(f"p{i}"), metric="m") for i in range(15)))
    assert len(fake_gemini.requests) == 15
    assert fake_gemini.max_in_flight == 3
    assert judge.max_in_flight == 3


async def test_identical_request_is_served_from_cache(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: "cached verdict")
    judge = make_judge(fake_gemini)
    first = await judge.generate(request(), metric="m")
    second = await judge.generate(request(), metric="m")
    other_sample = await judge.generate(request(), metric="m", sample=1)
    assert (first.cached, second.cached, other_sample.cached) == (False, True, False)
    assert second.text == "cached verdict"
    assert len(fake_gemini.requests) == 2, "sample 1 is a distinct call; the repeat of sample 0 is not"
    assert judge.accounting.by_metric()["m"].cache_hits == 1


async def test_concurrent_identical_requests_share_one_call(fake_gemini: FakeGemini) -> None:
    fake_gemini.latency = 0.05
    fake_gemini.set_responder(lambda model, body: "shared")
    judge = make_judge(fake_gemini)
    replies = await asyncio.gather(*(judge.generate(request(), metric="m") for _ in range(5)))
    assert [r.text for r in replies] == ["shared"] * 5
    assert len(fake_gemini.requests) == 1


async def test_failures_are_not_cached(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(sequence([error_reply(400, "bad"), "ok"]))
    judge = make_judge(fake_gemini)
    with pytest.raises(JudgeError):
        await judge.generate(request(), metric="m")
    assert (await judge.generate(request(), metric="m")).text == "ok"


async def test_not_configured_makes_no_call(fake_gemini: FakeGemini) -> None:
    judge = JudgeClient(JudgeSettings(base_url=fake_gemini.base_url))
    assert not judge.configured
    assert "GOOGLE_API_KEY" in (judge.not_configured_reason or "")
    with pytest.raises(JudgeError) as caught:
        await judge.generate(request(), metric="m")
    assert caught.value.error_type == JUDGE_NOT_CONFIGURED
    assert fake_gemini.requests == []


def test_the_not_configured_reason_names_every_providers_variables_and_no_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-gemini-judge")  # another provider's key: names only
    reason = JudgeClient(JudgeSettings()).not_configured_reason or ""
    for variable in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "OTEL_EVAL_JUDGE_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GOOGLE_CLOUD_PROJECT",
        "ANTHROPIC_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "OLLAMA_API_BASE",
        "OTEL_EVAL_JUDGE_BASE_URL",
        "OTEL_EVAL_JUDGE_API_KEY",
    ):
        assert variable in reason, variable
    assert "sk-not-for-the-gemini-judge" not in reason


def test_vertex_without_project_is_not_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    assert not JudgeClient(JudgeSettings()).configured
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    assert JudgeClient(JudgeSettings()).configured


async def test_cost_from_price_table(fake_gemini: FakeGemini) -> None:
    fake_gemini.set_responder(lambda model, body: text_reply("x", prompt_tokens=1_000_000, output_tokens=500_000))
    prices = PriceTable.parse('{"gemini-2.5-flash": {"input": 1.0, "output": 4.0}, "m2": {"input": 0, "output": 0}}')
    judge = make_judge(fake_gemini, prices=prices)
    await judge.generate(request(), metric="m")
    await judge.generate(JudgeRequest(model="unknown-model", prompt="y"), metric="m")
    usage = judge.accounting.by_metric()["m"]
    assert usage.cost_usd == pytest.approx(3.0)
    assert usage.unpriced_calls == 1
    assert "$3.0000" in judge.summary_line() and "unpriced" in judge.summary_line()


def test_price_table_errors_name_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_JUDGE_PRICES"):
        PriceTable.parse('{"m": {"input": "cheap"}}')
    with pytest.raises(ConfigurationError, match="invalid JSON"):
        PriceTable.parse("{nope")


def test_settings_from_env() -> None:
    settings = JudgeSettings.from_env(
        {
            "OTEL_EVAL_JUDGE_MODEL": "gemini-2.5-pro",
            "OTEL_EVAL_JUDGE_NUM_SAMPLES": "3",
            "OTEL_EVAL_JUDGE_MAX_CONCURRENCY": "4",
            "OTEL_EVAL_JUDGE_TIMEOUT": "1.5",
            "OTEL_EVAL_JUDGE_MAX_ATTEMPTS": "2",
        },
        max_concurrency=9,
    )
    assert (settings.default_model, settings.num_samples, settings.max_concurrency) == ("gemini-2.5-pro", 3, 9)
    assert (settings.timeout_seconds, settings.max_attempts) == (1.5, 2)
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_JUDGE_TIMEOUT"):
        JudgeSettings.from_env({"OTEL_EVAL_JUDGE_TIMEOUT": "soon"})
    assert "api_key" not in repr(JudgeSettings(api_key=TEST_KEY)) or TEST_KEY not in repr(
        JudgeSettings(api_key=TEST_KEY)
    )
    assert "pw123" not in repr(JudgeSettings(base_url="http://admin:pw123@judge.internal:8080/v1"))


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("OTEL_EVAL_JUDGE_NUM_SAMPLES", "0", "an integer >= 1"),
        ("OTEL_EVAL_JUDGE_MAX_CONCURRENCY", "many", "an integer >= 1"),
        ("OTEL_EVAL_JUDGE_MAX_ATTEMPTS", "2.5", "an integer >= 1"),
        ("OTEL_EVAL_JUDGE_TIMEOUT", "-1", "seconds > 0"),
    ],
)
def test_a_bad_judge_number_names_the_variable_the_value_and_the_range(
    variable: str, value: str, expected: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        JudgeSettings.from_env({variable: value})
    assert str(caught.value) == f"{variable}={value!r}: expected {expected}"


@pytest.mark.parametrize("bad", ["lots", "0", "1023", "-5"])
def test_a_bad_max_reply_chars_stops_the_settings_naming_it(bad: str) -> None:
    # Validated where the other judge settings are read, not first when a judge reply is checked.
    with pytest.raises(ConfigurationError, match="OTEL_EVAL_JUDGE_MAX_REPLY_CHARS"):
        JudgeSettings.from_env({"OTEL_EVAL_JUDGE_MAX_REPLY_CHARS": bad})
    assert JudgeSettings.from_env({"OTEL_EVAL_JUDGE_MAX_REPLY_CHARS": "1024"}).default_model


def test_backoff_honours_retry_after_and_is_bounded() -> None:
    backoff = Backoff(initial_seconds=0.5, max_seconds=2.0)
    assert all(backoff.delay(1, retry_after=3.0) >= 3.0 for _ in range(20))
    assert all(0 <= backoff.delay(10) <= 2.0 for _ in range(50))
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("not a date") is None


def test_connections_close_with_the_event_loop_that_opened_them(fake_gemini: FakeGemini) -> None:
    """One judge used on two event loops in turn (as the CLI, the embedded engine and the Kafka worker each run
    their own): each loop's connections are closed when ``asyncio.run`` ends it; none is left to the collector."""
    fake_gemini.set_responder(lambda model, body: "ok")
    judge = make_judge(fake_gemini, cache_size=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for prompt in ("first loop", "second loop"):
            assert asyncio.run(judge.generate(request(prompt), metric="m")).text == "ok"
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert len(fake_gemini.requests) == 2


def test_setting_not_configured_reason_still_works_with_a_deprecation_warning(fake_gemini: FakeGemini) -> None:
    """``not_configured_reason`` became a property (worked out on first read); the attribute's old form still sets it."""
    judge = make_judge(fake_gemini)
    assert judge.configured
    with pytest.warns(DeprecationWarning, match="not_configured_reason"):
        judge.not_configured_reason = "judge not configured: switched off by the caller"
    assert not judge.configured and judge.not_configured_reason == "judge not configured: switched off by the caller"


def test_the_client_read_at_start_up_serves_the_first_loop_and_each_later_loop_gets_its_own(
    fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judged metric reads the judge's configuration when it is made (``uses_vertex``, from a google-genai client
    that opens no connection); that client then serves the first loop's calls instead of a second one being made
    (each loads its own TLS trust store: about a tenth of a CPU-second of an evaluation process's start)."""
    from google import genai

    made: list[genai.Client] = []

    class CountingClient(genai.Client):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(genai, "Client", CountingClient)
    fake_gemini.set_responder(lambda model, body: text_reply("ok"))
    judge = make_judge(fake_gemini)
    assert not judge.uses_vertex and len(made) == 1
    assert asyncio.run(judge.generate(request("first loop"), metric="m")).text == "ok"
    assert len(made) == 1
    assert asyncio.run(judge.generate(request("second loop"), metric="m")).text == "ok"
    assert len(made) == 2
    assert not judge.uses_vertex and len(fake_gemini.requests) == 2
