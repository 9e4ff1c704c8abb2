"""The column-at-a-time encoders equal the row-by-row ones: record fields read through Arrow views, and
the sink's batch entries built with Arrow compute. No JVM, no sockets."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from orbitmq.message.hashing import java_string_hash
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import decode_properties, encode_properties
from orbitmq.message.record_layout import encode_record
from orbitmq.spark.arrow_records import decode_batch, record_positions
from orbitmq.spark.sink import id_prefix, message_id
from orbitmq.spark.sink_entries import encode_entries, fill_entries, property_column, queue_plan


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


def _simple_rows(body: list[bytes], tags: list[str | None], keys: list[str | None]) -> pa.RecordBatch:
    columns = {"body": pa.array(body, pa.binary()), "tags": pa.array(tags, pa.string())}
    return pa.RecordBatch.from_pydict({**columns, "keys": pa.array(keys, pa.string())})


# Varying widths take Arrow's join; one width per piece (fixed-size bodies, the same tag, the same key
# length) takes the column-by-column fill, also over a slice of a larger batch (an Arrow offset).
@pytest.mark.parametrize(
    ("batch", "filled"),
    [
        (_simple_rows([b"one", b"", b"x" * 2000], ["TagA", None, ""], [None, "k1 k2", "k3"]), False),
        (
            _simple_rows([bytes([i]) * 700 for i in range(5)], ["TagA"] * 5, ["k1", "k2", "k3", "k4", "k5"]),
            True,
        ),
        (_simple_rows([b"ab", b"cd", b"efg", b"hi", b"jk"], ["T"] * 5, ["k"] * 5).slice(3, 2), True),
        (pa.RecordBatch.from_pydict({"body": pa.array([b"z" * 64] * 3, pa.binary())}), True),
    ],
)
def test_sink_entries_equal_the_row_encoding(batch: pa.RecordBatch, filled: bool) -> None:
    prefix = id_prefix("write", 3)
    if "tags" not in batch.schema.names:
        batch = batch.append_column("tags", pa.nulls(batch.num_rows, pa.string()))
        batch = batch.append_column("keys", pa.nulls(batch.num_rows, pa.string()))
    tags = batch.column("tags")
    pieces = [np.zeros((batch.num_rows, 20), np.uint8), batch.column("body"), property_column("TAGS", tags)]
    assert (fill_entries(pieces) is not None) == filled
    entries = encode_entries(batch, prefix, 40)
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


def _row_encoded(prefix: bytes, row: int, body: bytes, *, tags: Any, keys: Any, props: Any) -> bytes:
    """The row path's encoding of one row (sink._TaskSender._add_rows), as the reference."""
    properties: dict[str, str | None] = {}
    if props:
        properties.update(props)
    if tags:
        properties["TAGS"] = tags
    if keys:
        properties["KEYS"] = keys if isinstance(keys, str) else " ".join(k for k in keys if k)
    properties["UNIQ_KEY"] = message_id(prefix, row)
    encoded = encode_properties(properties).encode()
    head = struct.pack(">iiiii", 22 + len(body) + len(encoded), 0, 0, 0, len(body))
    return head + body + struct.pack(">h", len(encoded)) + encoded


def _entry_properties(entry: bytes) -> tuple[bytes, dict[str, str]]:
    body_len = struct.unpack_from(">i", entry, 16)[0]
    body = entry[20 : 20 + body_len]
    props_len = struct.unpack_from(">h", entry, 20 + body_len)[0]
    return body, decode_properties(entry[22 + body_len : 22 + body_len + props_len].decode())


def test_sink_entries_with_a_properties_map_and_array_keys_mean_what_the_rows_mean() -> None:
    prefix = id_prefix("w", 0)
    rows = [
        (b"a", "T1", ["k1", "", None, "k2"], [("color", "red"), ("TAGS", "lost"), ("n", None)]),
        (b"b", None, None, None),
        (b"c", "", [], [("TAGS", "kept"), ("KEYS", "kept too"), ("UNIQ_KEY", "never")]),
        (b"d", "T2", ["only"], []),
    ]
    batch = pa.RecordBatch.from_pydict(
        {
            "body": pa.array([r[0] for r in rows], pa.binary()),
            "tags": pa.array([r[1] for r in rows], pa.string()),
            "keys": pa.array([r[2] for r in rows], pa.list_(pa.string())),
            "properties": pa.array([r[3] for r in rows], pa.map_(pa.string(), pa.string())),
        }
    ).slice(0)
    entries = encode_entries(batch, prefix, 7).to_pylist()
    got = [_entry_properties(e) for e in entries]
    for entry in entries:  # a column that sets a property replaces the map's entry, never repeats it
        assert entry.count(b"TAGS\x01") <= 1 and entry.count(b"KEYS\x01") <= 1
        assert entry.count(b"UNIQ_KEY\x01") == 1
    want = [
        _entry_properties(
            _row_encoded(prefix, 7 + i, body, tags=tags, keys=keys, props=dict(props) if props else None)
        )
        for i, (body, tags, keys, props) in enumerate(rows)
    ]
    assert got == want
    assert got[0][1] == {"color": "red", "TAGS": "T1", "KEYS": "k1 k2", "UNIQ_KEY": message_id(prefix, 7)}
    assert got[2][1]["TAGS"] == "kept" and got[2][1]["UNIQ_KEY"] == message_id(prefix, 9)


def test_queue_plan_matches_the_row_path() -> None:
    keys = ["user1", None, "ключ", "user1", None, None, "", "x" * 40]
    topic_of_row = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    counts = [4, 3]
    plan, spread = queue_plan(topic_of_row, counts, pa.array(keys, pa.string()), 5, 2)
    expected, turn = [], 5
    for key, topic in zip(keys, topic_of_row.tolist(), strict=True):
        if key is not None:
            expected.append(abs(java_string_hash(key)) % counts[topic])
        else:
            expected.append((turn // 2) % counts[topic])
            turn += 1
    assert plan.tolist() == expected and spread == turn == 8
    no_keys, after = queue_plan(np.zeros(6, dtype=np.int64), [3], None, 0, 2)
    assert no_keys.tolist() == [0, 0, 1, 1, 2, 2] and after == 6
