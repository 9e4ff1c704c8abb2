"""The store's fast paths give exactly what the general code gives: dispatch_request_at vs scan_record,
KeyIndex.put_batch vs KeyIndex.put (same index bytes), key_hash_with_prefix vs index_key_hash, and the
recovery scan vs the record-by-record check (including torn tails)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.hashing import index_key_hash, java_string_hash
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.message.record import SCHEDULE_TOPIC, scan_record
from orbitmq.message.record_layout import encode_record
from orbitmq.store.dispatch import DispatchRequest, dispatch_request_at
from orbitmq.store.key_index import KeyIndex, key_hash_with_prefix, prefix_hash

DELAYS = [1000, 5000, 10000]


def _record(rng: random.Random, physical_offset: int) -> bytes:
    topic = rng.choice(["T", "BenchTopic", SCHEDULE_TOPIC, "%RETRY%g", "é中"])
    props: dict[str, str] = {}
    if rng.random() < 0.7:
        props["UNIQ_KEY"] = f"{rng.getrandbits(128):032X}"
    if rng.random() < 0.5:
        props["KEYS"] = rng.choice(["k1", "k1 k2", " a  b ", "é"])
    if rng.random() < 0.5:
        props["TAGS"] = rng.choice(["TagA", "", "x||y"])
    if rng.random() < 0.4:
        props["DELAY"] = rng.choice(["1", "3", "9", "0", "-1", "x"])
    return encode_record(
        queue_id=rng.randrange(8),
        flag=rng.randrange(4),
        queue_offset=rng.randrange(1 << 40),
        physical_offset=physical_offset,
        sys_flag=rng.choice([0, 0x4, 0x8, 0xC]),
        born_timestamp=1_700_000_000_000,
        born_host=rng.choice([pack_host("10.0.0.1", 4000), pack_host("::1", 4000)]),
        store_timestamp=1_700_000_000_000 + rng.randrange(10**6),
        store_host=rng.choice([pack_host("127.0.0.1", 10911), pack_host("::1", 10911)]),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=rng.randbytes(rng.randrange(0, 300)),
        topic=topic.encode(),
        properties=encode_properties(props).encode(),
    )


def test_dispatch_request_at_matches_scan_record() -> None:
    rng = random.Random(7)
    for i in range(400):
        raw = bytearray(_record(rng, i * 1000))
        if i % 5 == 0:  # damage something: a length, the magic, the topic length, or truncate
            what = rng.randrange(4)
            if what == 0:
                raw[0:4] = (len(raw) + rng.choice([-3, 5])).to_bytes(4, "big", signed=True)
            elif what == 1:
                raw[4] ^= 0xFF
            elif what == 2:
                raw = raw[: rng.randrange(8, len(raw))]
            else:
                raw[-3] ^= 0x40
        buf = b"\0" * 16 + bytes(raw)
        expected = scan_record(buf, 16, check_crc=False, delay_levels_ms=DELAYS)
        got = dispatch_request_at(buf, 16, 4242, DELAYS)
        if expected.kind != "message":
            assert got is None
            continue
        assert got == DispatchRequest(
            expected.topic,
            expected.queue_id,
            4242,
            expected.size,
            expected.tags_code,
            expected.store_timestamp,
            expected.queue_offset,
            expected.sys_flag,
            expected.keys,
            expected.uniq_key,
        )


def test_key_hash_with_prefix_matches_index_key_hash() -> None:
    rng = random.Random(11)
    alphabet = "aZ09-_é中\U0001f600"
    for i in range(3000):
        topic = rng.choice(["T", "BenchTopic", "é中"])
        key = rng.choice(
            [
                f"{rng.getrandbits(128):032X}",
                f"order-{i}",
                "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))),
                "x" * rng.randrange(250, 300),
                "é" * 32,
                "",
            ]
        )
        assert key_hash_with_prefix(prefix_hash(topic), key) == index_key_hash(f"{topic}#{key}")
    assert java_string_hash("hello") == 99162322  # Java's "hello".hashCode()
    for n in (0, 1, 8, 9, 31, 32, 33, 300, 1024, 1025, 2000):
        for text in ("7" * n, "é" * n, ("aé\U0001f600" * n)[:n]):
            assert java_string_hash(text) == _reference_hash(text)


def _reference_hash(text: str) -> int:
    """String.hashCode() the slow, obvious way: h = 31*h + unit over UTF-16 units, signed 32-bit."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@pytest.mark.parametrize("index_num", [5, 1000])
def test_put_batch_writes_the_same_index_as_put(tmp_path: Path, index_num: int) -> None:
    rng = random.Random(5)
    items = []
    for i in range(120):
        keys = [f"{rng.getrandbits(128):032X}"] + ([f"k{i}", "shared"] if i % 3 == 0 else [])
        items.append((rng.choice(["T", "U"]), keys, 1000 + i * 200, 1_700_000_000_000 + i * 1500))
    one = KeyIndex(str(tmp_path / "one"), 16, index_num, FakeClock(1_700_000_000_000))
    many = KeyIndex(str(tmp_path / "many"), 16, index_num, FakeClock(1_700_000_000_000))
    for topic, keys, offset, ts in items:
        one.put(topic, keys, offset, ts)
    for start in range(0, len(items), 7):
        many.put_batch(items[start : start + 7])
    assert len(one.files) == len(many.files) > (1 if index_num == 5 else 0)
    for a, b in zip(one.files, many.files, strict=True):
        a.write_header()
        b.write_header()
        assert a.mm[:] == b.mm[:]
    for topic, keys, offset, _ in items[-3:]:
        for key in keys:
            assert offset in many.query(topic, key, 64, 0, 2**62)
    one.close()
    many.close()
