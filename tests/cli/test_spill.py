"""The streamed first pass of ``otel-eval run``: the same conversations, in the same order, as grouping everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_eval.cli._common import load_traces
from otel_eval.cli._spill import HELD_BYTES, spill_file, stream_traces
from otel_eval.conversations import Conversation, group_conversations

DATA = Path(__file__).parents[1] / "data" / "traces"
FILES = [
    DATA / "agentevals" / "helm.json",
    DATA / "agentevals" / "k8s.json",
    DATA / "agentevals" / "helm_3.json",
    DATA / "strands-evals" / "adk_live_spans.json",
    DATA / "strands-evals" / "openai_agents_genai_live_spans.json",
]


def _in_memory(paths: list[Path]) -> list[Conversation]:
    loaded = load_traces(paths)
    return group_conversations(inv for trace in loaded.traces for inv in trace.invocations)


def _streamed(paths: list[Path], held_bytes: int = HELD_BYTES) -> tuple[int, list[Conversation]]:
    with spill_file() as spill:
        streamed = stream_traces(paths, spill, held_bytes=held_bytes)
        conversations = list(streamed.conversations)
        spilled = spill.tell() > 0
    assert spilled == (held_bytes < sum(path.stat().st_size for path in paths))
    return streamed.count, conversations


def _shape(conversations: list[Conversation]) -> list[tuple[str | None, list[str]]]:
    return [(c.session_id, [inv.model_dump_json() for inv in c.invocations]) for c in conversations]


@pytest.mark.parametrize("held_files", [0, 2, len(FILES)], ids=["all-spilled", "spilled-after-two", "all-held"])
def test_files_streamed_through_the_spill_give_the_conversations_of_grouping_them_all(held_files: int) -> None:
    expected = _in_memory(FILES)
    count, conversations = _streamed(FILES, sum(path.stat().st_size for path in FILES[:held_files]))
    assert count == len(expected) == len(conversations)
    assert len(expected) >= 4
    assert _shape(conversations) == _shape(expected)


def test_a_trace_split_over_two_files_is_rebuilt_from_both(tmp_path: Path) -> None:
    spans = json.loads((DATA / "strands-evals" / "adk_live_spans.json").read_text())
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(spans[: len(spans) // 2]))
    second.write_text(json.dumps(spans[len(spans) // 2 :]))
    paths = [first, second, DATA / "agentevals" / "helm.json"]
    count, conversations = _streamed(paths)
    expected = _in_memory(paths)
    assert count == len(expected) == 2
    assert _shape(conversations) == _shape(expected)
    assert _shape(conversations)[1] == _shape(_in_memory([DATA / "strands-evals" / "adk_live_spans.json"]))[0]
