"""The span processor that evaluates agent invocations online: :class:`EvaluationSpanProcessor`.

How it works: ``on_start`` and ``on_end`` append the span to a bounded queue and return (``on_end`` does the
same work as the SDK's ``BatchSpanProcessor``). A daemon thread ``OtelEvalSpanProcessor`` groups ended spans by
trace. It is woken when a *local root* span ends (no parent, or a parent in another process): at most one
wake-up per invocation, never one per span; otherwise when 512 spans wait, and at most once a second for the spans
of invocations under way (every 0.2 s for roots held for their scores). While spans keep coming it looks every 3 ms
instead (a wake-up costs the agent's thread more than a span does): for 20 ms after the last spans came when they
came within 20 ms of the ones before (an agent above ~50 invocations a second), else until a look finds none. Roots
that end together are handled in one pass.

When is an invocation complete? The processor sees every span start, so it knows which spans are still open
in this process, without timers: a local root's subtree is handed on as soon as the root *and every span
started under it here* have ended. A root that ends with descendants still open (an async tool, a background
task) waits for them, at most ``trace_idle_timeout`` seconds after its end; then it is handed on without them,
counted by ``otel_eval.invocations.incomplete``, and those spans are dropped when they end
(``otel_eval.spans.dropped{incomplete}``). An invocation under way (its root running with a span under it open: a
slow model call, a tool awaiting approval) is waited for however long no span ends, at most ``max_trace_age`` seconds
from its start; then what ended is handed on as it is (``otel_eval.invocations.incomplete``) and its later spans are
dropped (``max_trace_age``). Any other trace whose root has not ended here is handed on ``trace_idle_timeout``
seconds after its last span.

A complete subtree is converted, rebuilt into invocations (:func:`otel_eval.reconstruct.rebuild_traces`) and
handed to the transport as evaluation requests. While the transport is full (e.g. the judge hangs), ``on_end``
sheds spans at once and their traces are dropped whole (never rebuilt into partial invocations), so an
overloaded evaluator costs the agent almost nothing. The transport is the embedded worker
(:class:`~otel_eval.evaluation.embedded_worker.EmbeddedWorker`) unless ``exporter`` is given (e.g. Kafka). The embedded
worker starts each request on that same background thread, right after its rebuild
(:meth:`~otel_eval.evaluation.embedded_worker.EmbeddedWorker.export`, which calls
:meth:`~otel_eval.evaluation.core.EvaluationCore.start`: paired with the golden cases and planned once): a request
that needs no judge is scored and emitted right there, so an invocation crosses one thread boundary between
``on_end`` and its results; a request that calls the judge goes on, prepared, to the worker's asyncio loop, where
judge calls run concurrently under their deadlines and budget.

The processor itself is a facade over one engine (:class:`~otel_eval.processor._settings.Engine`), built from its arguments
declared once (:class:`~otel_eval.processor._settings.EngineOptions`): the in-thread engine
(:mod:`otel_eval.processor._thread_engine`), or with ``isolation="process"`` the feeder of a child process
(:mod:`otel_eval.processor._process`) that runs the in-thread engine on the spans it receives.

Never evaluated: spans of scope ``otel_eval`` (evaluation spans, judge calls), spans started while
OpenTelemetry instrumentation is suppressed (the judge's and transports' work runs so), Kafka client spans,
and spans the SDK did not sample.

Sampling (``sample_rate``): with ``sample_priority`` (the default) every trace is buffered and decided when its local
root ends, by the session id its spans name (a session's turns all evaluated or all left out) or else its trace id;
a left-out trace is evaluated anyway when its local root ended in error or carries negative feedback, otherwise
discarded (:mod:`otel_eval.processor._selection`). Without it, ``on_start``/``on_end`` decide by trace id alone.

Limits (each overflow is dropped and counted by ``otel_eval.drop.reason``):

======================  ========================================  ======================================
limit                   what happens                              counted as
======================  ========================================  ======================================
``max_pending_spans``   new spans are dropped in ``on_end``       ``otel_eval.spans.dropped{queue_full}``
``max_open_traces``     a span of a new trace is dropped, and     ``spans.dropped`` + ``invocations.dropped``
                        so are its trace's later spans (open      ``{max_open_traces}``
                        spans of more traces are not tracked)
``max_spans_per_trace`` the whole trace is discarded              ``{max_spans_per_trace}``
``max_buffer_bytes``    the trace of the span that would pass     ``{max_buffer_bytes}``
                        the (approximate) total is discarded
                        (counted over the spans still buffered
                        at the end of a step)
``max_queue_size``      requests beyond it are dropped; while     ``invocations.dropped{transport_queue_full}``
                        full, spans are shed in ``on_end``        ``spans.dropped{transport_queue_full}``
``sessions``            a turn of a new session past              ``invocations.dropped``
(``max_sessions``,      ``max_sessions``, or one that would pass  ``{max_open_sessions}``,
``max_bytes``)          ``max_bytes``, is not held for the        ``{max_session_bytes}``
                        conversation-level metrics
shutdown                incomplete traces, unevaluated requests,  ``{shutdown}``
                        the turns of session windows not judged
======================  ========================================  ======================================

Other counters: ``otel_eval.invocations.sampled`` (handed to the transport), ``otel_eval.invocations.evaluated``,
``otel_eval.evaluation.errors{gen_ai.evaluation.name, error.type}``, ``otel_eval.traces.idle_flushed``,
``otel_eval.invocations.incomplete``, ``otel_eval.invocations.priority_sampled{otel_eval.priority.reason}`` and
``otel_eval.invocations.sampled_out`` (priority sampling), and the
gauge ``otel_eval.queue.size{otel_eval.queue=spans|requests}``. :meth:`EvaluationSpanProcessor.stats` returns the same counts in-process.
"""

from otel_eval.processor._global import attach_to_global_providers
from otel_eval.processor._settings import ProcessorSettings
from otel_eval.processor.processor import EvaluationSpanProcessor

__all__ = ["EvaluationSpanProcessor", "ProcessorSettings", "attach_to_global_providers"]
