"""Paths of the recorded traces the reader tests use."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
AGENTEVALS = DATA / "agentevals"
STRANDS = DATA / "strands-evals"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
