"""The references W7 compares the connector with (orbitmq.bench.spark_refs) deliver every row they claim
to: the batch read ceiling, and the same rows as one availableNow micro-batch (the stream ceiling)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orbitmq.bench.spark_refs import CeilingSource, StreamCeilingSource

ROWS = 1_002  # not a multiple of the partitions: no row may be dropped by the split


def test_stream_ceiling_delivers_the_batch_ceilings_rows(spark: Any, tmp_path: Path) -> None:
    spark.dataSource.register(CeilingSource)
    spark.dataSource.register(StreamCeilingSource)
    options = {"rows": str(ROWS), "size": "64", "parts": "4"}
    batch = spark.read.format("arrow_ceiling").options(**options).load()
    assert batch.count() == ROWS
    query = (
        spark.readStream.format("arrow_stream_ceiling").options(**options).load()
        .writeStream.format("memory").queryName("stream_ceiling")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination(120)
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert batches == [ROWS]  # one micro-batch holding every row
    streamed = spark.sql("SELECT body, topic, queue_id FROM stream_ceiling")
    assert streamed.count() == ROWS
    assert streamed.exceptAll(batch.select("body", "topic", "queue_id")).count() == 0
