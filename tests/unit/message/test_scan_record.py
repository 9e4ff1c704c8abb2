"""scan_record: recovery/dispatch view of a record position (fact sheet 6.7)."""

from __future__ import annotations

import mmap
import zlib

from orbitmq.message.codec import encode_properties, encode_record, pack_blank_into, pack_host, scan_record
from orbitmq.message.hashing import java_string_hash


def record(
    topic: str = "TopicTest",
    props: dict[str, str] | None = None,
    body: bytes = b"body",
    store_timestamp: int = 1000,
) -> bytes:
    return encode_record(
        queue_id=2,
        flag=0,
        queue_offset=9,
        physical_offset=4096,
        sys_flag=0,
        born_timestamp=500,
        born_host=pack_host("10.0.0.1", 1),
        store_timestamp=store_timestamp,
        store_host=pack_host("10.0.0.2", 10911),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        topic=topic.encode(),
        properties=encode_properties(props or {}).encode(),
    )


def test_a_message_with_its_dispatch_fields() -> None:
    raw = record(props={"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U"})
    r = scan_record(b"\0" * 10 + raw + b"\0" * 10, 10)
    assert r.kind == "message"
    assert r.size == len(raw)
    assert (r.topic, r.queue_id, r.queue_offset, r.physical_offset) == ("TopicTest", 2, 9, 4096)
    assert (r.store_timestamp, r.born_timestamp) == (1000, 500)
    assert r.tags_code == java_string_hash("TagA")
    assert (r.keys, r.uniq_key, r.delay_level) == ("k1 k2", "U", 0)
    assert r.body_pos == 10 + 88 and r.body_len == 4


def test_no_tags_means_tags_code_zero_and_negative_hashes_stay_negative() -> None:
    assert scan_record(record(), 0).tags_code == 0
    assert scan_record(record(props={"TAGS": "polygenelubricants"}), 0).tags_code == -2147483648


def test_blank_end_of_file_record() -> None:
    buf = bytearray(64)
    pack_blank_into(buf, 16, 48)
    r = scan_record(buf, 16)
    assert (r.kind, r.size) == ("blank", 48)


def test_zeros_garbage_and_truncation_are_invalid_never_errors() -> None:
    assert scan_record(bytes(4096), 0).kind == "invalid"
    assert scan_record(b"", 0).kind == "invalid"
    assert scan_record(b"\x00\x00\x00", 0).kind == "invalid"
    assert scan_record(record(), -1).kind == "invalid"
    assert scan_record(record(), 10_000).kind == "invalid"
    raw = record()
    for cut in range(len(raw)):
        assert scan_record(raw[:cut], 0).kind == "invalid", cut


def test_crc_mismatch_is_invalid_only_when_checking() -> None:
    raw = bytearray(record(body=b"payload"))
    raw[88] ^= 0xFF
    assert scan_record(raw, 0).kind == "invalid"
    assert scan_record(raw, 0, check_crc=False).kind == "message"


def test_length_fields_must_add_up_to_total_size() -> None:
    raw = bytearray(record())
    raw[84:88] = (5).to_bytes(4, "big")  # BODYLENGTH one too long
    assert scan_record(raw, 0, check_crc=False).kind == "invalid"
    raw = bytearray(record())
    raw[0:4] = (len(raw) - 1).to_bytes(4, "big")
    assert scan_record(raw, 0, check_crc=False).kind == "invalid"


def test_5x_v2_magic_is_invalid_for_a_4x_reader() -> None:
    raw = bytearray(record())
    raw[4:8] = bytes.fromhex("DAA320AB")
    assert scan_record(raw, 0).kind == "invalid"


def test_schedule_topic_tags_code_is_the_delivery_time() -> None:
    levels = [1000, 5000, 10000]
    raw = record("SCHEDULE_TOPIC_XXXX", {"DELAY": "2", "TAGS": "x"}, store_timestamp=7000)
    r = scan_record(raw, 0, delay_levels_ms=levels)
    assert (r.delay_level, r.tags_code) == (2, 12000)
    clamped = scan_record(
        record("SCHEDULE_TOPIC_XXXX", {"DELAY": "9"}, store_timestamp=7000), 0, delay_levels_ms=levels
    )
    assert clamped.tags_code == 17000
    # Without the level table, or on another topic, the tags hash stays.
    assert scan_record(raw, 0).tags_code == java_string_hash("x")
    other = scan_record(record("T", {"DELAY": "2", "TAGS": "x"}), 0, delay_levels_ms=levels)
    assert (other.delay_level, other.tags_code) == (2, java_string_hash("x"))
    bad = scan_record(record("SCHEDULE_TOPIC_XXXX", {"DELAY": "two"}), 0, delay_levels_ms=levels)
    assert (bad.kind, bad.delay_level) == ("message", 0)


def test_scans_an_mmap_and_leaves_it_closable() -> None:
    raw = record(props={"TAGS": "a"})
    mm = mmap.mmap(-1, 4096)
    mm[100 : 100 + len(raw)] = raw
    assert scan_record(mm, 100).kind == "message"
    assert scan_record(mm, 100 + len(raw)).kind == "invalid"
    mm.close()  # would raise BufferError if a view were still exported


def test_body_crc_field_is_reported() -> None:
    r = scan_record(record(body=b"abc"), 0)
    assert r.body_crc == zlib.crc32(b"abc") & 0x7FFFFFFF
