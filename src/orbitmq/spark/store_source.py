"""`format("orbitmq-store")`: a broker's store directory read as a batch source, no broker running.

Works on any RocketMQ 4.x store directory (fact sheet 6); each commit-log segment is one Spark
partition, decoded into the broker source's row schema. Options: `path` (the store root or its
commitlog directory; required), `broker`, `topic`/`topics`, `checkCrc` (default true).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from orbitmq.message.record import scan_record
from orbitmq.message.record_layout import BLANK_MAGIC
from orbitmq.message.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.spark.arrow_records import ROW_DDL, decode_batch
from orbitmq.spark.options import parse_bool
from orbitmq.spark.source import _check_schema

CHUNK_BYTES = 32 * 1024 * 1024
# Far above any broker's maxMessageSize (4 MiB default): a larger TOTALSIZE is damage, not a record.
MAX_RECORD_BYTES = 64 * 1024 * 1024
BATCH_ROWS = 65536
_SEGMENT_NAME_LENGTH = 20
_NAMES = "path, broker, topic | topics, checkCrc"


@dataclass(frozen=True, slots=True)
class StoreOptions:
    commitlog_dir: str
    broker: str | None
    topics: frozenset[str] | None
    check_crc: bool


@dataclass(frozen=True, slots=True)
class SegmentSpec:
    """One commit-log segment of the store `options` names: a Spark partition."""

    path: str
    options: StoreOptions


def parse_store_options(options: Mapping[str, str]) -> StoreOptions:
    opts = {k.lower(): str(v) for k, v in options.items()}
    unknown = [k for k in opts if k not in ("path", "broker", "topic", "topics", "checkcrc")]
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for orbitmq-store; valid options: {_NAMES}")
    path = opts.get("path")
    if not path:
        raise ValueError("option 'path' is required: the store directory (or its commitlog directory)")
    root = Path(path)
    commitlog = root / "commitlog" if (root / "commitlog").is_dir() else root
    if not commitlog.is_dir():
        raise ValueError(f"{path} is not a store directory (no commitlog/ in it) nor a commitlog directory")
    if "topic" in opts and "topics" in opts:
        raise ValueError("set only one of 'topic' and 'topics'")
    names = opts.get("topic", opts.get("topics"))
    topics = frozenset(t.strip() for t in names.split(",") if t.strip()) if names is not None else None
    return StoreOptions(
        str(commitlog), opts.get("broker"), topics, parse_bool("checkCrc", opts.get("checkcrc", "true"))
    )


def segment_files(commitlog_dir: str) -> list[str]:
    """Commit-log segments in offset order (names are 20-digit start offsets; anything else ignored)."""
    names = [n for n in os.listdir(commitlog_dir) if len(n) == _SEGMENT_NAME_LENGTH and n.isdigit()]
    return [os.path.join(commitlog_dir, n) for n in sorted(names)]


def _consumable(sys_flag: int) -> bool:
    return sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


def read_segment(spec: SegmentSpec) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the valid, consumable records of one segment, in file order.

    The segment is read in chunks and each record checked with `message.record.scan_record`, as broker
    recovery does; reading stops at the end-of-file blank record or the first invalid record (the
    zero-filled tail of the active segment, or a torn write). Transaction PREPARED and ROLLBACK records
    are skipped, as they never reach a consume queue.
    """
    opts = spec.options
    with open(spec.path, "rb") as f:
        buf = b""
        base = 0  # file position of buf[0]
        finished = False
        while not finished:
            more = f.read(CHUNK_BYTES)
            at_eof = len(more) < CHUNK_BYTES
            buf = buf[base:] + more if base else buf + more
            base = 0
            positions: list[int] = []
            pos = 0
            end = len(buf)
            while True:
                if pos + 8 > end:
                    finished = at_eof
                    break
                total = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
                magic = int.from_bytes(buf[pos + 4 : pos + 8], "big")
                if magic == BLANK_MAGIC:
                    finished = True
                    break
                if not 0 < total <= MAX_RECORD_BYTES:
                    finished = True  # zeros (the unwritten tail) or a damaged length: stop here
                    break
                if pos + total > end and not at_eof:
                    break  # the record continues in the next chunk
                record = scan_record(buf, pos, check_crc=opts.check_crc)
                if record.kind != "message":
                    finished = True  # the unwritten tail, or the first damaged record: stop, as recovery does
                    break
                if _consumable(record.sys_flag) and (opts.topics is None or record.topic in opts.topics):
                    positions.append(pos)
                pos += record.size
                if len(positions) >= BATCH_ROWS:
                    yield decode_batch(buf, positions, broker=opts.broker)
                    positions = []
            if positions:
                yield decode_batch(buf, positions, broker=opts.broker)
            base = pos
            if at_eof:
                finished = True


class StoreDataSource(DataSource):
    """`format("orbitmq-store")`: commit-log segments of a store directory as rows (batch only)."""

    @classmethod
    def name(cls) -> str:
        return "orbitmq-store"

    def schema(self) -> str:
        return ROW_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_schema(schema)
        return StoreReader(parse_store_options(self.options))


class StoreReader(DataSourceReader):
    def __init__(self, options: StoreOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        return [InputPartition(SegmentSpec(path, opts)) for path in segment_files(opts.commitlog_dir)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        spec = partition.value
        if not isinstance(spec, SegmentSpec):
            return iter(())
        return read_segment(spec)
