"""``isolation="process"``: the evaluation runs in a child process fed the spans over a private socket.

:mod:`~otel_eval.processor._process.feeder` is the agent's side (the engine the processor delegates to),
:mod:`~otel_eval.processor._process.main` the child (``python -m otel_eval.processor._process.main``),
:mod:`~otel_eval.processor._process.wire` the spans that cross the socket, :mod:`~otel_eval.processor._process.framing`
how they cross, :mod:`~otel_eval.processor._process.lifecycle`
starting, asking and restarting the child, :mod:`~otel_eval.processor._process.supervisor` the feeder's running child
and what is lost with one, and :mod:`~otel_eval.processor._process.exporters` where the child
exports the scores and what may cross into it.
"""
