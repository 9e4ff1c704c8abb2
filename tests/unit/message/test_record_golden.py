"""Golden bytes of the 4.x commit-log record, built field by field from the fact sheet's layout table
(5.1), compared with pack_record_into / encode_record and decoded back."""

from __future__ import annotations

import mmap
import zlib

import pytest

from orbitmq.common.errors import ClientError, RemoteProtocolError
from orbitmq.message.codec import (
    MESSAGE_MAGIC,
    decode_record,
    decode_records,
    encode_properties,
    encode_record,
    iter_record_spans,
    pack_blank_into,
    pack_host,
    pack_record_into,
    record_body,
    record_properties,
    record_size,
    record_topic,
    unpack_record_header,
)
from orbitmq.message.sysflag import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG


def be(value: int, width: int) -> bytes:
    return value.to_bytes(width, "big", signed=True)


BODY = b"Hello RocketMQ"
TOPIC = b"TopicTest"
PROPS = "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x017F0000010F2A18B4AAC2000000000000"


def hand_record(*, born_ip: bytes, store_ip: bytes, sys_flag: int) -> bytes:
    """The table of fact sheet 5.1, row by row."""
    props = PROPS.encode()
    born_host = born_ip + be(51234, 4)
    store_host = store_ip + be(10911, 4)
    rest = (
        be(0x7FFF_FFFF & zlib.crc32(BODY), 4)  # 3 BODYCRC
        + be(3, 4)  # 4 QUEUEID
        + be(0x55, 4)  # 5 FLAG
        + be(42, 8)  # 6 QUEUEOFFSET
        + be(1_073_741_824 + 1000, 8)  # 7 PHYSICALOFFSET
        + be(sys_flag, 4)  # 8 SYSFLAG
        + be(1_700_000_000_123, 8)  # 9 BORNTIMESTAMP
        + born_host  # 10 BORNHOST
        + be(1_700_000_000_456, 8)  # 11 STORETIMESTAMP
        + store_host  # 12 STOREHOSTADDRESS
        + be(2, 4)  # 13 RECONSUMETIMES
        + be(777, 8)  # 14 PREPARED_TRANSACTION_OFFSET
        + be(len(BODY), 4)  # 15 BODYLENGTH
        + BODY  # 16 BODY
        + be(len(TOPIC), 1)  # 17 TOPICLENGTH
        + TOPIC  # 18 TOPIC
        + be(len(props), 2)  # 19 PROPERTIESLENGTH
        + props  # 20 PROPERTIES
    )
    total = 8 + len(rest)
    return be(total, 4) + (0xDAA320A7).to_bytes(4, "big") + rest  # 1 TOTALSIZE, 2 MAGICCODE


def pack_args(born: tuple[str, int], store: tuple[str, int], sys_flag: int = 0) -> dict[str, object]:
    return {
        "queue_id": 3,
        "flag": 0x55,
        "queue_offset": 42,
        "physical_offset": 1_073_741_824 + 1000,
        "sys_flag": sys_flag,
        "born_timestamp": 1_700_000_000_123,
        "born_host": pack_host(*born),
        "store_timestamp": 1_700_000_000_456,
        "store_host": pack_host(*store),
        "reconsume_times": 2,
        "prepared_transaction_offset": 777,
        "body": BODY,
        "topic": TOPIC,
        "properties": PROPS.encode(),
    }


V4_EXPECTED = hand_record(born_ip=bytes([10, 0, 0, 7]), store_ip=bytes([192, 168, 0, 1]), sys_flag=0)
V6_EXPECTED = hand_record(
    born_ip=bytes.fromhex("20010db8000000000000000000000001"),
    store_ip=bytes.fromhex("fe800000000000000000000000000002"),
    sys_flag=BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG,
)


def test_ipv4_record_matches_the_layout_table() -> None:
    args = pack_args(("10.0.0.7", 51234), ("192.168.0.1", 10911))
    assert encode_record(**args) == V4_EXPECTED
    assert len(V4_EXPECTED) == 91 + len(BODY) + len(TOPIC) + len(PROPS.encode())
    # The fact sheet's handy fixed positions.
    assert V4_EXPECTED[20:28] == be(42, 8)
    assert V4_EXPECTED[28:36] == be(1_073_741_824 + 1000, 8)
    assert V4_EXPECTED[36:40] == be(0, 4)
    assert V4_EXPECTED[56:64] == be(1_700_000_000_456, 8)
    assert V4_EXPECTED[88 : 88 + len(BODY)] == BODY


