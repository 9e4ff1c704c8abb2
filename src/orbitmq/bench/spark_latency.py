"""W7's streaming latency row: a processingTime 1 s query over a topic a live producer feeds at a fixed
rate, each row's delay from its born timestamp to the sink (`orbitmq bench spark`, spark_bench.py)."""

from __future__ import annotations

import argparse
import struct
import threading
import time
from pathlib import Path
from typing import Any

from orbitmq.bench.spark_refs import ENTRY
from orbitmq.bench.spark_tree_wait import TreeWait
from orbitmq.spark.broker_access import BrokerAccess

ROWS_MEASURED = "rows measured"  # "<count> rows measured" in a note: the row's own count, not N


def _stop_between_batches(query: Any, patience: float = 10.0) -> None:
    """Stop a foreachBatch query while no micro-batch runs, if one ends within `patience` seconds.
    Interrupting a running foreachBatch makes Spark match its Py4J error text against a regex to tell
    an interruption from a failure, and on a long text that match overflows the JVM's stack (a
    StackOverflowError in the stream execution thread, printed at the end of the run)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and query.status.get("isTriggerActive"):
        time.sleep(0.05)
    query.stop()


def stream_latency(
    spark: Any,
    server: Any,
    args: argparse.Namespace,
    workdir: Path,
    wait: TreeWait,
    *,
    brokers: dict[str, str],
) -> tuple[str, float, str]:
    """A processingTime 1 s query over a topic fed live at `args.rate` msgs/s; each row's delay is
    (time it reached the sink, a foreachBatch in this driver) - (its born timestamp)."""
    access = BrokerAccess([server.address], timeout_s=30)
    stop = threading.Event()
    sent = [0]
    props = b"TAGS\x01live"
    per_tick = max(1, args.rate // 100)  # 100 batches a second
    body = b"x" * args.size
    entry = ENTRY.pack(22 + len(body) + len(props), 0, 0, 0, len(body)) + body
    entry += struct.pack(">h", len(props)) + props

    targets = [(broker, addr, q) for broker, addr in sorted(brokers.items()) for q in range(args.queues)]

    def producer() -> None:
        next_tick = time.monotonic()
        turn = 0
        while not stop.is_set():
            broker, addr, queue = targets[turn]
            header = {"a": "bench", "b": "bench_live", "c": "TBW102", "d": "4", "e": str(queue), "f": "0",
                      "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0", "k": "false",
                      "m": "true", "n": broker}  # fmt: skip
            resp = access.run(access.send_batch_raw(addr, header, entry * per_tick, 30.0))
            if resp.code == 0:
                sent[0] += per_tick
            turn = (turn + 1) % len(targets)
            next_tick += 0.01
            time.sleep(max(0.0, next_tick - time.monotonic()))

    delays: list[float] = []
    received = [0]
    warm_until = [0.0]

    def sink(batch_df: Any, batch_id: int) -> None:
        born = [r[0] for r in batch_df.selectExpr("unix_millis(born_timestamp)").collect()]
        now = time.time() * 1000
        received[0] += len(born)
        if time.monotonic() >= warm_until[0]:
            delays.extend(now - b for b in born)

    thread = threading.Thread(target=producer, name="live-producer", daemon=True)
    thread.start()
    query = (
        spark.readStream.format("orbitmq").option("namesrv", server.address).option("topic", "bench_live")
        .option("startingOffsets", "latest").load()
        .writeStream.foreachBatch(sink).option("checkpointLocation", str(workdir / "latency-checkpoint"))
        .trigger(processingTime="1 second").start()
    )  # fmt: skip
    try:
        warm_until[0] = time.monotonic() + 5.0  # query start and the first batches
        time.sleep(5.0)
        wait.start()
        rows_before, started = received[0], time.perf_counter()
        time.sleep(args.latency_seconds)
        wall = time.perf_counter() - started
        rows = received[0] - rows_before
    finally:
        stop.set()
        thread.join(10)
        _stop_between_batches(query)
        access.close()
    delays.sort()
    if not delays:
        return ("stream latency (processingTime 1 s, live producer)", 0.0, "no rows reached the sink")
    p50 = delays[len(delays) // 2]
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    note = (
        f"latency p50 {p50:.0f} ms p99 {p99:.0f} ms over {len(delays):,} rows; producer "
        f"{args.rate:,}/s; {wait.note(wall)}; {rows:,} {ROWS_MEASURED}"
    )
    return ("stream latency (processingTime 1 s, live producer)", rows / wall, note)
