"""The Spark Structured Streaming job: per-minute click counts per page, into Parquet and a results topic.

    clicks (orbitmq topic) -> parse JSON body -> 1-minute windows by event time, per page -> count
        -> Parquet files under OUT/counts (one row per window and page each time its count changes)
        -> topic click_counts (JSON body, sharded by page so each page's updates stay in order)

Update mode: each micro-batch emits the windows whose counts changed. The latest row of a
(minute, page) pair in the Parquet output is its current count (the `batch_id` column orders them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from examples.clickstream.topics import CLICKS, COUNTS


def start_job(
    spark: Any, namesrv: str, out: Path, *, trigger_seconds: int = 5, available_now: bool = False
) -> Any:
    """Starts the streaming query and returns it (call `.stop()` to end it).

    `available_now` processes what is in the topic and stops (for tests and catch-up runs).
    """
    from pyspark.sql import functions as F

    clicks = (
        spark.readStream.format("orbitmq")  # registered automatically once orbitmq is installed
        .option("namesrv", namesrv)
        .option("topic", CLICKS)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "10000")
        .option("consumerGroup", "clickstream_job")  # lag visible with `orbitmq admin consumerProgress`
        .load()
    )
    events = clicks.select(
        F.from_json(F.col("body").cast("string"), "page string, user string, ts long").alias("e")
    ).select("e.page", F.timestamp_millis("e.ts").alias("event_time"))
    counts = (
        events.withWatermark("event_time", "2 minutes")
        .groupBy(F.window("event_time", "1 minute").alias("window"), "page")
        .count()
    )

    def emit(batch: Any, batch_id: int) -> None:
        rows = batch.select(
            F.col("window.start").alias("minute"), "page", "count", F.lit(batch_id).alias("batch_id")
        )
        rows.write.mode("append").parquet(str(out / "counts"))
        (
            rows.select(
                F.to_json(F.struct("minute", "page", "count")).alias("body"),
                F.col("page").alias("sharding_key"),
                F.lit("minute_count").alias("tags"),
            )
            .write.format("orbitmq")
            .option("namesrv", namesrv)
            .option("topic", COUNTS)
            .option("writeId", f"clickstream-batch-{batch_id}")  # a replayed batch resends the same ids
            .mode("append")
            .save()
        )

    writer = counts.writeStream.outputMode("update").foreachBatch(emit)
    writer = writer.option("checkpointLocation", str(out / "checkpoint"))
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=f"{trigger_seconds} seconds").start()
