"""The README documents every environment variable and every metric the code defines."""

from __future__ import annotations

from pathlib import Path

from otel_eval import environment_variables
from otel_eval.metrics import default_registry

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_environment_variable_is_documented() -> None:
    names = [value for name, value in vars(environment_variables).items() if name.startswith("OTEL_EVAL_")]
    assert names
    missing = [name for name in names if f"`{name}`" not in README]
    assert not missing, f"README.md does not document: {', '.join(missing)}"


def test_every_metric_is_in_the_metrics_reference() -> None:
    missing = [name for name in default_registry().names() if f"| `{name}` |" not in README]
    assert not missing, f"README.md metrics table lacks: {', '.join(missing)}"


def test_setup_is_the_two_commands() -> None:
    assert "make demo" in README and "make test" in README
