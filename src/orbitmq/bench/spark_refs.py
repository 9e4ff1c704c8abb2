"""The references `orbitmq bench spark` measures the connector against: raw batch sends (`produce`),
pull + decode without Spark (`raw_consume`), and the Arrow ceilings (`CeilingSource`,
`StreamCeilingSource`, `SinkCeiling`). A module of its own, so Spark's Python workers import these
classes by name.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from orbitmq.message.hosts import pack_host
from orbitmq.message.record_layout import encode_record
from orbitmq.spark.arrow_records import ROW_DDL, decode_batch, record_positions
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.spark.options import parse_source_options
from orbitmq.spark.range_reader import read_range
from orbitmq.spark.source import OrbitBatchReader

ENTRY = struct.Struct(">iiiii")


def produce(
    access: BrokerAccess, brokers: Mapping[str, str], topic: str, *, queues: int, total: int, size: int
) -> float:
    """Fill `topic` with `total` messages over `queues` queues on each of `brokers` (name -> address),
    one sender per queue, all at once; returns messages/s."""
    per_batch = max(1, min(512, (3 * 1024 * 1024) // (size + 64)))
    body = b"x" * size
    props = b"TAGS\x01bench"
    entry = ENTRY.pack(22 + size + len(props), 0, 0, 0, size) + body + struct.pack(">h", len(props)) + props

    async def queue_worker(broker: str, addr: str, queue_id: int, count: int) -> None:
        sent = 0
        while sent < count:
            n = min(per_batch, count - sent)
            header = {"a": "bench", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
                      "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0", "k": "false",
                      "m": "true", "n": broker}  # fmt: skip
            resp = await access.send_batch_raw(addr, header, entry * n, 30.0)
            if resp.code != 0:
                raise RuntimeError(f"send failed: {resp.code} {resp.remark}")
            sent += n

    async def all_queues() -> None:
        targets = [(broker, addr, q) for broker, addr in sorted(brokers.items()) for q in range(queues)]
        share = [total // len(targets) + (1 if i < total % len(targets) else 0) for i in range(len(targets))]
        await asyncio.gather(*(queue_worker(*t, share[i]) for i, t in enumerate(targets)))

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


def _split(rows: int, parts: int) -> list[InputPartition]:
    """`rows` over `parts` partitions, every row in one (the first ones take the remainder)."""
    return [InputPartition(rows // parts + (1 if i < rows % parts else 0)) for i in range(parts)]


def _ready_batches(rows: int, size: int) -> Iterator[pa.RecordBatch]:
    template = _template_batch(min(65536, rows), size)
    remaining = rows
    while remaining > 0:
        n = min(template.num_rows, remaining)
        yield template.slice(0, n)
        remaining -= n


class CeilingReader(DataSourceReader):
    def __init__(self, rows: int, size: int, parts: int) -> None:
        self.rows, self.size, self.parts = rows, size, parts

    def partitions(self) -> list[InputPartition]:
        return _split(self.rows, self.parts)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _ready_batches(int(partition.value), self.size)


class StreamCeilingSource(DataSource):
    """The availableNow ceiling: a streaming source whose one micro-batch is the same ready batches. What
    Spark's streaming machinery costs a Python source (the query's start, its planning and commit calls
    through the streaming runner, the offset and commit logs) is in it, and nothing else."""

    @classmethod
    def name(cls) -> str:
        return "arrow_stream_ceiling"

    def schema(self) -> str:
        return ROW_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        opts = self.options
        return StreamCeilingReader(int(opts["rows"]), int(opts["size"]), int(opts["parts"]))


class StreamCeilingReader(DataSourceStreamReader):
    def __init__(self, rows: int, size: int, parts: int) -> None:
        self.rows, self.size, self.parts = rows, size, parts

    def initialOffset(self) -> dict[str, int]:
        return {"rows": 0}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, int]:
        return {"rows": self.rows}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        rows = end["rows"] - start["rows"]
        return _split(rows, self.parts) if rows else []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _ready_batches(int(partition.value), self.size)

    def commit(self, end: dict[str, int]) -> None:
        pass


class SinkCeiling(DataSource):
    """The Arrow writer ceiling: Spark hands Arrow batches to a Python sink that only counts rows."""

    @classmethod
    def name(cls) -> str:
        return "arrow_sink_ceiling"

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return CountingWriter()


class CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:  # the batches arrive and are dropped: Spark's side of a write, nothing else
            pass
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        pass
