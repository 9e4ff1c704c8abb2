"""Reading commit-log segments for `orbitmq-store` without Spark: blanks, damage, chunk edges. No JVM."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from orbitmq.message.hosts import pack_host
from orbitmq.message.record_layout import BLANK_MAGIC, encode_record
from orbitmq.spark import store_source
from orbitmq.spark.store_source import (
    SegmentSpec,
    StoreOptions,
    parse_store_options,
    read_segment,
    segment_files,
)


def rec(i: int, topic: bytes = b"t", sys_flag: int = 0) -> bytes:
    return encode_record(
        queue_id=0, flag=0, queue_offset=i, physical_offset=0, sys_flag=sys_flag, born_timestamp=1,
        born_host=pack_host("127.0.0.1", 1), store_timestamp=2, store_host=pack_host("127.0.0.1", 2),
        reconsume_times=0, prepared_transaction_offset=0, body=b"b%d" % i * 20, topic=topic, properties=b"",
    )  # fmt: skip


def rows(path: Path, topics: frozenset[str] | None = None) -> list[tuple[str, int]]:
    spec = SegmentSpec(str(path), StoreOptions(str(path.parent), "broker-a", topics, True))
    return [(r["topic"], r["queue_offset"]) for b in read_segment(spec) for r in b.to_pylist()]


def test_segment_with_blank_end_and_prepared_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_source, "CHUNK_BYTES", 300)  # records straddle chunk boundaries
    data = b"".join(rec(i) for i in range(5)) + rec(99, sys_flag=0x4) + rec(5, b"u")
    data += struct.pack(">iI", 1000, BLANK_MAGIC) + bytes(992)
    (tmp_path / "commitlog").mkdir()
    segment = tmp_path / "commitlog" / "00000000000000000000"
    segment.write_bytes(data)
    (tmp_path / "commitlog" / "not-a-segment").write_text("x")
    assert rows(segment) == [("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4), ("u", 5)]
    assert rows(segment, frozenset({"u"})) == [("u", 5)]
    assert segment_files(parse_store_options({"path": str(tmp_path)}).commitlog_dir) == [str(segment)]


def test_stops_at_the_first_damaged_record_and_at_zeros(tmp_path: Path) -> None:
    good = b"".join(rec(i) for i in range(3))
    damaged = bytearray(good + rec(3) + rec(4))
    damaged[len(good) + 100] ^= 0xFF  # body byte of record 3: its CRC no longer matches
    path = tmp_path / "00000000000000000000"
    path.write_bytes(bytes(damaged))
    assert rows(path) == [("t", 0), ("t", 1), ("t", 2)]
    path.write_bytes(good + bytes(4096))
    assert rows(path) == [("t", 0), ("t", 1), ("t", 2)]


def test_store_options_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'path' is required"):
        parse_store_options({})
    with pytest.raises(ValueError, match="not a store directory"):
        parse_store_options({"path": str(tmp_path / "missing")})
    with pytest.raises(ValueError, match="unknown option"):
        parse_store_options({"path": str(tmp_path), "topicz": "x"})