def test_ipv6_record_matches_the_layout_table_and_sets_the_v6_bits() -> None:
    # sys_flag 0 given: the host sizes decide the IPv6 bits.
    args = pack_args(("2001:db8::1", 51234), ("fe80::2", 10911), sys_flag=0)
    assert encode_record(**args) == V6_EXPECTED
    assert len(V6_EXPECTED) == len(V4_EXPECTED) + 24
    assert V6_EXPECTED[56 + 12 : 64 + 12] == be(1_700_000_000_456, 8)
    assert V6_EXPECTED[88 + 24 : 88 + 24 + len(BODY)] == BODY


def test_mixed_hosts_shift_only_what_follows_the_v6_host() -> None:
    args = pack_args(("10.0.0.7", 51234), ("::1", 10911))
    record = encode_record(**args)
    assert int.from_bytes(record[36:40], "big") == STOREHOSTADDRESS_V6_FLAG
    assert record[56:64] == be(1_700_000_000_456, 8)
    assert len(record) == record_size(len(BODY), len(TOPIC), len(PROPS.encode()), False, True)
    assert decode_record(record).store_host == "[::1]:10911"


@pytest.mark.parametrize("expected", [V4_EXPECTED, V6_EXPECTED], ids=["ipv4", "ipv6"])
def test_pack_record_into_writes_at_a_position_of_bytearray_mmap_and_memoryview(expected: bytes) -> None:
    v6 = expected is V6_EXPECTED
    args = (
        pack_args(("2001:db8::1", 51234), ("fe80::2", 10911))
        if v6
        else pack_args(("10.0.0.7", 51234), ("192.168.0.1", 10911))
    )
    target = bytearray(1000)
    assert pack_record_into(target, 100, **args) == len(expected)
    assert target[100 : 100 + len(expected)] == expected
    assert target[:100] == bytes(100) and not any(target[100 + len(expected) :])

    with mmap.mmap(-1, 4096) as mm:
        assert pack_record_into(mm, 7, **args) == len(expected)
        assert mm[7 : 7 + len(expected)] == expected

    view = memoryview(bytearray(len(expected) + 5))
    pack_record_into(view, 5, **args)
    assert view[5:].tobytes() == expected


def test_decode_gives_back_every_field() -> None:
    for expected, born, store, flags in (
        (V4_EXPECTED, "10.0.0.7:51234", "192.168.0.1:10911", 0),
        (V6_EXPECTED, "[2001:db8::1]:51234", "[fe80::2]:10911", 0x30),
    ):
        msg = decode_record(expected)
        assert msg.topic == "TopicTest"
        assert msg.body == BODY
        assert msg.flag == 0x55
        assert msg.properties == {
            "TAGS": "TagA",
            "KEYS": "k1 k2",
            "UNIQ_KEY": "7F0000010F2A18B4AAC2000000000000",
        }
        assert msg.tags == "TagA" and msg.key_list == ["k1", "k2"]
        assert (msg.queue_id, msg.queue_offset, msg.commit_log_offset) == (3, 42, 1_073_741_824 + 1000)
        assert msg.store_size == len(expected)
        assert msg.sys_flag == flags
        assert (msg.born_timestamp, msg.store_timestamp) == (1_700_000_000_123, 1_700_000_000_456)
        assert (msg.born_host, msg.store_host) == (born, store)
        assert msg.reconsume_times == 2 and msg.prepared_transaction_offset == 777
        assert msg.body_crc == zlib.crc32(BODY) & 0x7FFFFFFF
        assert msg.msg_id == "7F0000010F2A18B4AAC2000000000000"  # UNIQ_KEY wins over the offset id
    assert decode_record(V4_EXPECTED).offset_msg_id == "C0A8000100002A9F00000000400003E8"
    assert (
        decode_record(V6_EXPECTED).offset_msg_id == "FE80000000000000000000000000000200002A9F00000000400003E8"
    )


