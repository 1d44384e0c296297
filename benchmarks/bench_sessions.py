"""What sessions online cost the embedded worker: memory per open session, CPU per judged session.

- **Memory per open session**: ``tracemalloc`` over rebuilding 3-turn sessions of the demo agent (one trace per
  turn) and holding their turns in a :class:`~otel_eval.evaluation.sessions.SessionStage` (what the engine
  keeps alive until the session closes), divided by the sessions; beside it, the turns' JSON size.
- **CPU per judged session**: process CPU of :meth:`~otel_eval.evaluation.core.EvaluationCore.evaluate_window` for
  ``rubric_based_multi_turn_trajectory_quality_v1`` on a 3-turn window (one judge call), the loopback judge in its
  own process; the baseline is the same metric alone on one invocation without a session (also one call).

Run: ``python -m benchmarks.bench_sessions``.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from benchmarks._common import Row, loopback_judge, machine, print_rows
from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.evaluation.sessions import SessionLimits, SessionStage, SessionWindow, turn_size
from otel_eval.judge import JudgeClient, JudgeSettings
from otel_eval.model import TracedInvocation
from otel_eval.model.messages import EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.traces import spans_from_readable

SESSIONS = 200
TURNS = 3
JUDGED = 50
KEY = "bench-key"
MULTI_TURN = "rubric_based_multi_turn_trajectory_quality_v1"
CRITERIA = {
    MULTI_TURN: {
        "threshold": 0.5,
        "judge_model_options": {"num_samples": 1},
        "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "The agent helped."}}],
    }
}


def _session_spans(sessions: int) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = TravelAgent(provider)
    for index in range(sessions * TURNS):
        agent.run(SCENARIOS[index % len(SCENARIOS)], conversation_id=f"session-{index % sessions}")
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _turns(spans: list[ReadableSpan]) -> list[TracedInvocation]:
    turns = [i for trace in rebuild_traces(spans_from_readable(spans)) for i in trace.invocations]
    return sorted(turns, key=lambda t: t.start_time_ns)


def _memory_per_session(spans: list[ReadableSpan]) -> tuple[float, float]:
    """(bytes held per open session, JSON bytes of its turns)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    stage = SessionStage(SessionLimits(idle_timeout=3600))
    turns = _turns(spans)
    json_bytes = sum(turn_size(t) for t in turns)
    stage.hold(turns)
    del turns
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(stage) == SESSIONS
    return held / SESSIONS, json_bytes / SESSIONS


async def _cpu_per_judged(windows: list[SessionWindow], singles: list[TracedInvocation]) -> tuple[float, float]:
    """(CPU seconds per judged 3-turn window, per judged single invocation)."""
    with loopback_judge() as base_url:
        judge = JudgeClient(JudgeSettings(api_key=KEY, base_url=base_url, timeout_seconds=10))
        core = EvaluationCore(criteria=CRITERIA, judge=judge, judge_configured=True, emitters=Emitters(None))
        await core.evaluate_window(windows[0])  # warm up: connections, plans
        start = time.process_time()
        for window in windows[1:]:
            records = await core.evaluate_window(window)
            assert records[-1].eval_status.name == "PASSED", records[-1]
        per_window = (time.process_time() - start) / (len(windows) - 1)
        start = time.process_time()
        for single in singles:
            records = await core.evaluate(
                EvaluationRequest(invocations=[single.model_copy(update={"session_id": None})]), scope="conversation"
            )
            assert records[-1].eval_status.name == "PASSED", records[-1]
        per_single = (time.process_time() - start) / len(singles)
        await judge.aclose()
    return per_window, per_single


def main(argv: list[str] | None = None) -> list[Row]:
    """Runs both measurements, prints the table and returns its rows."""
    print(f"# sessions benchmark on {machine()}")
    spans = _session_spans(SESSIONS)
    held, json_bytes = _memory_per_session(spans)
    turns = _turns(spans)
    windows = []
    for index in range(JUDGED + 1):
        mine = [t for t in turns if t.session_id == f"session-{index}"]
        windows.append(SessionWindow(f"session-{index}", 0, 0, mine))
    per_window, per_single = asyncio.run(_cpu_per_judged(windows, turns[:JUDGED]))
    rows = [
        Row(
            f"memory per open session ({TURNS} turns)",
            f"{held / 1024:.1f} KiB",
            f"{json_bytes / 1024:.1f} KiB JSON",
            held / json_bytes,
            "info",
            True,
        ),
        Row(
            f"CPU per judged session ({TURNS} turns, 1 call)",
            f"{per_window * 1000:.2f} ms",
            f"{per_single * 1000:.2f} ms 1 inv",
            per_window / per_single,
            "info",
            True,
        ),
    ]
    print_rows(f"Sessions — {machine()}", rows)
    return rows


if __name__ == "__main__":
    main()
