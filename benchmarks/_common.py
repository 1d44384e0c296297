"""Helpers shared by the benchmarks: timing, machine description, result rows."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


@dataclass(frozen=True)
class Row:
    """One benchmark figure: ours vs the baseline, and the target the ratio must meet."""

    benchmark: str
    ours: str
    baseline: str
    ratio: float
    target: str
    met: bool


def machine() -> str:
    """A one-line description of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def interleaved_medians(runs: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """Median wall time of each of ``runs``, timed in turn ``repeat`` times so that drift in machine load hits all."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, samples in zip(runs, times, strict=True):
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
    return [statistics.median(samples) for samples in times]


def run_command(argv: Sequence[str], *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs ``argv``; raises with its stderr when it exits with a code other than 0 or 1."""
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} exited {completed.returncode}: {completed.stderr[-2000:]}")
    return completed


def print_rows(title: str, rows: Sequence[Row]) -> None:
    """Prints a small fixed-width table of rows."""
    print(f"\n## {title}\n")
    header = f"{'benchmark':<48} {'ours':>14} {'baseline':>14} {'ratio':>8}  target   met"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row.benchmark:<48} {row.ours:>14} {row.baseline:>14} {row.ratio:>8.2f}  {row.target:<7}  "
            f"{'yes' if row.met else 'NO'}"
        )


def _yes_verdict(model: str, body: dict[str, Any]) -> str:
    return "ID: r\nProperty: The agent helped.\nRationale: fine\nVerdict: yes\n"


def _serve_judge(urls: multiprocessing.Queue[str], stop: Any) -> None:
    """Child process: the loopback judge, so its work is not counted in the benchmark's process."""
    from tests.judge.fake_gemini import FakeGemini

    with FakeGemini(_yes_verdict) as server:
        urls.put(server.base_url)
        stop.wait()


@contextlib.contextmanager
def loopback_judge() -> Iterator[str]:
    """A loopback Gemini judge answering every rubric "yes", in a process of its own; yields its base URL."""
    context = multiprocessing.get_context("spawn")
    urls: multiprocessing.Queue[str] = context.Queue()
    stop = context.Event()
    process = context.Process(target=_serve_judge, args=(urls, stop), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=60)
    finally:
        stop.set()
        process.join(10)
