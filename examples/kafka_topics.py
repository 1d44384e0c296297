"""Creates otel-eval's Kafka topics (the workers and the processor create none), with aiokafka's admin client.

    python examples/kafka_topics.py --partitions 2 otel_eval.requests otel_eval.results
    python examples/kafka_topics.py --partitions 1 otel_eval.dead_letter

The broker is ``OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS``, reached with the same ``OTEL_EVAL_KAFKA_SECURITY_PROTOCOL`` /
SASL / TLS variables as the workers. A topic that exists already is left as it is (said, with its partitions). With
Kafka's own tools the same is ``kafka-topics.sh --bootstrap-server HOST:PORT --create --if-not-exists --topic NAME
--partitions N --replication-factor R``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

from otel_eval import environment_variables as env
from otel_eval.transport import KafkaSecurity


async def create(bootstrap: str, names: list[str], partitions: int, replication_factor: int) -> dict[str, int]:
    """Creates the topics that do not exist; returns each topic's partition count as the broker reports it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **KafkaSecurity.from_env().client_kwargs())
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        new = [NewTopic(n, num_partitions=partitions, replication_factor=replication_factor) for n in names]
        missing = [topic for topic in new if topic.name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # created meanwhile by someone else
                response = await admin.create_topics(missing)
                for name, code, *message in response.topic_errors:
                    if code and code != TopicAlreadyExistsError.errno:  # the broker refused it: say why
                        reason = message[0] if message and message[0] else for_code(code).__name__
                        print(f"error: {name}: the broker refused to create it: {reason}", file=sys.stderr)
        counts: dict[str, int] = {}
        for _ in range(50):  # metadata of a new topic can lag its creation by a moment
            for description in await admin.describe_topics(names):
                if description["error_code"] == 0 and description["partitions"]:
                    counts[description["topic"]] = len(description["partitions"])
            if len(counts) == len(names):
                break
            await asyncio.sleep(0.1)
        return counts
    finally:
        await admin.close()


def _positive(text: str) -> int:
    """An integer of at least 1 (argparse says the option and the value otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("topics", nargs="+", help="the topic names")
    parser.add_argument("--partitions", type=_positive, default=1, help="partitions of each new topic (default 1)")
    parser.add_argument(
        "--replication-factor", type=_positive, default=1, help="replicas of each partition (default 1)"
    )
    args = parser.parse_args()
    bootstrap = os.environ.get(env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS, "").strip()
    if not bootstrap:
        print(f"error: set {env.OTEL_EVAL_KAFKA_BOOTSTRAP_SERVERS}", file=sys.stderr)
        return 2
    try:
        counts = asyncio.run(create(bootstrap, args.topics, args.partitions, args.replication_factor))
    except KafkaError as exc:
        print(f"error: cannot create the topics on {bootstrap}: {exc}", file=sys.stderr)
        return 1
    for name in args.topics:
        print(f"{name}: {counts.get(name, '?')} partitions")
    return 0 if len(counts) == len(args.topics) else 1


if __name__ == "__main__":
    sys.exit(main())
