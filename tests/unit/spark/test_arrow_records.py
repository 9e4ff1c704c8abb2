"""Records decoded into Arrow batches: every column, compressed bodies, IPv6 hosts, Spark's schema. No JVM."""

from __future__ import annotations

import zlib

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import decode_properties
from orbitmq.message.record_layout import encode_record
from orbitmq.spark import arrow_records
from orbitmq.spark.arrow_records import ARROW_SCHEMA, decode_batch, record_positions, record_starts


def record(
    i: int,
    *,
    properties: str = "",
    body: bytes = b"",
    sys_flag: int = 0,
    born: bytes = pack_host("10.1.2.3", 4000),
    store: bytes = pack_host("127.0.0.1", 10911),
) -> bytes:
    return encode_record(
        queue_id=i % 4, flag=0, queue_offset=100 + i, physical_offset=5000 + 1000 * i, sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000 + i, born_host=born, store_timestamp=1_700_000_001_000 + i,
        store_host=store, reconsume_times=i % 2, prepared_transaction_offset=0,
        body=body or f"body-{i}".encode(), topic=b"orders", properties=properties.encode(),
    )  # fmt: skip


def test_columns_of_plain_records() -> None:
    buf = record(0, properties="TAGS\x01a\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01ABC\x02x\x01y") + record(
        1, properties="bad\x02\x01novalue\x02ok\x01v\x01w"
    )
    batch = decode_batch(buf, record_positions(buf), broker="broker-a")
    assert batch.schema.equals(ARROW_SCHEMA)
    first, second = batch.to_pylist()
    assert (first["topic"], first["broker"], first["queue_id"], first["queue_offset"]) == (
        "orders",
        "broker-a",
        0,
        100,
    )
    assert (first["body"], first["tags"], first["keys"], first["msg_id"]) == (b"body-0", "a", "k1 k2", "ABC")
    assert dict(first["properties"]) == {"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "ABC", "x": "y"}
    assert first["born_host"] == "10.1.2.3:4000" and first["store_host"] == "127.0.0.1:10911"
    assert first["born_timestamp"].timestamp() == 1_700_000_000.0
    assert first["store_timestamp"].timestamp() == 1_700_000_001.0
    # Java's rules: segments without name or value are dropped, a value may contain U+0001.
    assert dict(second["properties"]) == {"ok": "v\x01w"}
    assert second["tags"] is None and second["reconsume_times"] == 1
    # No UNIQ_KEY: the broker's offset message id (store host + commit-log offset, uppercase hex).
    assert second["msg_id"] == (pack_host("127.0.0.1", 10911) + (6000).to_bytes(8, "big")).hex().upper()


def test_compressed_bodies_and_ipv6_hosts() -> None:
    plain = b"x" * 5000
    buf = record(0, body=zlib.compress(plain), sys_flag=0x1 | 0x300) + record(
        1, born=pack_host("::1", 7), store=pack_host("fe80::2", 10911)
    )
    rows = decode_batch(buf, record_positions(buf), broker=None).to_pylist()
    assert rows[0]["body"] == plain
    assert rows[0]["broker"] is None
    assert rows[1]["born_host"] == "[::1]:7" and rows[1]["store_host"] == "[fe80::2]:10911"
    assert len(rows[1]["msg_id"]) == 56


def test_empty_and_broken_input() -> None:
    assert decode_batch(b"", [], broker="b").num_rows == 0
    with pytest.raises(RemoteProtocolError, match="malformed"):
        record_positions(b"\x00" * 100)
    with pytest.raises(RemoteProtocolError, match="truncated"):
        record_positions(record(0)[:50])


def test_matches_the_schema_spark_derives_from_the_ddl() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import (
        BinaryType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )  # fmt: skip

    s, i, n, t = StringType(), IntegerType(), LongType(), TimestampType()
    spark_schema = StructType(
        [StructField(n, d) for n, d in [
            ("topic", s), ("broker", s), ("queue_id", i), ("queue_offset", n), ("body", BinaryType()),
            ("tags", s), ("keys", s), ("properties", MapType(s, s)), ("msg_id", s), ("born_timestamp", t),
            ("store_timestamp", t), ("born_host", s), ("store_host", s), ("reconsume_times", i)]]
    )  # fmt: skip
    assert to_arrow_schema(spark_schema, timezone="UTC").equals(ARROW_SCHEMA)
    assert isinstance(ARROW_SCHEMA.field("properties").type, pa.MapType)


def test_tag_expressions() -> None:
    from orbitmq.spark.range_reader import tag_set

    assert tag_set("*") is None
    assert tag_set(" ") is None
    assert tag_set("TagA || TagB") == frozenset({"TagA", "TagB"})


def test_evenly_spaced_records_decode_as_unevenly_spaced_ones() -> None:
    """Same-size records are found without a walk and their headers read as a strided view; the rows
    equal those of the copying path (records of varied sizes), field by field, for several hosts."""
    hosts = [pack_host("10.0.0.1", 1), pack_host("10.0.0.2", 2), pack_host("10.0.0.1", 1)]
    tail = ["PADDING\x01xxxx\x02" if i % 2 == 0 else f"UNIQ_KEY\x01U{i:02d}\x02" for i in range(7)]
    same = [
        record(i, properties="TAGS\x01t\x02" + tail[i], body=b"%04d" % i, born=hosts[i % 3],
               store=hosts[(i + 1) % 3])
        for i in range(7)
    ]  # fmt: skip
    even = b"".join(same)
    assert len({len(r) for r in same}) == 1
    starts = record_starts(even)
    assert starts.tolist() == record_positions(even)
    odd = record(99, body=b"a longer body than the others")
    uneven = b"".join(same[:3]) + odd + b"".join(same[3:])
    assert record_starts(uneven).tolist() == record_positions(uneven)
    fast = decode_batch(even, starts, broker="b").to_pylist()
    slow = decode_batch(uneven, record_positions(uneven), broker="b").to_pylist()
    del slow[3]
    assert fast == slow
    assert [r["queue_offset"] for r in fast] == list(range(100, 107))
    assert [r["born_host"] for r in fast] == ["10.0.0.1:1", "10.0.0.2:2", "10.0.0.1:1"] * 2 + ["10.0.0.1:1"]
    assert fast[1]["msg_id"] == "U01"
    assert fast[0]["msg_id"] == (hosts[1] + (5000).to_bytes(8, "big")).hex().upper()


def test_evenly_spaced_walk_still_refuses_a_bad_record() -> None:
    recs = [record(i, body=b"same") for i in range(4)]
    bad = bytearray(b"".join(recs))
    bad[len(recs[0]) * 2 + 4] ^= 0xFF  # the third record's magic
    with pytest.raises(RemoteProtocolError):
        record_starts(bytes(bad))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab\x01\x02", max_size=12), max_size=8))
def test_properties_column_decodes_as_java_does(texts: list[str]) -> None:
    # Each row's map, read with the last value winning (as map_lookup "last" does), is what
    # decode_properties (Java's string2messageProperties) makes of the same string.
    column = arrow_records._properties(pa.array(texts, pa.string()), len(texts))
    assert [dict(row) for row in column.to_pylist()] == [decode_properties(t) for t in texts]
