"""Instructions per trace of offline ``otel-eval run`` and of parsing the same files, counted by callgrind: the
``bench_offline_cost`` CPU row as a figure that does not depend on the machine's load.

The workload is ``bench_offline_cost``'s: copies of the small real ADK trace, ``run`` in-process with the default
criteria and JSON output to /dev/null, against ``read_trace_file`` on every file. After a warm-up (20 files each) the
window is cut with ``--dump-before=time_sleep`` around the measured run.

Run: ``python -m benchmarks.offline_instructions [--side run|parse|both] [--files 300]`` (needs ``valgrind``;
~1 min a side).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT


def _workload(side: str, files: int) -> None:
    from benchmarks.bench_offline_cost import parse_only, run_cli, write_copies

    fn = run_cli if side == "run" else parse_only
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_copies(Path(tmp), files)
        fn(paths[:20])  # imports and first-use caches
        time.sleep(0.05)  # callgrind dumps here: the window starts
        fn(paths)
        time.sleep(0.05)  # and here: the window ends


def count(side: str, files: int) -> int:
    """Instructions in the measured window of one side."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--dump-before=time_sleep", f"--callgrind-out-file={out}"]
        command += [sys.executable, "-m", "benchmarks.offline_instructions", "--inside", side, "--files", str(files)]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        window = Path(f"{out}.2")  # dump 1: start-up and warm-up; dump 2: the window
        return next(int(line.split()[1]) for line in window.read_text().splitlines() if line.startswith("summary:"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.offline_instructions", description=__doc__)
    parser.add_argument("--side", choices=("run", "parse", "both"), default="both")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--inside", choices=("run", "parse"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        _workload(args.inside, args.files)
        return
    sides = ("run", "parse") if args.side == "both" else (args.side,)
    counts = {side: count(side, args.files) / args.files for side in sides}
    for side, per_trace in counts.items():
        print(f"{side}: {per_trace / 1e6:.3f} M instructions per trace ({args.files} files)")
    if len(counts) == 2:
        print(f"ratio run / parse: {counts['run'] / counts['parse']:.2f}")


if __name__ == "__main__":
    main()
