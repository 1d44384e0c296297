"""The ``otel-eval demo`` workload: a scripted travel-assistant agent with real OpenTelemetry GenAI spans."""

from otel_eval.demo.golden import EVAL_SET_ID, golden_eval_set
from otel_eval.demo.workload import AGENT_NAME, SCENARIOS, Scenario, ToolStep, TravelAgent

__all__ = ["AGENT_NAME", "EVAL_SET_ID", "SCENARIOS", "Scenario", "ToolStep", "TravelAgent", "golden_eval_set"]
