"""Gzip-compressed trace files (``.json.gz``, as the framework recordings and many exporters' archives are) are read
as what they hold; a broken or oversized one is refused with its name, before it takes the memory."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from otel_eval.errors import TraceFormatError
from otel_eval.traces import read_trace_file, reader
from tests.traces.conftest import AGENTEVALS, DATA

RECORDED = sorted((DATA.parent / "frameworks").rglob("*.json.gz"))


def test_the_recorded_framework_traces_are_gzip() -> None:
    assert len(RECORDED) > 10
    assert all(path.read_bytes()[:2] == b"\x1f\x8b" for path in RECORDED)


@pytest.mark.parametrize("plain", [AGENTEVALS / "helm.json", DATA / "strands-evals" / "adk_live_spans.json"])
def test_a_compressed_file_reads_as_its_content(plain: Path, tmp_path: Path) -> None:
    compressed = tmp_path / f"{plain.name}.gz"
    compressed.write_bytes(gzip.compress(plain.read_bytes()))
    expected, read = read_trace_file(plain), read_trace_file(compressed)
    assert read.spans == expected.spans and read.format == expected.format
    assert read.spans


def test_several_gzip_members_are_read_in_turn(tmp_path: Path) -> None:
    lines = (DATA / "strands-evals" / "adk_live_spans.json").read_bytes()
    jsonl = tmp_path / "spans.jsonl.gz"
    plain = read_trace_file(DATA / "strands-evals" / "adk_live_spans.json")
    jsonl.write_bytes(gzip.compress(lines) + gzip.compress(b"\n"))  # e.g. files appended by `gzip >>`
    assert read_trace_file(jsonl).spans == plain.spans


def test_a_truncated_file_names_the_file_and_the_problem(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gzip.compress((AGENTEVALS / "helm.json").read_bytes())[:200])
    with pytest.raises(TraceFormatError, match=rf"^{broken}: gzip-compressed, but cannot be decompressed: "):
        read_trace_file(broken)


def test_a_file_larger_than_the_limit_once_decompressed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "MAX_GUNZIPPED_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * (2 << 20) + b"]"))  # 2 MiB of blanks, a few KiB compressed
    with pytest.raises(TraceFormatError, match=rf"^{bomb}: gzip-compressed, and larger than 1 MiB decompressed$"):
        read_trace_file(bomb)
