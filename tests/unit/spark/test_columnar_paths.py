"""The column-at-a-time encoders equal the row-by-row ones: record fields read through Arrow views, and
the sink's batch entries built with Arrow compute. No JVM, no sockets."""

from __future__ import annotations

import struct

import pyarrow as pa

from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.message.record_layout import encode_record
from orbitmq.spark.arrow_records import decode_batch, record_positions
from orbitmq.spark.sink import _entries, id_prefix, message_id


def _record(i: int, body: bytes, topic: bytes, properties: bytes) -> bytes:
    return encode_record(
        queue_id=1, flag=0, queue_offset=i, physical_offset=100 * i, sys_flag=0, born_timestamp=1,
        born_host=pack_host("127.0.0.1", 1), store_timestamp=2, store_host=pack_host("127.0.0.1", 2),
        reconsume_times=0, prepared_transaction_offset=0, body=body, topic=topic, properties=properties,
    )  # fmt: skip


def test_spans_of_every_length_and_bad_utf8() -> None:
    bodies = [b"", b"a", b"x" * 12, b"y" * 13, bytes(range(256)) * 5]
    topics = [b"t", b"twelve_chars", b"thirteen_char", b"a-much-longer-topic-name", b"\xff\xfeodd"]
    props = [b"", b"TAGS\x01t", b"UNIQ_KEY\x01" + b"A" * 32, b"k\x01\xe2\x82", b"KEYS\x01a b"]
    buf = b"".join(_record(i, b, t, p) for i, (b, t, p) in enumerate(zip(bodies, topics, props, strict=True)))
    rows = decode_batch(buf, record_positions(buf), broker="b").to_pylist()
    assert [r["body"] for r in rows] == bodies
    assert [r["topic"] for r in rows] == [t.decode("utf-8", "replace") for t in topics]
    assert rows[1]["tags"] == "t" and rows[4]["keys"] == "a b" and rows[2]["msg_id"] == "A" * 32
    assert rows[3]["properties"] == [("k", b"\xe2\x82".decode("utf-8", "replace"))]


def test_sink_entries_equal_the_row_encoding() -> None:
    prefix = id_prefix("write", 3)
    batch = pa.RecordBatch.from_pydict(
        {
            "body": pa.array([b"one", b"", "x" * 2000], pa.binary()),
            "tags": pa.array(["TagA", None, ""], pa.string()),
            "keys": pa.array([None, "k1 k2", "k3"], pa.string()),
        }
    )
    entries = _entries(batch, prefix, 40)
    expected = []
    for i, (body, tags, keys) in enumerate(zip(*batch.to_pydict().values(), strict=True)):
        props: dict[str, str | None] = {}
        if tags:
            props["TAGS"] = tags
        if keys:
            props["KEYS"] = keys
        props["UNIQ_KEY"] = message_id(prefix, 40 + i)
        encoded = encode_properties(props).encode()
        head = struct.pack(">iiiii", 22 + len(body) + len(encoded), 0, 0, 0, len(body))
        expected.append(head + body + struct.pack(">h", len(encoded)) + encoded)
    assert entries.to_pylist() == expected
