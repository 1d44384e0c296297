"""Writes the hostile-trace corpus: one OTLP JSON file per shape and convention (see ``shapes.py``).

The committed corpus (``tests/data/hostile/*.json``) is small (:data:`CORPUS_SIZES`); the same shapes at full size
(chains 100,000 deep, 100,000 siblings, 20 MB attributes: :data:`LARGE_SIZES`) are written to a temporary directory
by the tests that need them, never committed.

Run: ``python -m tests.data.hostile.generate [--out DIR] [--large]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.data.hostile.shapes import CONVENTIONS, SHAPES, hostile_document, otlp_json

HERE = Path(__file__).resolve().parent
CORPUS_SIZES = {
    "self_parent": 0,
    "two_cycle": 0,
    "cycle": 32,
    "duplicates": 0,
    "orphans": 32,
    "deep_chain": 64,
    "wide_fanout": 64,
    "huge_attributes": 4096,
    "garbage_types": 0,
    "deep_json": 2000,
}
"""Size of each shape in the committed corpus (spans, or bytes for ``huge_attributes``)."""
LARGE_SIZES = {"deep_chain": 100_000, "wide_fanout": 100_000, "huge_attributes": 20_000_000, "cycle": 100_000}
"""Sizes of the full-scale shapes written at test time."""


def corpus_name(shape: str, convention: str) -> str:
    """The file name of one corpus entry."""
    return f"{shape}.{convention}.json"


def render(shape: str, convention: str, size: int) -> str:
    """One corpus entry as OTLP JSON text (stable: the same text on every run)."""
    return json.dumps(otlp_json(hostile_document(convention, shape, size)), indent=None, separators=(",", ":")) + "\n"


def write(out: Path, sizes: dict[str, int]) -> list[Path]:
    """Writes every shape of ``sizes`` in every convention to ``out``; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for shape, size in sizes.items():
        for convention in CONVENTIONS:
            path = out / corpus_name(shape, convention)
            path.write_text(render(shape, convention, size))
            paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="directory to write to (default: beside this script)")
    parser.add_argument("--large", action="store_true", help="write the full-scale shapes (hundreds of MB) instead")
    args = parser.parse_args()
    assert set(CORPUS_SIZES) == set(SHAPES)
    for path in write(args.out, LARGE_SIZES if args.large else CORPUS_SIZES):
        print(path)


if __name__ == "__main__":
    main()
