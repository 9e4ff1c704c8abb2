"""Property tests of the record codec, properties strings and batches."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.message.codec import (
    decode_batch,
    decode_properties,
    decode_record,
    decode_records,
    encode_batch,
    encode_properties,
    encode_record,
    iter_record_spans,
    pack_host,
    scan_record,
    tags_code,
)
from orbitmq.message.model import Message

INT = st.integers(-(2**31), 2**31 - 1)
LONG = st.integers(-(2**63), 2**63 - 1)
SEPARATORS = "\x01\x02"
prop_text = st.text(
    st.characters(blacklist_characters=SEPARATORS, blacklist_categories=("Cs",)), min_size=1, max_size=20
)
prop_maps = st.dictionaries(prop_text, prop_text, max_size=6)
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
ipv6 = st.binary(min_size=16, max_size=16).map(
    lambda b: ":".join(b[i : i + 2].hex() for i in range(0, 16, 2))
)
hosts = st.tuples(st.one_of(ipv4, ipv6), st.integers(0, 65535)).map(lambda hp: pack_host(*hp))
topics = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=127)


@st.composite
def records(draw: st.DrawFn) -> tuple[dict[str, object], dict[str, str]]:
    props = draw(prop_maps)
    args: dict[str, object] = {
        "queue_id": draw(INT),
        "flag": draw(INT),
        "queue_offset": draw(LONG),
        "physical_offset": draw(LONG),
        "sys_flag": draw(INT) & ~0x1,  # not compressed: the body is arbitrary bytes
        "born_timestamp": draw(LONG),
        "born_host": draw(hosts),
        "store_timestamp": draw(LONG),
        "store_host": draw(hosts),
        "reconsume_times": draw(INT),
        "prepared_transaction_offset": draw(LONG),
        "body": draw(st.binary(max_size=300)),
        "topic": draw(topics).encode(),
        "properties": encode_properties(props).encode(),
    }
    return args, props


@given(records())
def test_record_round_trip(case: tuple[dict[str, object], dict[str, str]]) -> None:
    args, props = case
    raw = encode_record(**args)
    msg = decode_record(raw)
    born = args["born_host"]
    store = args["store_host"]
    assert isinstance(born, bytes) and isinstance(store, bytes)
    assert msg.store_size == len(raw)
    assert msg.body == args["body"]
    assert msg.topic.encode() == args["topic"]
    assert msg.properties == props
    assert (msg.queue_id, msg.flag, msg.queue_offset, msg.commit_log_offset) == (
        args["queue_id"],
        args["flag"],
        args["queue_offset"],
        args["physical_offset"],
    )
    assert (msg.born_timestamp, msg.store_timestamp) == (args["born_timestamp"], args["store_timestamp"])
    assert (msg.reconsume_times, msg.prepared_transaction_offset) == (
        args["reconsume_times"],
        args["prepared_transaction_offset"],
    )
    expected_flag = (
        args["sys_flag"] & ~0x30 | (0x10 if len(born) == 20 else 0) | (0x20 if len(store) == 20 else 0)
    )
    assert msg.sys_flag == expected_flag
    assert msg.body_crc == zlib.crc32(args["body"]) & 0x7FFFFFFF
    offset = args["physical_offset"]
    assert isinstance(offset, int)
    assert msg.offset_msg_id == (store + offset.to_bytes(8, "big", signed=True)).hex().upper()
    # The scanner agrees with the decoder on a valid record.
    scanned = scan_record(raw, 0)
    assert scanned.kind == "message"
    assert (scanned.size, scanned.topic, scanned.queue_id, scanned.queue_offset) == (
        msg.store_size,
        msg.topic,
        msg.queue_id,
        msg.queue_offset,
    )
    assert (scanned.physical_offset, scanned.sys_flag, scanned.store_timestamp, scanned.born_timestamp) == (
        msg.commit_log_offset,
        msg.sys_flag,
        msg.store_timestamp,
        msg.born_timestamp,
    )
    assert scanned.properties == msg.properties
    assert scanned.tags_code == tags_code(msg.tags)
    assert (scanned.keys, scanned.uniq_key) == (msg.keys, msg.unique_id)


@given(st.lists(records(), min_size=1, max_size=5))
def test_concatenated_records_decode_in_order(cases: list[tuple[dict[str, object], dict[str, str]]]) -> None:
    raws = [encode_record(**args) for args, _ in cases]
    body = b"".join(raws)
    messages = decode_records(body)
    assert [m.body for m in messages] == [args["body"] for args, _ in cases]
    assert [size for _, size in iter_record_spans(body)] == [len(r) for r in raws]


@settings(max_examples=50)
@given(records())
def test_every_cut_of_a_valid_record_scans_as_invalid(case: tuple[dict[str, object], dict[str, str]]) -> None:
    raw = encode_record(**case[0])
    for cut in range(len(raw)):
        assert scan_record(raw[:cut], 0).kind == "invalid"


@given(st.binary(max_size=400), st.integers(-5, 405), st.booleans())
def test_scan_record_never_raises_on_arbitrary_bytes(data: bytes, pos: int, check_crc: bool) -> None:
    r = scan_record(data, pos, check_crc=check_crc, delay_levels_ms=[1000, 2000])
    assert r.kind in ("message", "blank", "invalid")


@given(records(), st.binary(min_size=1, max_size=8), st.data())
def test_scan_record_never_raises_on_damaged_records(
    case: tuple[dict[str, object], dict[str, str]], noise: bytes, data: st.DataObject
) -> None:
    raw = bytearray(encode_record(**case[0]))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at : at + len(noise)] = noise[: len(raw) - at]  # overwrite, never grow
    r = scan_record(bytes(raw), 0)
    assert r.kind in ("message", "blank", "invalid")  # noise may even spell the blank magic
    if r.kind == "message":
        assert r.size == len(raw)


@given(prop_maps)
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props


@given(st.text(max_size=60))
def test_properties_decode_never_raises(text: str) -> None:
    decoded = decode_properties(text)
    assert all(
        name and value and "\x02" not in name + value and "\x01" not in name
        for name, value in decoded.items()
    )


@given(st.lists(st.tuples(st.binary(max_size=100), INT, prop_maps), min_size=1, max_size=6))
def test_batch_round_trip(items: list[tuple[bytes, int, dict[str, str]]]) -> None:
    messages = [
        Message("BatchTopic", body, flag, {k: v for k, v in props.items() if k not in ("DELAY", "WAIT")})
        for body, flag, props in items
    ]
    entries = decode_batch(encode_batch(messages))
    assert [(e.flag, bytes(e.body), decode_properties(e.properties)) for e in entries] == [
        (m.flag, m.body, m.properties) for m in messages
    ]