def test_decode_records_walks_concatenated_records_and_the_span_iterator_agrees() -> None:
    body = V4_EXPECTED + V6_EXPECTED + V4_EXPECTED
    messages = decode_records(body)
    assert [m.store_size for m in messages] == [len(V4_EXPECTED), len(V6_EXPECTED), len(V4_EXPECTED)]
    assert [m.born_host for m in messages] == ["10.0.0.7:51234", "[2001:db8::1]:51234", "10.0.0.7:51234"]
    spans = list(iter_record_spans(body))
    assert spans == [
        (0, len(V4_EXPECTED)),
        (len(V4_EXPECTED), len(V6_EXPECTED)),
        (len(V4_EXPECTED) + len(V6_EXPECTED), len(V4_EXPECTED)),
    ]
    pos = spans[1][0]
    assert record_topic(body, pos) == "TopicTest"
    assert bytes(record_body(body, pos)) == BODY
    assert record_properties(body, pos) == PROPS
    header = unpack_record_header(body, pos)
    assert (
        header.magic == MESSAGE_MAGIC and header.total_size == len(V6_EXPECTED) and header.end == spans[2][0]
    )
    assert decode_records(b"") == []


def test_decode_rejects_malformed_records_with_a_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError, match="truncated"):
        decode_records(V4_EXPECTED[:-1])
    with pytest.raises(RemoteProtocolError):
        decode_records(V4_EXPECTED + V4_EXPECTED[:50])
    bad_magic = V4_EXPECTED[:4] + b"\0\0\0\0" + V4_EXPECTED[8:]
    with pytest.raises(RemoteProtocolError, match="magic"):
        decode_record(bad_magic)
    bad_size = be(len(V4_EXPECTED) - 1, 4) + V4_EXPECTED[4:-1]
    with pytest.raises(RemoteProtocolError):
        decode_record(bad_size)
    with pytest.raises(RemoteProtocolError):
        list(iter_record_spans(bad_magic))


def test_compressed_body_is_inflated_on_decode_unless_asked_not_to() -> None:
    plain = b"x" * 5000
    args = pack_args(("10.0.0.7", 1), ("10.0.0.8", 2), sys_flag=0x1 | 0x300)
    args["body"] = zlib.compress(plain, 5)
    record = encode_record(**args)
    assert decode_record(record).body == plain
    assert decode_record(record, decompress=False).body == args["body"]
    assert decode_record(record).sys_flag == 0x301
    args["body"] = b"not zlib"
    with pytest.raises(RemoteProtocolError, match="corrupt"):
        decode_record(encode_record(**args))


def test_limits_and_bad_hosts_are_client_errors() -> None:
    args = pack_args(("10.0.0.7", 1), ("10.0.0.8", 2))
    with pytest.raises(ClientError, match="127"):
        encode_record(**{**args, "topic": b"t" * 128})
    encode_record(**{**args, "topic": b"t" * 127})
    with pytest.raises(ClientError, match="32767"):
        encode_record(**{**args, "properties": b"p" * 32768})
    assert decode_record(encode_record(**{**args, "properties": b"a\x01" + b"p" * 32765})).properties == {
        "a": "p" * 32765
    }
    with pytest.raises(ClientError, match="8 or 20"):
        encode_record(**{**args, "born_host": b"\0" * 7})
    with pytest.raises(ValueError, match="does not fit"):
        pack_record_into(bytearray(50), 0, **args)


def test_blank_record_is_total_size_and_blank_magic() -> None:
    buf = bytearray(16)
    assert pack_blank_into(buf, 4, 1234) == 8
    assert bytes(buf) == bytes(4) + be(1234, 4) + bytes.fromhex("CBD43194") + bytes(4)


def test_body_crc_can_be_given() -> None:
    args = pack_args(("10.0.0.7", 1), ("10.0.0.8", 2))
    record = encode_record(**{**args, "body_crc": 12345})
    assert decode_record(record).body_crc == 12345
    assert encode_properties({}) == ""
