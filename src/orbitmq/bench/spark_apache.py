"""W7's reference broker: the Spark connector's paths against Apache RocketMQ 4.9.x, in the same run.

What the broker spends per row decides how near a ratio to the Arrow ceiling can come when Spark and
the broker share cores, so each orbitmq row gets an Apache row measured minutes apart on the same box.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orbitmq.bench.apache_rmq import RocketMQInstall, start_apache
from orbitmq.bench.server_workloads import wait_until_serving
from orbitmq.bench.spark_refs import produce, raw_consume
from orbitmq.bench.spark_tree_wait import TreeWait
from orbitmq.spark.broker_access import BrokerAccess

SUFFIX = " (Apache RocketMQ)"
TOPICS = ("bench", "bench_out", "bench_all", "bench_warm")
Row = tuple[str, float, str]


def _master(access: BrokerAccess, topic: str) -> tuple[str, str]:
    """(broker name, master address) of the first broker in `topic`'s route."""
    route = access.run(access.api.get_topic_route(topic))
    if route is None:
        raise RuntimeError(f"Apache RocketMQ has no route for {topic}")
    for broker in route.broker_datas:
        addr = broker.broker_addrs.get(0)
        if addr:
            return broker.broker_name, addr
    raise RuntimeError(f"no master in the route of {topic}")


def apache_rows(
    spark: Any,
    install: RocketMQInstall,
    workdir: Path,
    *,
    messages: int,
    size: int,
    queues: int,
    writes: dict[str, Any] | None,
) -> list[Row]:
    """Apache RocketMQ (started here, ASYNC_FLUSH, beside the idle `orbitmq serve`) through the same paths:
    the producer's raw batch sends, the connector's pull + Arrow decode without Spark, a batch read and
    both batch writes through Spark. Each row is named like its orbitmq row plus SUFFIX (so it is compared
    with the same ceiling) and its note has the broker's CPU per row (all of the broker JVM's threads).
    """
    results: list[Row] = []
    handle = start_apache(install, workdir / "apache-rmq", "ASYNC_FLUSH")
    try:
        asyncio.run(wait_until_serving(handle.address, 60.0))
        access = BrokerAccess([handle.address], timeout_s=30)
        try:
            name, broker = _master(access, "TBW102")
            brokers = {name: broker}
            for topic in TOPICS:
                access.run(
                    access.api.create_topic(broker, topic, read_queue_nums=queues, write_queue_nums=queues)
                )
            deadline = time.monotonic() + 60
            while len(access.topic_queues(list(TOPICS))) < len(TOPICS):
                if time.monotonic() > deadline:
                    raise RuntimeError("Apache RocketMQ did not route the bench topics within 60 s")
                time.sleep(0.2)
            wait = TreeWait(handle.pids[0])  # the broker JVM (its namesrv counts on the Spark side)
            options = {"namesrv": handle.address, "topic": "bench"}

            def measure(name: str, action: Callable[[], object], note: str) -> None:
                wait.start()
                started = time.perf_counter()
                action()
                seconds = time.perf_counter() - started
                said = wait.note(seconds, messages)
                results.append((name + SUFFIX, messages / seconds, f"{note}; {said}"))

            # The JVM compiles its hot paths first: a write and a read of 10 % of N, not counted.
            warm = max(1000, messages // 10)
            produce(access, brokers, "bench_warm", queues=queues, total=warm, size=size)
            raw_consume({"namesrv": handle.address, "topic": "bench_warm"}, warm)
            measure(
                "produce (raw batch sends, setup)",
                lambda: produce(access, brokers, "bench", queues=queues, total=messages, size=size),
                "JIT warmed",
            )
            measure(
                "consume (raw: pull + Arrow decode, no Spark)", lambda: raw_consume(options, messages), "warm"
            )
            measure(
                "batch read -> noop",
                lambda: spark.read.format("orbitmq").options(**options).load().write.format("noop")
                .mode("overwrite").save(),
                "warm",
            )  # fmt: skip

            def write_to(frame: Any, topic: str) -> Callable[[], object]:
                return lambda: (
                    frame.write.format("orbitmq").option("namesrv", handle.address).option("topic", topic)
                    .mode("append").save()
                )  # fmt: skip

            for name, frame in (writes or {}).items():
                columns = "all columns" if "all columns" in name else "body only"
                measure(
                    name, write_to(frame, "bench_all" if columns == "all columns" else "bench_out"), columns
                )
        finally:
            access.close()
    finally:
        handle.stop()
    return results
