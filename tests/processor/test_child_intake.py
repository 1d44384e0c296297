"""The evaluation process queues a batch the agent's process let in (``SpanIntake.queue_batch``) exactly as the
intake's hooks queue each span: the same starts and ends in the same order, the same drops, the same shedding."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, get_current
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from otel_eval.demo import SCENARIOS, TravelAgent
from otel_eval.processor._intake import _SUPPRESSED, SpanIntake
from otel_eval.processor._process.wire import Origins, SpanDecoder, encode_span, encode_start
from otel_eval.processor._selection import Sampling


class _Feeder(SpanProcessor):
    """Encodes starts and ends as the feeder does (the agent's intake let every span in: no sampling)."""

    def __init__(self) -> None:
        self.origins = Origins()
        self.starts: list[Any] = []
        self.ends: list[Any] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        suppressed = bool((parent_context or get_current()).get(_SUPPRESS_INSTRUMENTATION_KEY))
        self.starts.append(encode_start(span, suppressed, self.origins))

    def on_end(self, span: ReadableSpan) -> None:
        self.ends.append(encode_span(span, self.origins))


def _batch() -> tuple[list[tuple[Span, bool]], list[ReadableSpan]]:
    feeder = _Feeder()
    provider = TracerProvider()
    provider.add_span_processor(feeder)
    agent = TravelAgent(provider)
    for scenario in SCENARIOS[:3]:
        agent.run(scenario)
    feeder.starts.append((*feeder.starts[0][:5], True))  # one start under suppressed instrumentation
    decoder = SpanDecoder()
    decoder.add_origins(feeder.origins.take_new())
    return [decoder.start(start) for start in feeder.starts], [decoder.span(ended) for ended in feeder.ends]


def _intake(max_pending: int) -> SpanIntake:
    return SpanIntake(max_pending=max_pending, sampling=Sampling(None, None), wake_batch=256)


def _state(intake: SpanIntake) -> tuple[list[Any], list[Any], tuple[int, list[int]], tuple[int, list[int]]]:
    return list(intake.starts), list(intake.ends), intake.take_dropped(), intake.shedder.take(full=True)


@pytest.mark.parametrize(("max_pending", "shedding"), [(10_000, False), (10_000, True), (7, False)])
def test_a_batch_is_queued_as_the_hooks_queue_each_span(max_pending: int, shedding: bool) -> None:
    starts, ends = _batch()
    assert len(ends) > 7 and any(suppressed for _, suppressed in starts)
    by_hooks, by_batch = _intake(max_pending), _intake(max_pending)
    if shedding:
        by_hooks.shedder.start()
        by_batch.shedder.start()
    for span, suppressed in starts:
        by_hooks.on_start(span, _SUPPRESSED if suppressed else None)
    for ended in ends:
        by_hooks.on_end(ended)
    by_batch.queue_batch(starts, ends)
    expected = _state(by_hooks)
    assert _state(by_batch) == expected
    if not shedding and max_pending > len(ends):
        assert expected[:3] == (starts, ends, (0, []))  # everything queued, in order
    else:
        assert expected[2] or expected[3][0]  # the rules dropped or shed some
