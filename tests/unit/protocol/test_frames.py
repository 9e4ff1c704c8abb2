"""FrameDecoder against the frame layout of fact sheet 1.1."""

import struct

import pytest

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.protocol.frames import DEFAULT_MAX_FRAME_SIZE, FrameDecoder


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> bytes:
    return (
        struct.pack(">i", 4 + len(header) + len(body))
        + struct.pack(">I", (serialize_type << 24) | len(header))
        + header
        + body
    )


def test_two_frames_in_one_chunk_and_prefix_stripped() -> None:
    a = frame(b'{"code":1}', b"body")
    b = frame(b"\x00" * 21, b"", 1)
    decoder = FrameDecoder()
    assert decoder.feed(a + b) == [a[4:], b[4:]]
    assert decoder.buffered == 0


def test_byte_by_byte() -> None:
    a = frame(b"{}", b"xyz")
    decoder = FrameDecoder()
    out: list[bytes] = []
    for i in range(len(a) * 2):
        out += decoder.feed((a + a)[i : i + 1])
    assert out == [a[4:], a[4:]]


def test_partial_tail_kept_across_feeds() -> None:
    a = frame(b"{}", b"0123456789")
    decoder = FrameDecoder()
    assert decoder.feed(a + a[:7]) == [a[4:]]
    assert decoder.buffered == 7
    assert decoder.feed(memoryview(a)[7:]) == [a[4:]]
    assert decoder.buffered == 0


def test_default_max_frame_is_16_mib_checked_on_length_plus_4() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 16777216
    ok = FrameDecoder(max_frame_size=100)
    assert ok.feed(struct.pack(">iI", 96, 0)) == []  # 96 + 4 == 100 is allowed
    too_big = FrameDecoder(max_frame_size=100)
    with pytest.raises(RemoteProtocolError):
        too_big.feed(struct.pack(">i", 97))


@pytest.mark.parametrize("length", [-1, 0, 3, -(2**31)])
def test_bad_length(length: int) -> None:
    with pytest.raises(RemoteProtocolError):
        FrameDecoder().feed(struct.pack(">i", length))


def test_header_length_beyond_frame() -> None:
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError):
        decoder.feed(struct.pack(">iI", 10, 7))  # 4 + 7 > 10
    with pytest.raises(RemoteProtocolError):
        decoder.feed(b"")  # a failed decoder stays failed


def test_header_length_ignores_type_byte() -> None:
    decoder = FrameDecoder()
    data = struct.pack(">iI", 6, (1 << 24) | 2) + b"ab"
    assert decoder.feed(data) == [data[4:]]
