"""The connector against two broker processes (`orbitmq serve --brokers 2`, two broker names with their own
stores and ports, one nameserver): what a user has after adding a broker.

A topic lives on both brokers with a different queue count on each, so a queue is only known by
(broker, queue id). Same exact checks as the one-broker tests: a batch read returns every message once;
an availableNow stream restarted from its checkpoint reads only what came after, from both brokers;
a write spreads its rows over both brokers' queues, and reading them back gives each row once.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orbitmq.message.model import MessageQueue
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.testing import ServerProcess, start_serve

pytestmark = pytest.mark.spark

_ENTRY = struct.Struct(">iiiii")
# Each broker's queues of the topic that is read: unequal, so (broker, queue id) is the only key.
READ_QUEUES = {"broker-a-1": 3, "broker-a-2": 2}

Row = tuple[str, int, int, bytes]  # broker, queue id, queue offset, body


@dataclass
class TwoBrokers:
    process: ServerProcess
    namesrv: str
    access: BrokerAccess
    masters: dict[str, str]  # broker name -> address
    sent: dict[tuple[str, str, int], list[bytes]] = field(default_factory=dict)

    def create_topic(self, topic: str, queues: dict[str, int]) -> None:
        for broker, count in queues.items():
            api = self.access.api
            self.access.run(
                api.create_topic(self.masters[broker], topic, read_queue_nums=count, write_queue_nums=count)
            )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            route = self.access.topic_queues([topic]).get(topic)
            if route is not None and route.write_queues == queues:
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {topic} is not on both brokers in the name server's route")

    def produce(self, topic: str, broker: str, queue_id: int, count: int) -> None:
        sent = self.sent.setdefault((topic, broker, queue_id), [])
        parts: list[bytes] = []
        for _ in range(count):
            body = f"{topic}/{broker}/{queue_id}/{len(sent)}".encode()
            sent.append(body)
            parts += [_ENTRY.pack(22 + len(body), 0, 0, 0, len(body)), body, struct.pack(">h", 0)]
        header = {"a": "spark_brokers_test", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id),
                  "f": "0", "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0",
                  "k": "false", "m": "true", "n": broker}  # fmt: skip
        addr = self.masters[broker]
        resp = self.access.run(self.access.send_batch_raw(addr, header, b"".join(parts), 10.0))
        assert resp.code == 0, (resp.code, resp.remark)

    def produce_everywhere(self, topic: str, queues: dict[str, int], per_queue: int) -> None:
        for broker, count in queues.items():
            for q in range(count):
                self.produce(topic, broker, q, per_queue + q)  # unequal backlogs

    def expected(self, topic: str) -> list[Row]:
        return sorted(
            (broker, q, offset, body)
            for (t, broker, q), bodies in self.sent.items()
            if t == topic
            for offset, body in enumerate(bodies)
        )

    def stored(self, topic: str, queues: dict[str, int]) -> dict[str, int]:
        """Messages per broker, from each queue's max offset."""
        api = self.access.api
        return {
            broker: sum(
                self.access.run(api.get_max_offset(self.masters[broker], MessageQueue(topic, broker, q)))
                for q in range(count)
            )
            for broker, count in queues.items()
        }


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoBrokers]:
    workdir = tmp_path_factory.mktemp("orbitmq-spark-brokers")
    process = start_serve(workdir, extra_args=["--brokers", "2"])
    access = BrokerAccess([process.address], timeout_s=10)
    try:
        deadline = time.monotonic() + 30
        while sorted(masters := access.masters()) != sorted(READ_QUEUES):
            assert time.monotonic() < deadline, f"brokers registered: {masters}"
            time.sleep(0.2)
        yield TwoBrokers(process, process.address, access, masters)
    finally:
        access.close()
        process.stop()


def keyed(rows: list[Any]) -> list[Row]:
    return sorted((r.broker, r.queue_id, r.queue_offset, bytes(r.body)) for r in rows)


def test_batch_read_takes_every_queue_of_both_brokers_once(spark: Any, brokers: TwoBrokers) -> None:
    brokers.create_topic("spread", READ_QUEUES)
    brokers.produce_everywhere("spread", READ_QUEUES, 20)
    df = spark.read.format("orbitmq").option("namesrv", brokers.namesrv).option("topic", "spread").load()
    assert keyed(df.collect()) == brokers.expected("spread")
    # One partition per queue at least: the five queues are read in parallel, not one broker after the other.
    assert df.rdd.getNumPartitions() >= sum(READ_QUEUES.values())


def test_available_now_restart_reads_only_what_came_after(
    spark: Any, brokers: TwoBrokers, tmp_path: Path
) -> None:
    brokers.create_topic("spread_stream", READ_QUEUES)
    brokers.produce_everywhere("spread_stream", READ_QUEUES, 15)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    stream = (
        spark.readStream.format("orbitmq").option("namesrv", brokers.namesrv)
        .option("topic", "spread_stream").option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40").load()
    )  # fmt: skip

    def run() -> None:
        query = (
            stream.select("broker", "queue_id", "queue_offset", "body").writeStream.format("parquet")
            .option("path", str(out)).option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start()
        )  # fmt: skip
        try:
            assert query.awaitTermination(120)
            assert query.exception() is None
        finally:
            query.stop()

    run()
    assert keyed(spark.read.parquet(str(out)).collect()) == brokers.expected("spread_stream")
    # New messages on both brokers, then a restart from the checkpoint: each new one once, no old one again.
    brokers.produce("spread_stream", "broker-a-1", 2, 7)
    brokers.produce("spread_stream", "broker-a-2", 0, 4)
    run()
    assert keyed(spark.read.parquet(str(out)).collect()) == brokers.expected("spread_stream")


def test_write_spreads_rows_over_both_brokers(spark: Any, brokers: TwoBrokers) -> None:
    queues = {"broker-a-1": 4, "broker-a-2": 4}
    brokers.create_topic("spread_out", queues)
    rows = 2000
    df = spark.range(rows).selectExpr("CAST(concat('row-', CAST(id AS STRING)) AS BINARY) AS body")
    df.repartition(2).write.format("orbitmq").option("namesrv", brokers.namesrv).option(
        "topic", "spread_out"
    ).option("maxBatchMessages", "100").mode("append").save()
    stored = brokers.stored("spread_out", queues)
    assert sum(stored.values()) == rows
    assert all(count > 0 for count in stored.values()), stored  # not everything on one broker
    back = spark.read.format("orbitmq").option("namesrv", brokers.namesrv).option("topic", "spread_out")
    bodies = sorted(bytes(r.body).decode() for r in back.load().select("body").collect())
    assert bodies == sorted(f"row-{i}" for i in range(rows))
