"""`orbitmq bench spark`: throughput of the orbitmq Spark connector, with its references (Arrow
ceilings, raw pulls and sends) measured in the same run.

Each row's note has the run-queue wait and CPU per row of the Spark side and of the broker, so a low
ratio can be told "starved" from "slow". The rows: DESCRIPTION (the verb's --help).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orbitmq.bench.apache_rmq import ENV_HOME, RocketMQInstall, configured_home, find_install
from orbitmq.bench.driver import DriverUnavailable
from orbitmq.bench.spark_latency import ROWS_MEASURED, stream_latency
from orbitmq.bench.spark_refs import (
    CeilingSource,
    SinkCeiling,
    StreamCeilingSource,
    produce,
    raw_consume,
)
from orbitmq.bench.spark_tree_wait import TreeWait
from orbitmq.message.model import MessageQueue
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.testing import start_serve

DESCRIPTION = """\
Throughput of the orbitmq Spark connector, with its references measured in the same run.

    orbitmq bench spark [--messages 1000000] [--size 1024] [--queues 4] [--brokers 1]

Starts `orbitmq serve` (temporary store; `--brokers N`: N broker processes, every topic with --queues
queues on each), fills a topic with N messages of `size` bytes, then reports rows/s for:
  produce (raw)       filling the topic with SEND_BATCH_MESSAGE from this process (setup, for scale)
  consume (raw)       the connector's pull + Arrow decode of all queues in this process, no Spark:
                      the client-side ceiling of a read
  arrow ceiling       Spark reading pre-built Arrow batches of the same schema from a trivial Python
                      data source into the noop sink: the most a Python source can deliver here
  arrow stream ceiling  the same batches from a trivial Python streaming source, one availableNow
                      micro-batch into noop: the most a Python source can deliver as a stream (it
                      pays the query's start and Spark's streaming bookkeeping, as every stream does)
  batch read          spark.read.format("orbitmq") ... into noop (first run, then warm)
  availableNow        spark.readStream.format("orbitmq") ... trigger(availableNow) into noop, compared
                      with the stream ceiling (and, in its note, with the batch read ceiling)
  first write         the session's first orbitmq writes (~20k rows, body only, then all columns, the
                      same partitions): Spark's Python workers importing the connector, routes
                      looked up, code paths warmed; reported, not compared
  arrow writer ceiling  the same N rows (same cached frame, columns and partitions) into a Python
                      Arrow sink that only drains them: a write's ceiling is everything but the sending
  batch write         N rows of `size`-byte bodies through df.write.format("orbitmq"), body only and
                      with every optional column (sharding_key, tags, keys, properties); both kinds
                      of write and their ceilings are warmed up once before they are measured
  stream latency      a processingTime 1 s query over a topic a live producer feeds at --rate msgs/s:
                      rows/s and the born timestamp -> sink delay p50/p99 (ms)

