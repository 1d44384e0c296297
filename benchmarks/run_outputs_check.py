"""Byte-compares ``otel-eval run``'s outputs between two checkouts on every recorded trace file: a change meant to
make ``run`` cheaper must not change what it writes.

For each trace file of ``tests/data`` (and ``/work/shared/data/traces`` when present), alone, and for all of them at
once: ``--output json`` with the default criteria (stdout, exit code and stderr), and the same with ``--results-dir``
(ADK's ``.evalset_result.json``, the clock fixed so that its name and timestamps compare). Each checkout runs in its
own process (``PYTHONPATH`` set to it).

Run: ``python -m benchmarks.run_outputs_check --base /work/main [--head .]``; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path("/work/shared/data/traces")


def _inputs(root: Path) -> list[Path]:
    found = sorted(SHARED.glob("**/*.json*")) if SHARED.is_dir() else []
    found += sorted((root / "tests" / "data").glob("**/*.json*"))
    return [path for path in found if "evalsets" not in path.parts]


def _write_outputs(root: Path, out: Path) -> None:
    """In the checkout's own process: every output of ``run`` under ``out``."""
    import time

    from otel_eval.cli.run import run

    time.time = lambda: 1_700_000_000.0  # result files are named and stamped with the run's time
    files = _inputs(root)

    def one(args: list[str], tag: str) -> None:
        stdout, stderr = io.StringIO(), io.StringIO()
        code: object = None
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                run.main(args, standalone_mode=False)
            except SystemExit as exc:
                code = exc.code
            except Exception as exc:  # noqa: BLE001 - recorded as the output
                code = repr(exc)
        text = f"{stdout.getvalue()}\n--exit {code}\n--stderr\n{stderr.getvalue()}"
        (out / f"{tag}.txt").write_text(text.replace(str(root), "ROOT").replace(str(out), "OUT"))

    for index, path in enumerate(files):
        one([str(path), "--output", "json"], f"{index:03d}")
        one([str(path), "--output", "json", "--results-dir", str(out / f"{index:03d}.results")], f"{index:03d}.rd")
    one([*map(str, files), "--output", "json"], "all")
    one([*(str(p) for p in files if "hostile" not in p.parts), "--output", "json", "-v"], "all-verbose")


def _outputs(root: Path, out: Path) -> dict[str, bytes]:
    subprocess.run(
        [sys.executable, __file__, "--inside", str(root), "--out", str(out)],  # this file, the other checkout's code
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.run_outputs_check", description=__doc__)
    parser.add_argument("--base", type=Path, help="the checkout to compare against (e.g. /work/main)")
    parser.add_argument("--head", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        args.out.mkdir(parents=True)
        _write_outputs(args.inside.resolve(), args.out)
        return 0
    if args.base is None:
        parser.error("--base is required")
    with tempfile.TemporaryDirectory() as tmp:
        base = _outputs(args.base.resolve(), Path(tmp, "base"))
        head = _outputs(args.head.resolve(), Path(tmp, "head"))
    differ = sorted(name for name in base.keys() | head.keys() if base.get(name) != head.get(name))
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(base)} outputs compared, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
