"""The ``otel-eval worker`` Kafka service (:mod:`.service`), over the shared evaluation core
(:mod:`otel_eval.evaluation`).

Service guarantees, in short (details in :mod:`.results` and :mod:`.collector_path`):

* **At-least-once.** A batch's offsets are committed only after its results were emitted (telemetry exported by
  the OTLP exporters, which the worker flushes) and published to the results topic with ``acks=all``. A worker that
  dies mid-batch leaves the batch uncommitted; another member of the group evaluates it.
* **No duplicate on redelivery, in the common cases.** Invocations whose results the group already published (read
  back from the results topic when partitions are assigned) or that this worker already evaluated (a bounded LRU)
  are skipped. The remaining window is a crash between exporting a batch's telemetry and publishing its results:
  that batch's telemetry is then emitted twice, never lost. Results-topic consumers de-duplicate exactly by
  ``result_id``.
* **Poison messages** go to the dead-letter topic with the error in headers; the worker moves on. So do records whose
  decoding, parsing or rebuilding (run off the event loop) outlasts ``worker_record_timeout``
  (:mod:`otel_eval._runtime.deadline`): heartbeats go on meanwhile, so a hostile trace never stalls the group.
* **Collector path.** ``otlp_spans`` messages are assembled into traces with an idle timeout; offsets are held back
  to the first message of any still-open trace, so a crash re-reads unfinished traces.
* **Lifecycle** (uvicorn's): SIGTERM or SIGINT stops intake and finishes the current batch within
  ``worker_shutdown_timeout`` seconds, then the signal is raised again; a second SIGINT stops at once; a task that
  dies stops the worker with its error (:class:`~otel_eval.worker.service.WorkerFailed`). Exit codes:
  ``otel-eval worker --help``.

The brokers' known gaps are avoided by design: no idempotent or transactional producer, no ``latest`` offset resets,
no reliance on ``end_offsets()`` exactness, generous group timeouts.
"""
