"""Reads the workers' results back from ``otel_eval.results`` and prints them, one row per invocation.

    python examples/kafka_results.py                    # until no result came for --idle seconds (at most --wait)
    python examples/kafka_results.py --invocations 6    # until the results of 6 invocations are in

Reads the topic from its beginning without a consumer group (nothing is committed; run it as often as you like),
de-duplicates on the tenant and ``result_id`` (the ``otel_eval.tenant`` header, absent for the default tenant) as
every consumer of the topic should (delivery is at-least-once) and says how many duplicates it skipped. It exits 1
when no result came, or fewer invocations' results than ``--invocations`` within ``--wait`` (said on stderr), and
when the topic does not exist or the broker cannot be reached (one line naming it). Each row is an invocation: its golden eval case (``eval_id``, when the workers' eval set has
one for its question), then each metric's score and label; failed results are listed below with their explanation.
The broker is ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS`` (and its security variables), the topic
``OTEL_EVAL_KAFKA_RESULTS_TOPIC``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from otel_eval import environment_variables as env
from otel_eval.model.messages import EvaluationRecord
from otel_eval.transport import KafkaSecurity

COLUMNS = ("tool_call_count_v1", "tool_trajectory_avg_score", "hallucinations_v1")
"""The metrics shown first (when present); any other metric follows, in name order."""
MAX_RECORD_BYTES = 1 << 20
TENANT_HEADER = "otel_eval.tenant"
"""The workers' tenant header on a result (absent for the default tenant): results are distinct per tenant."""


class NoTopicError(Exception):
    """The results topic has no partitions on the broker (it does not exist)."""


async def read_results(
    bootstrap: str, topic: str, *, invocations: int | None, wait: float, idle: float
) -> tuple[list[EvaluationRecord], int]:
    """The topic's distinct results (first copy of each ``result_id``) and the number of duplicates skipped."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **KafkaSecurity.from_env().client_kwargs(),
    )
    results: dict[tuple[bytes, str], EvaluationRecord] = {}
    duplicates = 0
    try:
        await consumer.start()
        partitions = consumer.partitions_for_topic(topic) or set()
        deadline = time.monotonic() + wait
        while not partitions and time.monotonic() < deadline:
            await consumer.topics()  # fetches the cluster's metadata again
            partitions = consumer.partitions_for_topic(topic) or set()
            if not partitions:
                await asyncio.sleep(0.2)
        if not partitions:
            raise NoTopicError(f"topic {topic!r} has no partitions on {bootstrap}: does it exist?")
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        await consumer.seek_to_beginning()
        last = time.monotonic()
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for records in batch.values():
                for record in records:
                    if record.value is None or len(record.value) > MAX_RECORD_BYTES:
                        continue
                    result = EvaluationRecord.model_validate_json(record.value)
                    tenant = next((v for k, v in record.headers if k == TENANT_HEADER), b"")
                    if (tenant, result.result_id) in results:
                        duplicates += 1
                    else:
                        results[tenant, result.result_id] = result
                last = time.monotonic()
            seen = {(r.trace_id, r.span_id) for r in results.values()}
            if invocations is not None and len(seen) >= invocations and not batch:
                break
            if invocations is None and results and time.monotonic() - last >= idle:
                break
    finally:
        await consumer.stop()
    return list(results.values()), duplicates


def _cell(result: EvaluationRecord | None) -> str:
    if result is None:
        return "-"
    score = "n/a" if result.score is None else f"{result.score:g}"
    return score if result.label == "informational" else f"{score} {result.verdict or result.label}"


def print_table(results: list[EvaluationRecord], duplicates: int) -> None:
    """One row per invocation, in the order of their first result; then the failures with their explanations."""
    rows: dict[tuple[str, str], dict[str, EvaluationRecord]] = {}
    for result in sorted(results, key=lambda r: (r.invocation_end_time_ns, r.trace_id)):
        rows.setdefault((result.trace_id, result.span_id), {})[result.metric_name] = result
    metrics = sorted(
        {r.metric_name for r in results}, key=lambda m: (COLUMNS.index(m) if m in COLUMNS else len(COLUMNS), m)
    )
    header = ("invocation", "case", *metrics)
    table = [header]
    for (trace_id, _), by_metric in rows.items():
        case = next((r.eval_id for r in by_metric.values() if r.eval_id), None) or "-"
        table.append((trace_id[:8], case, *(_cell(by_metric.get(m)) for m in metrics)))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print(f"{len(results)} results for {len(rows)} invocations, {duplicates} duplicates skipped")
    for (trace_id, _), by_metric in rows.items():
        for result in by_metric.values():
            if result.label in ("fail", "not_evaluated"):
                print(f"{trace_id[:8]} {result.metric_name} {result.label}: {result.explanation or result.error_type}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--invocations", type=int, help="stop once the results of this many invocations are in")
    parser.add_argument("--idle", type=float, default=3.0, help="else stop after this long without a new result")
    parser.add_argument("--wait", type=float, default=60.0, help="stop after this many seconds in any case")
    args = parser.parse_args()
    bootstrap = os.environ.get(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "").strip()
    if not bootstrap:
        print(f"error: set {env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS}", file=sys.stderr)
        return 2
    topic = os.environ.get(env.OTEL_EVAL_KAFKA_RESULTS_TOPIC, "").strip() or env.DEFAULT_KAFKA_RESULTS_TOPIC
    try:
        results, duplicates = asyncio.run(
            read_results(bootstrap, topic, invocations=args.invocations, wait=args.wait, idle=args.idle)
        )
    except NoTopicError as exc:
        print(f"error: {exc} ({env.OTEL_EVAL_KAFKA_RESULTS_TOPIC})", file=sys.stderr)
        return 1
    except KafkaError as exc:
        print(f"error: cannot read {topic!r} from {bootstrap}: {exc}", file=sys.stderr)
        return 1
    print_table(results, duplicates)
    seen = len({(r.trace_id, r.span_id) for r in results})
    if args.invocations is not None and seen < args.invocations:
        print(
            f"error: the results of {seen} invocations came within --wait {args.wait:g} s, not {args.invocations}",
            file=sys.stderr,
        )
        return 1
    if not results:
        print(f"error: no result in {topic!r} within --wait {args.wait:g} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
