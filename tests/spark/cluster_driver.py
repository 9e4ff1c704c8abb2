"""The Spark driver of tests/spark/test_cluster.py, run as its own process against a standalone master.

    python cluster_driver.py PHASE MASTER_URL NAMESRV WORKDIR

It gets everything it needs from its arguments (no state shared with the test process but the files
under WORKDIR) and writes what it saw as JSON to WORKDIR/PHASE.json. Phases:

- `first`: a batch read (with the Python worker PIDs and executor ids that ran its partitions), an
  availableNow stream into parquet with a checkpoint, and a batch write followed by a read-back.
- `restart`: a NEW driver process continues the same stream from the checkpoint alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

SOURCE_TOPIC = "clustered"
WRITE_TOPIC = "cluster_written"
WRITE_ROWS = 120


def session(master: str, workdir: Path) -> Any:
    from pyspark.sql import SparkSession

    python = sys.executable
    return (
        SparkSession.builder.master(master)
        .appName("orbitmq-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "512m")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", python)
        .config("spark.pyspark.driver.python", python)
        # Executors are launched by the workers, not by this process: hand them the import path.
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .config("spark.local.dir", str(workdir / "driver-local"))
        .getOrCreate()
    )


def wait_for_executors(spark: Any, count: int, timeout: float = 120.0) -> list[str]:
    """`host:port` of the executors once `count` of them (JVMs other than this driver) registered."""
    jsc = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout
    while True:
        infos = [f"{e.host()}:{e.port()}" for e in jsc.statusTracker().getExecutorInfos()]
        if len(infos) - 1 >= count:  # the list includes the driver's block manager
            return infos
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {infos} registered (the driver included)")
        time.sleep(0.5)


def keyed(rows: list[Any]) -> list[list[Any]]:
    return sorted([r.queue_id, r.queue_offset, bytes(r.body).decode()] for r in rows)


def reader(spark: Any, namesrv: str, topic: str) -> Any:
    return spark.read.format("orbitmq").option("namesrv", namesrv).option("topic", topic)


def run_stream(spark: Any, namesrv: str, workdir: Path) -> list[int]:
    df = (
        spark.readStream.format("orbitmq")
        .option("namesrv", namesrv)
        .option("topic", SOURCE_TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "90")
        .load()
    )
    query = (
        df.select("queue_id", "queue_offset", "body")
        .writeStream.format("parquet")
        .option("path", str(workdir / "stream-out"))
        .option("checkpointLocation", str(workdir / "stream-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        if not query.awaitTermination(180):
            raise RuntimeError("availableNow query did not finish in 180 s")
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        return [int(p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()


def first(spark: Any, namesrv: str, workdir: Path) -> dict[str, Any]:
    from pyspark import TaskContext

    executors = wait_for_executors(spark, 2)
    batch = reader(spark, namesrv, SOURCE_TOPIC).option("minPartitions", "6").load()

    def where(rows: Any) -> Any:
        ctx = TaskContext.get()
        n = sum(1 for _ in rows)
        yield (os.getpid(), ctx.partitionId() if ctx else -1, n, os.getcwd())

    placement = batch.rdd.mapPartitions(where).collect()
    result: dict[str, Any] = {
        "driver_pid": os.getpid(),
        "executors": executors,
        "partitions": batch.rdd.getNumPartitions(),
        "placement": placement,
        "batch": keyed(batch.collect()),
        "stream_sizes": run_stream(spark, namesrv, workdir),
        "stream_rows": keyed(spark.read.parquet(str(workdir / "stream-out")).collect()),
    }
    rows = spark.createDataFrame(
        [(f"w-{i}", f"key{i % 5}", f"T{i % 2}", {"n": str(i)}) for i in range(WRITE_ROWS)],
        "body string, sharding_key string, tags string, properties map<string,string>",
    ).repartition(4)
    rows.write.format("orbitmq").option("namesrv", namesrv).option("topic", WRITE_TOPIC).option(
        "writeId", "cluster-1"
    ).mode("append").save()
    back = reader(spark, namesrv, WRITE_TOPIC).load().collect()
    result["written"] = sorted(
        [bytes(r.body).decode(), r.tags, r.properties["n"], r.queue_id, r.msg_id] for r in back
    )
    return result


def restart(spark: Any, namesrv: str, workdir: Path) -> dict[str, Any]:
    wait_for_executors(spark, 2)
    return {
        "stream_sizes": run_stream(spark, namesrv, workdir),
        "stream_rows": keyed(spark.read.parquet(str(workdir / "stream-out")).collect()),
    }


def main() -> None:
    phase, master, namesrv, workdir = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    spark = session(master, workdir)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        result = {"first": first, "restart": restart}[phase](spark, namesrv, workdir)
    finally:
        spark.stop()
    (workdir / f"{phase}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
