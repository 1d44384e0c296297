"""``criteria_setting`` and ``eval_set_setting``: the criteria/eval-set settings shared by the processor and worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_eval.errors import ConfigurationError, InputError
from otel_eval.evaluation import criteria_from
from otel_eval.model.loading import criteria_setting, eval_set_setting, load_eval_set

EVAL_SET = Path(__file__).resolve().parents[1] / "data" / "evalsets" / "eval_set_helm.json"


def test_criteria_from_json_object_config_or_file(tmp_path: Path) -> None:
    criteria = {"tool_trajectory_avg_score": 1.0}
    assert criteria_setting(json.dumps(criteria), setting="S") == criteria
    assert criteria_setting(json.dumps({"criteria": criteria}), setting="S") == criteria
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"criteria": criteria}))
    assert criteria_setting(str(path), setting="S") == criteria
    assert criteria_setting("  ", setting="S") is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"criteria": ', "S: invalid JSON at line 1"),
        ('{"criteria": [1]}', "S: 'criteria' must be an object"),
        ("/no/such/config.json", "S file /no/such/config.json: cannot read"),
        ('{"userSimulatorConfig": {"type": "bogus"}}', "S: invalid eval config: user_simulator_config: Input tag"),
        ('{"user_simulator_config": {"max_allowed_invocations": "many"}}', "S: invalid eval config: user_simulator"),
        ('{"critera": {"safety_v1": 0.5}}', "S: unknown key 'critera' (did you mean 'criteria'?); an eval config has"),
        ('{"criteria": {"safety_v1": 0.5}, "extra": 1}', "S: unknown key 'extra'; an eval config has criteria"),
        ('{"eval_set_id": "s", "eval_cases": []}', "S: this is an ADK eval set, not an eval config"),
        ('{"resourceSpans": []}', "S: this is a trace file, not an eval config"),
    ],
)
def test_bad_criteria_name_the_setting_and_the_problem(raw: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        criteria_setting(raw, setting="S")
    assert str(raised.value).startswith(message)


def test_a_misspelled_config_file_names_the_setting_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"critera": {"tool_trajectory_avg_score": 1.0}}))
    with pytest.raises(ConfigurationError) as raised:
        criteria_setting(str(path), setting="OTEL_EVAL_CRITERIA")
    assert str(raised.value) == (
        f"OTEL_EVAL_CRITERIA file {path}: unknown key 'critera' (did you mean 'criteria'?); an eval config has "
        "criteria, custom_metrics, user_simulator_config, live_model_config"
    )
    with pytest.raises(ConfigurationError, match=r"^OTEL_EVAL_CRITERIA file .*eval_set_helm\.json: this is an ADK"):
        criteria_setting(str(EVAL_SET), setting="OTEL_EVAL_CRITERIA")


def test_a_criteria_object_in_code_is_refused_by_the_same_rule() -> None:
    with pytest.raises(ConfigurationError) as raised:
        criteria_from({"critera": {"safety_v1": 0.5}})
    assert str(raised.value).startswith("criteria: unknown key 'critera' (did you mean 'criteria'?)")
    parsed = criteria_from({"criterion": 0.5})  # a custom metric's name, not a misspelled "criteria"
    assert parsed is not None and parsed["criterion"].threshold == 0.5


def test_an_eval_config_without_criteria_has_none_as_in_adk() -> None:
    assert criteria_setting("{}", setting="S") == {}
    assert criteria_setting('{"userSimulatorConfig": {"maxAllowedInvocations": 3}}', setting="S") == {}
    custom = {"m": {"codeConfig": {"name": "pkg.m"}}}
    config = {"criteria": {"m": 0.5}, "customMetrics": custom}
    assert criteria_setting(json.dumps(config), setting="S") == {"criteria": {"m": 0.5}, "custom_metrics": custom}


def test_eval_set_setting(tmp_path: Path) -> None:
    assert eval_set_setting(str(EVAL_SET), setting="E").eval_set_id  # type: ignore[union-attr]
    assert eval_set_setting(None, setting="E") is None
    bad = tmp_path / "set.json"
    bad.write_text(json.dumps({"eval_set_id": "s"}))
    with pytest.raises(ConfigurationError, match=r"^E: .*set\.json: invalid eval set: eval_cases: Field required"):
        eval_set_setting(str(bad), setting="E")


def test_an_eval_set_with_several_problems_names_the_first_and_how_to_see_them_all(tmp_path: Path) -> None:
    bad = tmp_path / "set.json"
    bad.write_text(json.dumps({"eval_set_id": 7}))  # a wrong type and a missing field
    with pytest.raises(InputError) as caught:
        load_eval_set(bad)
    assert str(caught.value).endswith(f"(+1 more: otel-eval validate {bad} lists them all)")


def test_an_integer_too_long_to_read_is_invalid_json_naming_the_file_or_setting(tmp_path: Path) -> None:
    """``json.loads`` refuses an integer of more than 4300 digits with a plain ValueError: it ended in a traceback."""
    digits = "9" * 5000
    path = tmp_path / "big.evalset.json"
    path.write_text('{"eval_set_id": "big", "eval_cases": [], "n": ' + digits + "}")
    with pytest.raises(InputError, match=r"big\.evalset\.json: invalid JSON: .*4300 digits"):
        load_eval_set(path)
    with pytest.raises(ConfigurationError, match=r"S: invalid JSON: .*4300 digits"):
        criteria_setting('{"criteria": {"tool_trajectory_avg_score": ' + digits + "}}", setting="S")
