"""docs/custom-metrics.md's evaluator of one's own, as a user pastes it: registered, declaring what it reads, scored by
``otel-eval run``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = """
import sys
import short_answers
from otel_eval.cli import main
from otel_eval.reconstruct import Reads

assert short_answers.ShortAnswers.reads == Reads.FINAL_RESPONSE
main(["run", sys.argv[1], "-m", "short_answers_v1"])
"""


def test_the_evaluator_of_ones_own_is_scored_by_run(tmp_path: Path) -> None:
    page = (REPO / "docs" / "custom-metrics.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.DOTALL) if "class ShortAnswers" in b]
    (tmp_path / "short_answers.py").write_text(block, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(REPO / "examples" / "traces" / "helm.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode in (0, 1), done.stderr  # PASSED or FAILED: scored either way
    (row,) = [line for line in done.stdout.splitlines() if "short_answers_v1" in line]
    assert "PASSED" in row or "FAILED" in row, done.stdout
