"""The `orbitmq` Spark sink against a real `orbitmq serve`: batch and streaming writes read back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.spark.conftest import Cluster

from orbitmq.spark.sink import _write_task, id_prefix, message_id

pytestmark = pytest.mark.spark


def load(spark: Any, cluster: Cluster, topic: str) -> list[Any]:
    return (
        spark.read.format("orbitmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", topic)
        .load()
        .collect()
    )


def test_write_then_read_back_with_keys_tags_properties_and_sharding(spark: Any, cluster: Cluster) -> None:
    cluster.create_topic("written", 4)
    df = spark.createDataFrame(
        [(f"body-{i}", f"user{i % 3}", f"T{i % 2}", [f"k{i}", "x"], {"n": str(i)}) for i in range(60)],
        "body string, sharding_key string, tags string, keys array<string>, properties map<string,string>",
    ).repartition(3)
    (
        df.write.format("orbitmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "written")
        .option("writeId", "job-1")
        .mode("append")
        .save()
    )
    rows = load(spark, cluster, "written")
    assert sorted(bytes(r.body).decode() for r in rows) == sorted(f"body-{i}" for i in range(60))
    for r in rows:
        i = int(bytes(r.body).decode().split("-")[1])
        assert (r.tags, r.keys, r.properties["n"]) == (f"T{i % 2}", f"k{i} x", str(i))
        assert len(r.msg_id) == 32 and r.msg_id == r.properties["UNIQ_KEY"]
    # One queue per sharding key, and per key the rows keep their order within each Spark partition.
    queues_of_key: dict[str, set[int]] = {}
    for r in rows:
        key = f"user{int(bytes(r.body).decode().split('-')[1]) % 3}"
        queues_of_key.setdefault(key, set()).add(r.queue_id)
    assert all(len(q) == 1 for q in queues_of_key.values())
    assert len({r.msg_id for r in rows}) == 60

    # The same write again (same writeId, same partitions): the same message ids, so duplicates are
    # recognizable by the consumer (at-least-once with deterministic ids).
    (
        df.write.format("orbitmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "written")
        .option("writeId", "job-1")
        .mode("append")
        .save()
    )
    again = load(spark, cluster, "written")
    assert len(again) == 120
    assert {r.msg_id for r in again} == {r.msg_id for r in rows}


def test_sink_rejects_unknown_columns(spark: Any, cluster: Cluster) -> None:
    df = spark.createDataFrame([("a", "b")], "body string, tag string")
    with pytest.raises(Exception, match="does not know the column"):
        df.write.format("orbitmq").option("namesrv", cluster.namesrv).option("topic", "written").mode(
            "append"
        ).save()


def test_streaming_write_copies_a_topic(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    cluster.create_topic("copied", 2)
    source = (
        spark.readStream.format("orbitmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "views")
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        source.selectExpr("body", "tags", "CAST(queue_id AS STRING) AS sharding_key")
        .writeStream.format("orbitmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "copied")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120)
        assert query.exception() is None
    finally:
        query.stop()
    copied = load(spark, cluster, "copied")
    assert sorted(bytes(r.body) for r in copied) == sorted(e[2] for e in cluster.expected("views"))
    assert len({r.msg_id for r in copied}) == len(copied)


def test_topic_column_spreads_rows_over_two_topics(spark: Any, cluster: Cluster) -> None:
    cluster.create_topic("to_left", 2)
    cluster.create_topic("to_right", 3)
    df = spark.createDataFrame(
        [(f"r-{i}", "to_left" if i % 3 else "to_right", f"key{i % 4}") for i in range(90)],
        "body string, topic string, sharding_key string",
    ).repartition(2)
    df.write.format("orbitmq").option("namesrv", cluster.namesrv).mode("append").save()
    left, right = load(spark, cluster, "to_left"), load(spark, cluster, "to_right")
    assert sorted(bytes(r.body).decode() for r in left) == sorted(f"r-{i}" for i in range(90) if i % 3)
    assert sorted(bytes(r.body).decode() for r in right) == sorted(f"r-{i}" for i in range(0, 90, 3))
    for rows in (left, right):  # per topic, one queue per key
        queues: dict[str, set[int]] = {}
        for r in rows:
            queues.setdefault(f"key{int(bytes(r.body).decode()[2:]) % 4}", set()).add(r.queue_id)
        assert all(len(q) == 1 for q in queues.values())


def test_task_sends_every_batch_in_order_and_reports_a_failing_source(cluster: Cluster) -> None:
    """The task pulls Spark's batches on a feeder thread and sends each queue's runs in row order
    (no reordering copy for long runs): every row arrives on the queue of its spread turn, in row order
    with its row-numbered id; an error raised by the batch iterator fails the task. The bodies have
    one width, so the entries take the column-by-column fill (the other tests' bodies vary: the join)."""
    import pyarrow as pa

    from orbitmq.message.model import MessageQueue
    from orbitmq.spark.options import SinkOptions
    from orbitmq.spark.range_reader import RangeSpec, read_range

    cluster.create_topic("fed", 2)
    options = SinkOptions(namesrv=(cluster.namesrv,), topic="fed", max_batch_messages=50, send_concurrency=3)

    def batches(fail: bool) -> Iterator[pa.RecordBatch]:
        for b in range(6):
            yield pa.RecordBatch.from_arrays(
                [pa.array([f"{b * 200 + i:04d}".encode() for i in range(200)])], ["body"]
            )
        if fail:
            raise OSError("the JVM went away")

    done = _write_task(options, batches(False), "fed-1")
    assert (done.messages, done.partition) == (1200, 0)
    with pytest.raises(OSError, match="the JVM went away"):
        _write_task(options, batches(True), "fed-2")

    prefix = id_prefix("fed-1", 0)
    for q in range(2):
        stored = cluster.access.run(
            cluster.access.api.get_max_offset(cluster.broker_addr, MessageQueue("fed", "broker-a", q))
        )
        assert stored >= 600  # fed-1 complete; fed-2 stopped at its source's error (a retry resends)
        spec = RangeSpec("fed", "broker-a", q, 0, 600, cluster.broker_addr, (cluster.namesrv,), "t", "*",
                         32, 3000, 1, True)  # fmt: skip
        rows = pa.Table.from_batches(list(read_range(spec))).to_pylist()
        mine = [r for r in range(1200) if (r // 50) % 2 == q]
        assert [bytes(r["body"]).decode() for r in rows] == [f"{r:04d}" for r in mine]
        assert [r["msg_id"] for r in rows] == [message_id(prefix, r) for r in mine]
