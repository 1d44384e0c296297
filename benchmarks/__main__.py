"""``make bench``: every benchmark, then one table of ratios against their baselines.

Each benchmark module exposes ``main(argv) -> list[Row]`` and prints its own details; this runner collects the rows
and prints them together with the machine they ran on. ``python -m benchmarks [NAME ...]`` runs a subset.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback

from benchmarks._common import Row, machine, print_rows

BENCHMARKS = (
    "bench_metrics",
    "bench_offline",
    "bench_offline_cost",
    "bench_processor",
    "bench_pacing",
    "bench_instructions",
    "bench_throughput",
    "bench_latency",
    "bench_judge",
    "bench_sessions",
    "bench_soak",
    "bench_kafka",
    "bench_hostile",
    "bench_outage",
    "bench_startup",
)


def main(argv: list[str]) -> int:
    """Runs the named benchmarks (all by default); exit code 1 if one crashed or missed its target."""
    names = argv or list(BENCHMARKS)
    rows: list[Row] = []
    failures = []
    for name in names:
        print(f"\n# {name}", flush=True)
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            rows.extend(module.main([]) or [])
        except Exception:  # noqa: BLE001 - report and go on with the other benchmarks
            traceback.print_exc()
            failures.append(name)
        print(f"({name}: {time.perf_counter() - started:.0f} s)", flush=True)
    print_rows(f"All benchmarks — {machine()}", rows)
    if failures:
        print(f"\ncrashed: {', '.join(failures)}")
    missed = [row.benchmark for row in rows if not row.met]
    if missed:
        print(f"targets missed: {'; '.join(missed)}")
    return 1 if failures or missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