Each row's note has the run-queue wait of this process tree (the JVM, its Python workers and the
broker) during the phase, from /proc/PID/schedstat: the box is shared, so a low ratio with a high wait
says "starved", not "slow". It also has the CPU per row of the Spark side (JVM, Python workers, this
driver) and of the broker, and the cores each used. A write's note ends with its CPU-bound limit: the
ceiling's CPU per row over the write's Spark + broker CPU per row, the ratio a write could reach if the
cores the ceiling used were the only limit (the broker runs on the same cores; on a separate machine
it would not count), and the share of the write the broker ran or waited for a CPU (all its threads,
summed over its processes; near 1 per broker process: it never idled waiting for the sink, so the
write is broker-bound).
"""


def timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="orbitmq bench spark",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--queues", type=int, default=4, help="queues per topic on each broker (4)")
    parser.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="broker processes (`orbitmq serve --brokers N`); every topic has --queues on each (1)",
    )
    parser.add_argument(
        "--max-transfer",
        type=int,
        default=0,
        help="raise the broker's maxTransferCountOnMessageInMemory to N (and 4 MiB per pull) and read "
        "with pullBatchSize=N (default: RocketMQ's 32 messages / 256 KiB)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="interleaved ceiling/connector rounds")
    parser.add_argument("--skip-reads", action="store_true", help="only the write rows (and latency)")
    parser.add_argument("--skip-writes", action="store_true", help="only the read rows (and latency)")
    parser.add_argument("--rate", type=int, default=2000, help="live producer msgs/s for the latency row")
    parser.add_argument(
        "--latency-seconds", type=float, default=20.0, help="measured span of the latency row (0: skip)"
    )
    parser.add_argument(
        "--rocketmq-home",
        type=Path,
        default=None,
        help="also run the reads and writes against this Apache RocketMQ 4.9.x (rows '... (Apache "
        "RocketMQ)'; default $ORBITMQ_BENCH_ROCKETMQ_HOME, none: skipped)",
    )
    args = parser.parse_args(argv)
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
    where = f"{args.queues} queues"
    if args.brokers > 1:
        where += f" on each of {args.brokers} brokers"
    print(f"\norbitmq Spark connector, {n:,} messages of {size} B, {where}, local[2]{tuning}")
    # W7's target is a ratio to the Arrow ceiling of the same run (the box is shared and noisy): batch
    # reads against the read ceiling, availableNow streams against the streaming one (and, in the note,
    # the read ceiling too), each write against the writer ceiling with the same columns.
    print(f"{'path':<52}{'rows/s':>12}{'x ceiling':>11}  note")
    for name, rate, note in results:
        ceiling = ceiling_for(name, results)
        ratio = f"{rate / ceiling:.2f}" if ceiling and rate else "-"
        read_ceiling = ceiling_for(READ_CEILING, results) if name.startswith(AVAILABLE_NOW) else 0.0
        also = f"; {rate / read_ceiling:.2f}x the batch read ceiling" if read_ceiling and rate else ""
        print(f"{name:<52}{rate:>12,.0f}{ratio:>11}  {note}{also}")
    return 0


READ_CEILING = "arrow ceiling (Spark, pre-built batches -> noop)"
STREAM_CEILING = "arrow stream ceiling (availableNow, pre-built -> noop)"
AVAILABLE_NOW = "availableNow stream -> noop"
WRITE_CEILING = "arrow writer ceiling (Spark -> counting Arrow sink)"
WRITE_ALL_CEILING = "arrow writer ceiling, all columns"
FIRST_WRITE = "first orbitmq write of the session (~20k rows)"


def ceiling_for(name: str, results: list[tuple[str, float, str]]) -> float:
    """The mean of the warm rows of the ceiling that `name` is compared with (0: none applies)."""
    if name.startswith(("stream latency", "produce", "first orbitmq write")):
        return 0.0
    if name.startswith((AVAILABLE_NOW, STREAM_CEILING)):
        # A stream pays Spark's streaming machinery (query start, planning and commits through the
        # streaming runner, offset and commit logs) whatever its source; runs without the streaming
        # ceiling fall back to the read ceiling.
        stream = ceiling_for_named(STREAM_CEILING, results)
        return stream or ceiling_for_named(READ_CEILING, results)
    if name.startswith(("batch write, all columns", "arrow writer ceiling, all")):
        wanted = WRITE_ALL_CEILING
    elif name.startswith(("batch write", "arrow writer ceiling")):
        wanted = WRITE_CEILING
    else:
        wanted = READ_CEILING
    return ceiling_for_named(wanted, results)


def ceiling_for_named(wanted: str, results: list[tuple[str, float, str]]) -> float:
    """The mean of the warm rows named `wanted` (0: none)."""
    warm = [rate for n, rate, note in results if n == wanted and note.split(";")[0] == "warm"]
    return sum(warm) / len(warm) if warm else 0.0


def run(args: argparse.Namespace, workdir: Path) -> list[tuple[str, float, str]]:
    n, size = args.messages, args.size
    results: list[tuple[str, float, str]] = []
    broker_conf: dict[str, Any] = {}
    read_options = {"namesrv": "", "topic": "bench"}
    if args.max_transfer:
        broker_conf = {
            "maxTransferCountOnMessageInMemory": args.max_transfer,
            "maxTransferBytesOnMessageInMemory": 4 * 1024 * 1024,
        }
        read_options["pullBatchSize"] = str(args.max_transfer)
    extra_args = ["--brokers", str(args.brokers)] if args.brokers > 1 else []
    with start_serve(workdir, extra_args=extra_args, **broker_conf) as server:
        read_options["namesrv"] = server.address
        access = BrokerAccess([server.address], timeout_s=30)
        brokers = wait_for_brokers(access, args.brokers)
        topics = ("bench", "bench_out", "bench_all", "bench_live", "bench_warm")
        for topic in topics:
            for addr in brokers.values():
                access.run(access.api.create_topic(addr, topic, read_queue_nums=args.queues,
                                                   write_queue_nums=args.queues))  # fmt: skip
        while True:  # every topic routed, on every broker
            routes = access.topic_queues(topics)
            on_all = all(len(r.write_queues) == len(brokers) for r in routes.values())
            if len(routes) == len(topics) and on_all:
                break
            time.sleep(0.1)
        # The broker side is `orbitmq serve` and its broker processes (`--brokers N`).
        wait = TreeWait(server.pid)

        def measure(name: str, action: Any, note: str = "", rows: int = n) -> float:
            wait.start()
            started = time.perf_counter()
            said = action()  # an action may return a note of its own
            seconds = time.perf_counter() - started
            # A row over another count than N says so (W7 records it as the row's message count).
            counted = f"{rows:,} {ROWS_MEASURED}" if rows != n else ""
            notes = (note, said if isinstance(said, str) else "", wait.note(seconds, rows), counted)
            results.append((name, rows / seconds, "; ".join(x for x in notes if x)))
            return seconds

        # The broker's own batch-send rate (one process, no Spark): what a write could reach at most.
        measure(
            "produce (raw batch sends, setup)",
            lambda: produce(access, brokers, "bench", queues=args.queues, total=n, size=size),
        )
        if not args.skip_reads:
            measure("consume (raw: pull + Arrow decode, no Spark)", lambda: raw_consume(read_options, n))

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
        spark.dataSource.register(StreamCeilingSource)
        spark.dataSource.register(SinkCeiling)

        def ceiling() -> None:
            source = spark.read.format("arrow_ceiling").option("rows", str(n)).option("size", str(size))
            source.option("parts", str(args.queues)).load().write.format("noop").mode("overwrite").save()

        def batch_read() -> None:
            spark.read.format("orbitmq").options(**read_options).load().write.format("noop").mode(
                "overwrite"
            ).save()

        def available_now(source: str = "orbitmq") -> str:
            """An availableNow query from `source` (the connector, or the streaming ceiling) into noop."""
            checkpoint = workdir / f"checkpoint-{time.monotonic_ns()}"
            if source == "orbitmq":
                options = {**read_options, "startingOffsets": "earliest"}
            else:
                options = {"rows": str(n), "size": str(size), "parts": str(args.queues)}
            stream = spark.readStream.format(source).options(**options).load()
            query = (
                stream.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True).start()
            )  # fmt: skip
            query.awaitTermination()
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            rows = sum(p["numInputRows"] for p in progress)
            assert rows == n, (rows, n)
            # Spark's own figure: rows over the micro-batches' processing time (no query start).
            busy = sum(p["numInputRows"] / p["processedRowsPerSecond"] for p in progress)
            return f"engine {n / busy:,.0f}/s over {len(progress)} micro-batch(es)"

        def stream_ceiling() -> str:
            return available_now("arrow_stream_ceiling")

        # Read rows, the ceiling measured right before and after them (A/B interleaved, same minute).
        # Each kind of query runs once first: its first run starts Spark's Python workers for it.
        if not args.skip_reads:
            measure("batch read -> noop", batch_read, "first query of the session")
            measure(READ_CEILING, ceiling, "warm-up run")
            measure(STREAM_CEILING, stream_ceiling, "warm-up run")
            measure(AVAILABLE_NOW, available_now, "first stream of the session")
        for _ in range(0 if args.skip_reads else args.rounds):
            measure(READ_CEILING, ceiling, "warm")
            measure("batch read -> noop", batch_read, "warm")
            measure(STREAM_CEILING, stream_ceiling, "warm")
            measure(AVAILABLE_NOW, available_now, "wall incl. query start")

        frame: Any = None
        every_column = (
            "body",
            "concat('user', CAST(id % 64 AS STRING)) AS sharding_key",
            "'TagA' AS tags",
            "concat('k', CAST(id AS STRING)) AS keys",
            "map('n', CAST(id AS STRING), 'src', 'bench') AS properties",
        )
        if not args.skip_writes:
            frame = (
                spark.range(n).selectExpr(f"CAST(repeat('x', {size}) AS BINARY) AS body", "id")
                .repartition(args.queues)
            )  # fmt: skip
            frame = frame.cache()
            frame.count()

        def measure_writes() -> None:
            body_only = frame.select("body")
            all_columns = frame.selectExpr(*every_column)

            def writer(df: Any, topic: str) -> Any:
                return lambda: (
                    df.write.format("orbitmq")
                    .option("namesrv", server.address)
                    .option("topic", topic)
                    .mode("append")
                    .save()
                )

            def sink_ceiling(df: Any) -> Any:
                return lambda: df.write.format("arrow_sink_ceiling").mode("append").save()

            # The first write of each kind pays one-off costs (the orbitmq modules imported into Spark's
            # Python workers, routes looked up, the sink's planning/commit workers started): shown as rows
            # of their own, then every measured write is warm, like its ceiling.
            # The warm-up writes keep the measured writes' partitions (a `limit` runs one task: the other
            # Python worker would start up inside the first measured write).
            sink_ceiling(body_only)()
            sink_ceiling(all_columns)()
            sample = frame.sample(fraction=min(1.0, 20_000 / n), seed=1) if n > 20_000 else frame
            sampled = sample.count()
            for label, columns in (("body only", ("body",)), ("all columns", every_column)):
                start_up = writer(sample.selectExpr(*columns), "bench_warm")
                measure(FIRST_WRITE, start_up, f"start-up, {label}", rows=sampled)

            def write_pair(ceiling_name: str, ceiling_df: Any, name: str, write: Any, label: str) -> None:
                """The ceiling, then the write with the same columns; the write's note says what ratio the
                CPU alone allows: the ceiling's Spark CPU per row over the write's Spark + broker CPU per
                row (they share this box's cores; the broker's is what the ceiling does not do)."""
                measure(ceiling_name, sink_ceiling(ceiling_df), "warm")
                ceiling_spark = wait.last[0]
                measure(name, write, label)
                spark_us, broker_us = wait.last
                if spark_us + broker_us > 0:
                    # Near 1: the broker never waited for the sink (it ran or queued for a CPU all along).
                    bound = ceiling_spark / (spark_us + broker_us)
                    occupied = f"broker ran or queued {wait.broker_occupied:.2f} of the time"
                    row = results[-1]
                    results[-1] = (row[0], row[1], f"{row[2]}; cpu-bound limit {bound:.2f}x; {occupied}")

            for _ in range(args.rounds):
                write_pair(WRITE_CEILING, body_only, "batch write (Arrow writer, acked)",
                           writer(body_only, "bench_out"), "body only")  # fmt: skip
                write_pair(WRITE_ALL_CEILING, all_columns, "batch write, all columns (acked)",
                           writer(all_columns, "bench_all"), "all columns")  # fmt: skip
            for topic in ("bench_out", "bench_all"):
                stored = sum(
                    access.run(access.api.get_max_offset(addr, MessageQueue(topic, broker, q)))
                    for broker, addr in brokers.items()
                    for q in range(args.queues)
                )
                written = (
                    spark.read.format("orbitmq").option("namesrv", server.address).option("topic", topic)
                )
                read_back = written.load().count()
                assert stored == read_back == n * args.rounds, (topic, stored, read_back, n * args.rounds)

        if not args.skip_writes:
            measure_writes()

        if args.latency_seconds > 0:
            results.append(stream_latency(spark, server, args, workdir, wait, brokers=brokers))
        install = rocketmq_install(args.rocketmq_home)
        if isinstance(install, str):
            print(f"Apache RocketMQ rows skipped: {install}")
        else:
            from orbitmq.bench.spark_apache import apache_rows

            writes = (
                None
                if frame is None
                else {
                    "batch write (Arrow writer, acked)": frame.select("body"),
                    "batch write, all columns (acked)": frame.selectExpr(*every_column),
                }
            )
            try:
                results += apache_rows(
                    spark, install, workdir, messages=n, size=size, queues=args.queues, writes=writes
                )
            except Exception as exc:  # the reference broker's failure must not lose orbitmq's rows
                print(f"Apache RocketMQ rows failed: {type(exc).__name__}: {exc}")
        spark.stop()
        access.close()
    return results


def wait_for_brokers(access: BrokerAccess, count: int, timeout: float = 60.0) -> dict[str, str]:
    """The masters (name -> address) once `count` of them registered with the name server."""
    deadline = time.monotonic() + timeout
    while len(found := access.masters()) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(found)} of {count} brokers registered after {timeout:.0f} s: {found}")
        time.sleep(0.2)
    return found


def rocketmq_install(flag: Path | None) -> RocketMQInstall | str:
    """The Apache RocketMQ to run the reference rows against, or why there is none."""
    home = configured_home(flag)
    if home is None:
        return f"no Apache RocketMQ (--rocketmq-home or {ENV_HOME})"
    try:
        return find_install(home)
    except DriverUnavailable as exc:
        return str(exc)


if __name__ == "__main__":
    raise SystemExit(main())
