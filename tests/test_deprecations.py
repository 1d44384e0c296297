"""Every deprecated old form still works for one minor version: it warns with a ``DeprecationWarning`` at the
caller's line, naming the form that replaces it and the version it goes away in, a version after the current one
that CHANGELOG.md gives for it too."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from otel_eval import EvaluationSpanProcessor
from otel_eval.evaluation.embedded import embedded_exporter
from otel_eval.judge.client import JudgeClient
from otel_eval.judge.settings import JudgeSettings
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.version import __version__
from otel_eval.worker.service import Worker
from tests.worker._harness import worker_settings

CHANGELOG = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text(encoding="utf-8")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _processor_keyword() -> None:
    EvaluationSpanProcessor(sample_rate=0.5).shutdown()


def _embedded_exporter() -> None:
    embedded_exporter(None, max_queue_size=3, sinks=[lambda records: None]).shutdown(1_000)


def _not_configured_reason() -> None:
    JudgeClient(JudgeSettings()).not_configured_reason = "switched off by the caller"


class _OldCore:
    async def evaluate(self, request: EvaluationRequest) -> list[EvaluationRecord]:
        return []


def _worker_core() -> None:
    Worker(worker_settings("127.0.0.1:9"), core=_OldCore())


# old form: (how to call it, what the warning names as its replacement, the CHANGELOG entry's words)
OLD_FORMS: dict[str, tuple[Callable[[], None], str, str]] = {
    "EvaluationSpanProcessor(sample_rate=...)": (
        _processor_keyword,
        "settings=ProcessorSettings(sample_rate=...)",
        "The settings as `EvaluationSpanProcessor` keywords",
    ),
    "embedded_exporter": (
        _embedded_exporter,
        "use embedded_worker",
        "`otel_eval.evaluation.embedded.embedded_exporter`",
    ),
    "JudgeClient.not_configured_reason = ...": (
        _not_configured_reason,
        "worked out from the settings",
        "`JudgeClient.not_configured_reason`",
    ),
    "Worker(core=<a RequestEvaluator>)": (
        _worker_core,
        "pass an otel_eval.evaluation.core.EvaluationCore",
        "`Worker(core=...)` given a core that is not an `EvaluationCore`",
    ),
}


@pytest.fixture(autouse=True)
def _no_default_judge(clean_genai_env: None) -> None:
    """No judge credentials (nothing here evaluates)."""


@pytest.mark.parametrize("form", sorted(OLD_FORMS))
def test_an_old_form_warns_at_its_caller_naming_its_replacement_and_a_later_version(form: str) -> None:
    call, replacement, _ = OLD_FORMS[form]
    with pytest.warns(DeprecationWarning) as caught:
        call()
    (warning,) = [w for w in caught.list if issubclass(w.category, DeprecationWarning)]
    message = str(warning.message)
    assert warning.filename == __file__, f"{form}: the warning points at {warning.filename}, not the caller"
    assert replacement in message
    removed_in = re.search(r"otel-eval (\d+\.\d+\.\d+)", message)
    assert removed_in is not None, f"{form}: the warning names no version: {message}"
    assert _version(removed_in.group(1)) > _version(__version__)


@pytest.mark.parametrize("form", sorted(OLD_FORMS))
def test_the_changelog_lists_each_old_form_as_deprecated_until_the_version_its_warning_names(form: str) -> None:
    call, _, entry = OLD_FORMS[form]
    with pytest.warns(DeprecationWarning) as caught:
        call()
    removed_in = re.search(r"otel-eval (\d+\.\d+\.\d+)", str(caught.list[0].message))
    assert removed_in is not None
    unreleased = CHANGELOG.split("\n## ")[1]
    assert unreleased.startswith("Unreleased")
    start = unreleased.find(entry)
    assert start >= 0, f"CHANGELOG.md's Unreleased section does not name {entry}"
    paragraph = unreleased[start : unreleased.find("\n- ", start)]
    assert "DeprecationWarning" in paragraph and removed_in.group(1) in paragraph, paragraph
