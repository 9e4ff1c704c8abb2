"""Shared fixtures of the Spark tests: ONE SparkSession and ONE `orbitmq serve` per test run.

Starting the JVM costs 15-40 s here, so the session is session-scoped and every test reuses it (and
the data the cluster fixture produced). The data source is NOT registered by hand: the tests rely on
PySpark's auto-registration of the installed `pyspark_orbitmq` / `pyspark_orbitmq_store` packages.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orbitmq.message.property_string import encode_properties
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.testing import ServerProcess, start_serve

BROKER = "broker-a"
QUEUES = 4
PER_QUEUE = 100  # messages per queue in the main topic
_ENTRY = struct.Struct(">iiiii")


@dataclass
class Sent:
    body: bytes
    tags: str
    keys: str
    uniq: str
    props: dict[str, str]


@dataclass
class Cluster:
    process: ServerProcess
    workdir: Path
    namesrv: str
    broker_addr: str
    access: BrokerAccess
    sent: dict[tuple[str, int], list[Sent]] = field(default_factory=dict)
    marks: dict[str, int] = field(default_factory=dict)

    def create_topic(self, topic: str, queues: int = QUEUES) -> None:
        self.access.run(
            self.access.api.create_topic(
                self.broker_addr, topic, read_queue_nums=queues, write_queue_nums=queues
            )
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if topic in self.access.topic_queues([topic]):
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {topic} never appeared in the name server")

    def produce(
        self, topic: str, queue_id: int, count: int, *, tag_cycle: tuple[str, ...] = ("TagA", "TagB")
    ) -> None:
        """Sends `count` messages to one queue in one batch; remembers what was sent."""
        sent = self.sent.setdefault((topic, queue_id), [])
        parts: list[bytes] = []
        for _ in range(count):
            n = len(sent)
            msg = Sent(
                body=f"{topic}:{queue_id}:{n}".encode() * 3,
                tags=tag_cycle[n % len(tag_cycle)],
                keys=f"k{n} key-{queue_id}",
                uniq=f"{queue_id:04X}{n:028X}",
                props={"color": "red" if n % 2 else "blue", "n": str(n)},
            )
            sent.append(msg)
            props = dict(msg.props, TAGS=msg.tags, KEYS=msg.keys, UNIQ_KEY=msg.uniq)
            encoded = encode_properties(props).encode()
            parts += [_ENTRY.pack(22 + len(msg.body) + len(encoded), 0, 0, 0, len(msg.body)), msg.body]
            parts += [struct.pack(">h", len(encoded)), encoded]
        header = {
            "a": "spark_test_producer",
            "b": topic,
            "c": "TBW102",
            "d": "4",
            "e": str(queue_id),
            "f": "0",
            "g": str(int(time.time() * 1000)),
            "h": "0",
            "i": "",
            "j": "0",
            "k": "false",
            "m": "true",
            "n": BROKER,
        }
        resp = self.access.run(self.access.send_batch_raw(self.broker_addr, header, b"".join(parts), 10.0))
        assert resp.code == 0, (resp.code, resp.remark)

    def expected(self, topic: str) -> list[tuple[int, int, bytes]]:
        return sorted(
            (q, i, m.body) for (t, q), msgs in self.sent.items() if t == topic for i, m in enumerate(msgs)
        )


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("orbitmq-spark")
    # Small commit-log segments: the store test then crosses segment ends (blank records).
    process = start_serve(workdir, mappedFileSizeCommitLog=65536)
    access = BrokerAccess([process.address], timeout_s=10)
    try:
        c = Cluster(process, workdir, process.address, process.broker_addr, access)
        c.create_topic("events")
        for q in range(QUEUES):
            c.produce("events", q, PER_QUEUE // 2)
        time.sleep(0.05)
        c.marks["events_half"] = int(time.time() * 1000)
        time.sleep(0.05)
        for q in range(QUEUES):
            c.produce("events", q, PER_QUEUE // 2)
        c.create_topic("views", 2)
        for q in range(2):
            c.produce("views", q, 10)
        yield c
    finally:
        access.close()
        process.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("orbitmq-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
