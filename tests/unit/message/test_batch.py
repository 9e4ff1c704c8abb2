"""SEND_BATCH_MESSAGE body (fact sheet 5.9): golden bytes, decode back, malformed input."""

from __future__ import annotations

import pytest

from orbitmq.common.errors import ClientError
from orbitmq.message.codec import BatchEntry, decode_batch, encode_batch
from orbitmq.message.model import Message


def entry_bytes(flag: int, body: bytes, props: bytes) -> bytes:
    return (
        (22 + len(body) + len(props)).to_bytes(4, "big")  # TOTALSIZE
        + bytes(4)  # MAGICCODE 0
        + bytes(4)  # BODYCRC 0
        + flag.to_bytes(4, "big")
        + len(body).to_bytes(4, "big")
        + body
        + len(props).to_bytes(2, "big")
        + props
    )


def test_golden_bytes() -> None:
    first = Message("T", b"ab", 0, {"UNIQ_KEY": "U1"})
    second = Message("T", b"xyz", 7, {"TAGS": "t", "UNIQ_KEY": "U2"})
    encoded = encode_batch([first, second])
    assert encoded == entry_bytes(0, b"ab", b"UNIQ_KEY\x01U1") + entry_bytes(
        7, b"xyz", b"TAGS\x01t\x02UNIQ_KEY\x01U2"
    )
    assert encoded[:24] == bytes.fromhex("00000023000000000000000000000000000000026162000b")


def test_decode_gives_views_and_property_strings() -> None:
    body = entry_bytes(0, b"ab", b"UNIQ_KEY\x01U1") + entry_bytes(7, b"", b"")
    entries = decode_batch(body)
    assert entries == [BatchEntry(0, memoryview(b"ab"), "UNIQ_KEY\x01U1"), BatchEntry(7, memoryview(b""), "")]
    assert isinstance(entries[0].body, memoryview)
    assert entries[0].body.obj is body  # a view into the request body, not a copy


def test_batch_rules_are_client_errors() -> None:
    with pytest.raises(ClientError, match="at least one"):
        encode_batch([])
    with pytest.raises(ClientError, match="same topic"):
        encode_batch([Message("A", b"1"), Message("B", b"2")])
    with pytest.raises(ClientError, match="delay"):
        encode_batch([Message.create("A", b"1", delay_level=2)])
    with pytest.raises(ClientError, match="retry"):
        encode_batch([Message("%RETRY%g", b"1")])
    wait_off = Message("A", b"2")
    wait_off.wait_store_msg_ok = False
    with pytest.raises(ClientError, match="WAIT"):
        encode_batch([Message("A", b"1"), wait_off])
    with pytest.raises(ClientError, match="32767"):
        encode_batch([Message("A", b"1", 0, {"k": "v" * 40000})])


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty"),
        (bytes(10), "truncated"),
        (entry_bytes(0, b"ab", b"p\x01q")[:-1], "past the end"),
        ((999).to_bytes(4, "big") + entry_bytes(0, b"ab", b"")[4:], "TOTALSIZE"),
        (bytes(16) + (2**31 - 1).to_bytes(4, "big") + bytes(4), "body length"),
        (bytes(16) + (-5).to_bytes(4, "big", signed=True) + bytes(4), "body length"),
        (entry_bytes(0, b"", b"\xff\xfe"), "UTF-8"),
        (entry_bytes(0, b"a", b"") + b"\x00", "truncated"),
    ],
)
def test_malformed_batches_are_client_errors(body: bytes, reason: str) -> None:
    with pytest.raises(ClientError, match=reason):
        decode_batch(body)


def test_negative_properties_length_is_rejected() -> None:
    raw = bytearray(entry_bytes(0, b"a", b""))
    raw[21:23] = (-1).to_bytes(2, "big", signed=True)
    with pytest.raises(ClientError, match="properties length"):
        decode_batch(bytes(raw))
