"""Reconstruction time on hostile span trees: 10,000 -> 100,000 spans in one chain and in one fan-out.

Each shape (``tests/data/hostile/shapes.py``: a run root with one chain of model, tool, agent and bystander spans
below it, or the same spans side by side under it, plus one intact invocation) is rebuilt by every convention at
10,000 and at 100,000 spans. The ratio of the two times is about 10 when reconstruction is linear (100 if it were
quadratic; before the shared ``SpanTree`` a 20,000-span chain took 12 s in the ADK convention and a self-parented
span never finished). Target: ratio <= 25: linear work gives about 10, and a 10x larger heap costs some more per span
(CPU cache misses on 100,000-entry dicts, cyclic GC passes over more live objects, O(n log n) sorts); a quadratic step
anywhere gives 100.

Run: ``python -m benchmarks.bench_hostile [--repeat N] [--conventions adk,genai,...]``.
"""

from __future__ import annotations

import argparse
import gc

from benchmarks._common import Row, interleaved_medians, machine, print_rows
from otel_eval.reconstruct import rebuild_traces
from tests.data.hostile.shapes import CONVENTIONS, hostile_document, internal_spans

SMALL = 10_000
LARGE = 100_000
SHAPES = ("deep_chain", "wide_fanout")
TARGET_RATIO = 25.0


def measure(convention: str, shape: str, repeat: int) -> tuple[float, float]:
    """Median rebuild seconds at :data:`SMALL` and :data:`LARGE` spans (spans built beforehand, no reader)."""
    small = internal_spans(hostile_document(convention, shape, SMALL))
    large = internal_spans(hostile_document(convention, shape, LARGE))
    gc.collect()
    small_s, large_s = interleaved_medians([lambda: rebuild_traces(small), lambda: rebuild_traces(large)], repeat)
    return small_s, large_s


def main(argv: list[str]) -> list[Row]:
    """Prints and returns one row per convention and shape."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--conventions", default=",".join(CONVENTIONS))
    args = parser.parse_args(argv)
    rows = []
    for convention in args.conventions.split(","):
        for shape in SHAPES:
            small_s, large_s = measure(convention, shape, args.repeat)
            ratio = large_s / small_s
            label = "chain" if shape == "deep_chain" else "fan-out"
            print(
                f"{convention:>14} {label:<8} {SMALL:>7} spans {small_s:7.3f} s  {LARGE:>7} spans {large_s:7.3f} s  "
                f"ratio {ratio:5.1f}",
                flush=True,
            )
            rows.append(
                Row(
                    benchmark=f"hostile rebuild {convention} {label} 100k/10k",
                    ours=f"{large_s:.2f} s",
                    baseline=f"{small_s:.3f} s",
                    ratio=ratio,
                    target=f"<= {TARGET_RATIO:.0f}",
                    met=ratio <= TARGET_RATIO,
                )
            )
    print_rows(f"Hostile span trees — {machine()}", rows)
    return rows


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
