"""HA frames: golden bytes from the fact sheet's layout (8.2), any chunking, broken headers."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.replication.frames import (
    OffsetReportDecoder,
    Transfer,
    TransferDecoder,
    continues_log,
    encode_offset_report,
    encode_transfer_header,
    transfer_start_offset,
)


def test_offset_report_is_one_big_endian_long() -> None:
    assert encode_offset_report(0x0102030405060708) == bytes.fromhex("0102030405060708")


def test_transfer_header_is_long_then_int() -> None:
    assert encode_transfer_header(1 << 32, 5) == bytes.fromhex("000000010000000000000005")


def test_report_decoder_keeps_only_the_newest_complete_report() -> None:
    decoder = OffsetReportDecoder()
    stream = encode_offset_report(10) + encode_offset_report(20) + encode_offset_report(30)[:3]
    assert decoder.feed(stream) == 20
    assert decoder.feed(b"") is None
    assert decoder.feed(encode_offset_report(30)[3:]) == 30


def test_report_decoder_refuses_negative_offsets() -> None:
    with pytest.raises(RemoteProtocolError):
        OffsetReportDecoder().feed(encode_offset_report(-1))


@given(
    frames=st.lists(st.tuples(st.integers(0, 2**62), st.binary(max_size=64)), max_size=8),
    cuts=st.lists(st.integers(0, 1000), max_size=10),
)
def test_transfer_decoder_gives_the_same_frames_for_every_chunking(
    frames: list[tuple[int, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(encode_transfer_header(o, len(d)) + d for o, d in frames)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    decoder = TransferDecoder()
    got: list[Transfer] = []
    for a, b in itertools.pairwise(points):
        got += decoder.feed(stream[a:b])
    assert got == [Transfer(o, d) for o, d in frames]


def test_heartbeat_is_an_empty_transfer() -> None:
    (frame,) = TransferDecoder().feed(encode_transfer_header(4096, 0))
    assert frame.is_heartbeat and frame.master_offset == 4096


@pytest.mark.parametrize("header", [encode_transfer_header(-5, 1), encode_transfer_header(0, -1)])
def test_broken_transfer_header_is_a_protocol_error(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        TransferDecoder().feed(header)


def test_oversized_transfer_is_refused_before_buffering() -> None:
    with pytest.raises(RemoteProtocolError):
        TransferDecoder(max_body=1024).feed(encode_transfer_header(0, 1025))


def test_new_slave_starts_at_the_masters_last_segment() -> None:
    assert transfer_start_offset(0, master_max_offset=2500, file_size=1000) == 2000
    assert transfer_start_offset(1200, master_max_offset=2500, file_size=1000) == 1200
    with pytest.raises(RemoteProtocolError):
        transfer_start_offset(2501, master_max_offset=2500, file_size=1000)


def test_slave_appends_only_what_continues_its_log() -> None:
    assert continues_log(0, Transfer(2000, b"x"))
    assert continues_log(2000, Transfer(2000, b"x"))
    assert not continues_log(1999, Transfer(2000, b"x"))
