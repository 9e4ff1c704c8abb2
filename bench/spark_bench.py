"""Throughput of the orbitmq Spark connector, with its references measured in the same run.

    .venv/bin/python bench/spark_bench.py [--messages 1000000] [--size 1024] [--queues 4]

Starts `orbitmq serve` (temporary store), fills a topic with N messages of `size` bytes, then reports
rows/s for:
  produce (raw)       filling the topic with SEND_BATCH_MESSAGE from this process (setup, for scale)
  consume (raw)       the connector's pull + Arrow decode of all queues in this process, no Spark:
                      the client-side ceiling of a read
  arrow ceiling       Spark reading pre-built Arrow batches of the same schema from a trivial Python
                      data source into the noop sink: the most a Python source can deliver here
  batch read          spark.read.format("orbitmq") ... into noop (first run, then warm)
  availableNow        spark.readStream.format("orbitmq") ... trigger(availableNow) into noop
  batch write         N rows of `size`-byte bodies through df.write.format("orbitmq")
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from orbitmq.message.hosts import pack_host
from orbitmq.message.record_layout import encode_record
from orbitmq.spark.arrow_records import ROW_DDL, decode_batch, record_positions
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.spark.options import parse_source_options
from orbitmq.spark.range_reader import read_range
from orbitmq.spark.source import OrbitBatchReader
from orbitmq.testing import start_serve

_ENTRY = struct.Struct(">iiiii")


def produce(
    access: BrokerAccess, broker_addr: str, topic: str, *, queues: int, total: int, size: int
) -> float:
    per_batch = max(1, min(512, (3 * 1024 * 1024) // (size + 64)))
    body = b"x" * size
    props = b"TAGS\x01bench"
    entry = _ENTRY.pack(22 + size + len(props), 0, 0, 0, size) + body + struct.pack(">h", len(props)) + props

    async def queue_worker(queue_id: int, count: int) -> None:
        sent = 0
        while sent < count:
            n = min(per_batch, count - sent)
            header = {"a": "bench", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
                      "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0", "k": "false",
                      "m": "true", "n": "broker-a"}  # fmt: skip
            resp = await access.send_batch_raw(broker_addr, header, entry * n, 30.0)
            if resp.code != 0:
                raise RuntimeError(f"send failed: {resp.code} {resp.remark}")
            sent += n

    async def all_queues() -> None:
        share = [total // queues + (1 if q < total % queues else 0) for q in range(queues)]
        await asyncio.gather(*(queue_worker(q, share[q]) for q in range(queues)))

    started = time.perf_counter()
    access.run(all_queues())
    return total / (time.perf_counter() - started)


def raw_consume(options: dict[str, str], total: int) -> float:
    reader = OrbitBatchReader(parse_source_options(options, streaming=False))
    started = time.perf_counter()
    rows = 0
    for partition in reader.partitions():
        for batch in read_range(partition.value):
            rows += batch.num_rows
    elapsed = time.perf_counter() - started
    assert rows == total, (rows, total)
    return rows / elapsed


# ---- the Arrow ceiling: a trivial source yielding ready batches of the same schema ------------------


def _template_batch(rows: int, size: int) -> pa.RecordBatch:
    props = b"TAGS\x01bench\x02UNIQ_KEY\x01" + b"0" * 32
    record = encode_record(
        queue_id=0, flag=0, queue_offset=0, physical_offset=0, sys_flag=0, born_timestamp=1_700_000_000_000,
        born_host=pack_host("127.0.0.1", 1), store_timestamp=1_700_000_000_001,
        store_host=pack_host("127.0.0.1", 2),
        reconsume_times=0, prepared_transaction_offset=0, body=b"x" * size, topic=b"bench", properties=props,
    )  # fmt: skip
    buf = record * rows
    return decode_batch(buf, record_positions(buf), broker="broker-a")


class CeilingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "arrow_ceiling"

    def schema(self) -> str:
        return ROW_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return CeilingReader(int(self.options["rows"]), int(self.options["size"]), int(self.options["parts"]))


class CeilingReader(DataSourceReader):
    def __init__(self, rows: int, size: int, parts: int) -> None:
        self.rows, self.size, self.parts = rows, size, parts

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(self.rows // self.parts) for _ in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        remaining = int(partition.value)
        template = _template_batch(min(65536, remaining), self.size)
        while remaining > 0:
            n = min(template.num_rows, remaining)
            yield template.slice(0, n)
            remaining -= n


def timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument(
        "--max-transfer",
        type=int,
        default=0,
        help="raise the broker's maxTransferCountOnMessageInMemory to N (and 4 MiB per pull) and read "
        "with pullBatchSize=N (default: RocketMQ's 32 messages / 256 KiB)",
    )
    args = parser.parse_args()
    n, size = args.messages, args.size

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    workdir = Path(tempfile.mkdtemp(prefix="orbitmq-spark-bench-"))
    try:
        results = run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # the store holds N * size bytes and 1 GiB segments
    tuning = (
        f", broker maxTransfer {args.max_transfer}" if args.max_transfer else ", RocketMQ default pull limits"
    )
    print(f"\norbitmq Spark connector, {n:,} messages of {size} B, {args.queues} queues, local[2]{tuning}")
    # W7's target is a ratio to the Arrow ceiling of the same run (the box is shared and noisy).
    ceiling = next((r for name, r, note in results if name.startswith("arrow ceiling") and note == "warm"), 0)
    print(f"{'path':<52}{'rows/s':>12}{'x ceiling':>11}  note")
    for name, rate, note in results:
        ratio = f"{rate / ceiling:.2f}" if ceiling else "-"
        print(f"{name:<52}{rate:>12,.0f}{ratio:>11}  {note}")
    return 0


def run(args: argparse.Namespace, workdir: Path) -> list[tuple[str, float, str]]:
    n, size = args.messages, args.size
    results: list[tuple[str, float, str]] = []
    broker_conf: dict[str, int] = {}
    read_options = {"namesrv": "", "topic": "bench"}
    if args.max_transfer:
        broker_conf = {
            "maxTransferCountOnMessageInMemory": args.max_transfer,
            "maxTransferBytesOnMessageInMemory": 4 * 1024 * 1024,
        }
        read_options["pullBatchSize"] = str(args.max_transfer)
    with start_serve(workdir, **broker_conf) as server:
        read_options["namesrv"] = server.address
        access = BrokerAccess([server.address], timeout_s=30)
        for topic in ("bench", "bench_out"):
            access.run(access.api.create_topic(server.broker_addr, topic, read_queue_nums=args.queues,
                                               write_queue_nums=args.queues))  # fmt: skip
        while "bench_out" not in access.topic_queues(["bench_out"]):
            time.sleep(0.1)
        rate = produce(access, server.broker_addr, "bench", queues=args.queues, total=n, size=size)
        results.append(("produce (raw batch sends, setup)", rate, ""))
        results.append(("consume (raw: pull + Arrow decode, no Spark)", raw_consume(read_options, n), ""))

        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.memory", "2g")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(CeilingSource)

        def ceiling() -> None:
            source = spark.read.format("arrow_ceiling").option("rows", str(n)).option("size", str(size))
            source.option("parts", str(args.queues)).load().write.format("noop").mode("overwrite").save()

        def batch_read() -> None:
            spark.read.format("orbitmq").options(**read_options).load().write.format("noop").mode(
                "overwrite"
            ).save()

        first = timed(batch_read)
        results.append(
            ("arrow ceiling (Spark, pre-built batches -> noop)", n / timed(ceiling), "warm-up run")
        )
        results.append(("arrow ceiling (Spark, pre-built batches -> noop)", n / timed(ceiling), "warm"))
        results.append(("batch read -> noop", n / first, "first query of the session"))
        results.append(("batch read -> noop", n / timed(batch_read), "warm"))

        checkpoint = workdir / "checkpoint"
        stream = (
            spark.readStream.format("orbitmq").options(**read_options)
            .option("startingOffsets", "earliest").load()
        )  # fmt: skip
        started = time.perf_counter()
        query = (
            stream.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start()
        )  # fmt: skip
        query.awaitTermination()
        wall = time.perf_counter() - started
        engine = max(
            (p["processedRowsPerSecond"] for p in query.recentProgress if p["numInputRows"]), default=0
        )
        rows = sum(p["numInputRows"] for p in query.recentProgress)
        assert rows == n, (rows, n)
        results.append(
            ("availableNow stream -> noop", n / wall, f"wall incl. query start; engine {engine:,.0f}/s")
        )

        frame = (
            spark.range(n).selectExpr(f"CAST(repeat('x', {size}) AS BINARY) AS body").repartition(args.queues)
        )
        frame = frame.cache()
        frame.count()

        def write() -> None:
            frame.write.format("orbitmq").option("namesrv", server.address).option("topic", "bench_out").mode(
                "append"
            ).save()

        results.append(("batch write (Arrow writer, acked)", n / timed(write), ""))
        written = (
            spark.read.format("orbitmq").option("namesrv", server.address).option("topic", "bench_out").load()
        )
        assert written.count() == n
        spark.stop()
        access.close()
    return results


if __name__ == "__main__":
    raise SystemExit(main())
