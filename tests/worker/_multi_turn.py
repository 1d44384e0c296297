"""The multi-turn criteria the worker's session tests judge with, and the scripted judge's answer to them."""

from __future__ import annotations

from typing import Any

MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
CONFIG: dict[str, Any] = {
    "criteria": {
        MULTI_TURN: {
            "threshold": 0.5,
            "judge_model_options": {"num_samples": 1},
            "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
        }
    }
}


def verdict(model: str, body: dict[str, Any]) -> str:
    """The scripted judge's reply (``FakeGemini``): the one rubric met."""
    return "ID: r\nProperty: The agent helped.\nRationale: read it\nVerdict: yes\n"
