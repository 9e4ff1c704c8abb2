"""The `orbitmq` Spark source against a real `orbitmq serve`: batch options, streaming, restart, replay,
data loss, and the `orbitmq-store` source reading the same broker's store directory."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from tests.spark.conftest import BROKER, PER_QUEUE, QUEUES, Cluster

from orbitmq.common.errors import OrbitError
from orbitmq.message.model import MessageQueue

pytestmark = pytest.mark.spark

TOTAL = QUEUES * PER_QUEUE


def read(spark: Any, cluster: Cluster, **options: str) -> Any:
    reader = spark.read.format("orbitmq").option("namesrv", cluster.namesrv)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def keyed(rows: list[Any]) -> list[tuple[int, int, bytes]]:
    return sorted((r.queue_id, r.queue_offset, bytes(r.body)) for r in rows)


def test_batch_read_everything_with_all_columns(spark: Any, cluster: Cluster) -> None:
    df = read(spark, cluster, topic="events")
    assert df.columns == [
        "topic", "broker", "queue_id", "queue_offset", "body", "tags", "keys", "properties", "msg_id",
        "born_timestamp", "store_timestamp", "born_host", "store_host", "reconsume_times",
    ]  # fmt: skip
    rows = df.collect()
    assert keyed(rows) == cluster.expected("events")
    by_position = {(r.queue_id, r.queue_offset): r for r in rows}
    for q in range(QUEUES):
        for i, sent in enumerate(cluster.sent[("events", q)]):
            row = by_position[(q, i)]
            assert (row.topic, row.broker, row.tags, row.keys) == ("events", BROKER, sent.tags, sent.keys)
            assert row.msg_id == sent.uniq
            assert row.properties["color"] == sent.props["color"]
            assert row.properties["UNIQ_KEY"] == sent.uniq
            assert row.store_host == cluster.broker_addr
            assert row.born_host.startswith("127.0.0.1:")
            assert row.store_timestamp is not None and row.born_timestamp is not None
            assert row.reconsume_times == 0


def test_batch_offsets_json_and_min_partitions(spark: Any, cluster: Cluster) -> None:
    starting = json.dumps({"events": {BROKER: {"0": 10, "1": -2}}})  # others: earliest (the default)
    ending = json.dumps({"events": {BROKER: {"0": 20, "2": 5, "3": 10**6}}})  # 3: past the end; 1: latest
    df = read(
        spark, cluster, topic="events", startingOffsets=starting, endingOffsets=ending, minPartitions="9"
    )
    assert df.rdd.getNumPartitions() >= 9
    got = keyed(df.collect())
    expected = [
        e for e in cluster.expected("events") if (e[0] == 0 and 10 <= e[1] < 20) or (e[0] == 2 and e[1] < 5)
        or e[0] in (1, 3)
    ]  # fmt: skip
    assert got == expected


def test_batch_timestamps_select_by_store_time(spark: Any, cluster: Cluster) -> None:
    half = PER_QUEUE // 2
    later = keyed(
        read(spark, cluster, topic="events", startingTimestamp=str(cluster.marks["events_half"])).collect()
    )
    assert later == [e for e in cluster.expected("events") if e[1] >= half]
    earlier = keyed(
        read(spark, cluster, topic="events", endingTimestamp=str(cluster.marks["events_half"])).collect()
    )
    assert earlier == [e for e in cluster.expected("events") if e[1] < half]


def test_batch_tag_filter_topics_and_pattern(spark: Any, cluster: Cluster) -> None:
    tagged = read(spark, cluster, topic="events", tags="TagB").collect()
    assert {r.tags for r in tagged} == {"TagB"}
    assert len(tagged) == TOTAL // 2
    both = read(spark, cluster, topics="events, views").groupBy("topic").count().collect()
    assert {r.topic: r["count"] for r in both} == {"events": TOTAL, "views": 20}
    pattern = read(spark, cluster, topicPattern="vie.*").collect()
    assert {r.topic for r in pattern} == {"views"} and len(pattern) == 20
    everything = {
        r.topic for r in read(spark, cluster, topicPattern=".*").select("topic").distinct().collect()
    }
    assert {"events", "views"} <= everything
    assert not everything & {"TBW102", "SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", BROKER, "DefaultCluster"}


def test_bad_options_fail_at_load_with_a_clear_message(spark: Any, cluster: Cluster) -> None:
    with pytest.raises(Exception, match="startingoffset"):
        read(spark, cluster, topic="events", startingOffset="earliest").collect()
    with pytest.raises(Exception, match="not known to the name server"):
        read(spark, cluster, topic="no_such_topic").collect()


def test_batch_data_loss_both_ways(spark: Any, cluster: Cluster) -> None:
    beyond = json.dumps({"events": {BROKER: {"0": 10_000}}})
    with pytest.raises(Exception, match="failOnDataLoss"):
        read(spark, cluster, topic="events", startingOffsets=beyond).collect()
    skipped = read(spark, cluster, topic="events", startingOffsets=beyond, failOnDataLoss="false")
    assert keyed(skipped.collect()) == cluster.expected("events")  # queue 0 restarted from its earliest


def stream(spark: Any, cluster: Cluster, **options: str) -> Any:
    reader = spark.readStream.format("orbitmq").option("namesrv", cluster.namesrv)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def run_available_now(df: Any, out: Path, checkpoint: Path, **sink: str) -> Any:
    writer = df.select("topic", "queue_id", "queue_offset", "body").writeStream.format("parquet")
    query = (
        writer.option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120)
        assert query.exception() is None
        return query.recentProgress
    finally:
        query.stop()


def group_offset(cluster: Cluster, group: str, topic: str, queue_id: int) -> int:
    api = cluster.access.api
    try:
        return cluster.access.run(
            api.query_consumer_offset(cluster.broker_addr, group, MessageQueue(topic, BROKER, queue_id))
        )
    except OrbitError:  # the group has no offset for this queue yet
        return 0


def test_streaming_available_now_limits_restart_and_replay(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create_topic("stream1", 3)
    for q in range(3):
        cluster.produce("stream1", q, 40 + 30 * q)  # 40, 70, 100: unequal backlogs
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    df = stream(
        spark, cluster, topic="stream1", startingOffsets="earliest", maxOffsetsPerTrigger="80",
        consumerGroup="spark_progress",
    )  # fmt: skip
    progress = run_available_now(df, out, checkpoint)
    sizes = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert sizes == [80, 80, 50]  # 210 rows, the limit honoured under availableNow
    assert "stream1" in str(progress[-1]["sources"][0]["latestOffset"])  # reportLatestOffset
    assert keyed(spark.read.parquet(str(out)).collect()) == cluster.expected("stream1")
    # Progress reported to the consumer group: Spark commits lazily, so at least the first two batches.
    deadline = time.monotonic() + 10
    while (reported := sum(group_offset(cluster, "spark_progress", "stream1", q) for q in range(3))) < 160:
        assert time.monotonic() < deadline, reported
        time.sleep(0.2)
    assert 160 <= reported <= 210

    # Restart: only the new messages are read, nothing lost, nothing twice.
    for q in range(3):
        cluster.produce("stream1", q, 5)
    run_available_now(df, out, checkpoint)
    assert keyed(spark.read.parquet(str(out)).collect()) == cluster.expected("stream1")

    # Replay: forget the last batch's commit; Spark re-plans the same offsets and reads the same rows.
    commits = sorted((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    last = commits[-1].name
    seen: dict[str, list[Any]] = {}

    def record(batch_df: Any, batch_id: int) -> None:
        seen[str(batch_id)] = keyed(batch_df.collect())

    first_read = spark.read.parquet(str(out)).where("queue_offset >= 0").collect()
    (checkpoint / "commits" / last).unlink()
    crc = checkpoint / "commits" / f".{last}.crc"
    if crc.exists():
        crc.unlink()
    query = (
        df.select("topic", "queue_id", "queue_offset", "body")
        .writeStream.foreachBatch(record)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert list(seen) == [last]
    new_rows = [e for e in cluster.expected("stream1") if e[1] >= [40, 70, 100][e[0]]]
    assert seen[last] == new_rows
    assert len(first_read) == len(cluster.expected("stream1"))


def test_streaming_data_loss_both_ways(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    beyond = json.dumps({"views": {BROKER: {"0": 500, "1": 0}}})  # queue 0 "was" at 500: it now ends at 10
    failing = stream(spark, cluster, topic="views", startingOffsets=beyond)
    query = (
        failing.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "c1"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    try:
        with pytest.raises(Exception, match="failOnDataLoss"):
            query.awaitTermination(120)
    finally:
        query.stop()
    skipping = stream(spark, cluster, topic="views", startingOffsets=beyond, failOnDataLoss="false")
    run_available_now(skipping, tmp_path / "out", tmp_path / "c2")
    assert keyed(spark.read.parquet(str(tmp_path / "out")).collect()) == cluster.expected("views")


def test_store_directory_read_equals_broker_read(spark: Any, cluster: Cluster) -> None:
    columns = [
        "topic",
        "queue_id",
        "queue_offset",
        "body",
        "tags",
        "keys",
        "msg_id",
        "store_timestamp",
        "store_host",
    ]
    from_broker = read(spark, cluster, topic="events").select(*columns).collect()
    store = (
        spark.read.format("orbitmq-store")
        .option("path", str(cluster.workdir / "store"))
        .option("broker", BROKER)
        .option("topic", "events")
        .load()
    )
    from_store = store.select(*columns).collect()
    assert sorted(map(tuple, from_store)) == sorted(map(tuple, from_broker))
    assert store.select("broker").distinct().collect()[0].broker == BROKER


def test_store_directory_read_stops_at_damage(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    segment = sorted((cluster.workdir / "store" / "commitlog").iterdir())[0]
    copy = tmp_path / "store" / "commitlog"
    copy.mkdir(parents=True)
    shutil.copy(segment, copy / segment.name)  # a store holding just the first (full) segment
    whole = spark.read.format("orbitmq-store").option("path", str(copy.parent)).load().count()
    assert whole > 10
    with open(copy / segment.name, "r+b") as f:  # break the 11th record's magic: it and all after are ignored
        pos = 0
        for _ in range(10):
            f.seek(pos)
            pos += int.from_bytes(f.read(4), "big")
        f.seek(pos + 4)
        f.write(b"\0\0\0\0")
    assert spark.read.format("orbitmq-store").option("path", str(copy.parent)).load().count() == 10
