"""FrameDecoder.feed reads `bytes` chunks (what the event loop hands over) on its own path; any other
buffer type goes the general way. Both cut the same frames and refuse the same broken streams with the
same message, whatever the chunking."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.protocol.frames import FrameDecoder


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        header = draw(st.binary(max_size=20))
        body = draw(st.binary(max_size=40))
        length = 4 + len(header) + len(body)
        kind = draw(st.integers(0, 11))
        if kind == 0:
            length = draw(st.integers(-(2**31), 2**31 - 1))  # any length, mostly broken
        header_field = len(header) | (draw(st.integers(0, 255)) << 24)
        if kind == 1:
            header_field = draw(st.integers(0, 2**32 - 1))  # any header length
        parts.append(struct.pack(">iI", length, header_field) + header + body)
    data = b"".join(parts) + draw(st.binary(max_size=6))  # maybe a partial tail
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    return data, cuts


def _run(
    data: bytes, cuts: list[int], as_bytes: bool, collect_from: int = 1 << 30
) -> tuple[list[bytes], str | None, list[int]]:
    """The frames cut from `data` fed in pieces at `cuts`, the refusal if any, and what was buffered
    after each piece."""
    decoder = FrameDecoder(200, 30)
    decoder.collect_from = collect_from
    frames: list[bytes] = []
    buffered: list[int] = []
    start = 0
    try:
        for stop in [*cuts, len(data)]:
            chunk = data[start:stop]
            frames += decoder.feed(chunk if as_bytes else bytearray(chunk))
            buffered.append(decoder.buffered)
            start = stop
    except RemoteProtocolError as exc:
        return frames, str(exc), buffered
    assert all(type(f) is bytes for f in frames)
    return frames, None, buffered


@settings(max_examples=500, deadline=None)
@given(streams())
def test_bytes_and_other_buffers_cut_the_same_frames(stream: tuple[bytes, list[int]]) -> None:
    data, cuts = stream
    assert _run(data, cuts, True) == _run(data, cuts, False)


def test_a_bytes_chunk_with_two_frames_and_a_tail() -> None:
    one = struct.pack(">iI", 4 + 2 + 3, 2) + b"hhbbb"
    two = struct.pack(">iI", 4 + 1, (1 << 24) | 1) + b"H"
    decoder = FrameDecoder()
    assert decoder.feed(one + two + one[:5]) == [one[4:], two[4:]]
    assert decoder.buffered == 5
    assert decoder.feed(one[5:]) == [one[4:]]
    assert decoder.buffered == 0


def _refusal(chunk: bytes, as_bytes: bool) -> str:
    decoder = FrameDecoder(200, 30)
    try:
        decoder.feed(chunk if as_bytes else bytearray(chunk))
    except RemoteProtocolError as exc:
        # A broken stream cannot be resynchronised: the decoder refuses everything after.
        try:
            decoder.feed(b"")
        except RemoteProtocolError as again:
            assert "already failed" in str(again)
        else:
            raise AssertionError("the decoder accepted more input after a refusal") from None
        return str(exc)
    raise AssertionError("the frame was accepted")


def test_each_limit_is_refused_on_both_paths() -> None:
    header_over_limit = struct.pack(">iI", 4 + 40, 31) + b"h" * 31 + b"b" * 9  # fits the frame, not the limit
    header_over_frame = struct.pack(">iI", 4 + 10, 11) + b"h" * 10
    frame_over_limit = struct.pack(">iI", 200, 0)
    frame_too_short = struct.pack(">iI", 3, 0)
    for as_bytes in (True, False):
        assert _refusal(header_over_limit, as_bytes) == "header length 31 exceeds the limit 30"
        assert _refusal(header_over_frame, as_bytes) == "header length 11 exceeds frame length 14"
        assert _refusal(frame_over_limit, as_bytes) == "bad frame length 200 (must be 4..196)"
        assert _refusal(frame_too_short, as_bytes) == "bad frame length 3 (must be 4..196)"


@settings(max_examples=500, deadline=None)
@given(streams(), st.integers(4, 40), st.booleans())
def test_collecting_large_frames_cuts_the_same_frames(
    stream: tuple[bytes, list[int]], collect_from: int, as_bytes: bool
) -> None:
    # Frames from `collect_from` bytes on are collected as chunk lists once their head arrived; any
    # chunking gives the frames (and the buffered counts, and the refusals) of the plain buffer.
    data, cuts = stream
    assert _run(data, cuts, as_bytes, collect_from) == _run(data, cuts, as_bytes)


def test_a_large_frame_in_many_chunks_then_a_small_one() -> None:
    big = struct.pack(">iI", 4 + 3 + 200_000, 3) + b"hdr" + bytes(range(256)) * 781 + b"x" * 64
    small = struct.pack(">iI", 4 + 1, 1) + b"H"
    stream = big + small
    decoder = FrameDecoder()
    frames: list[bytes] = []
    for i in range(0, len(stream), 10_000):
        frames += decoder.feed(stream[i : i + 10_000])
        if not frames:
            assert decoder.buffered == min(i + 10_000, len(stream))
    assert frames == [big[4:], small[4:]]
    assert decoder.buffered == 0
    # the head and the body in the same chunk as the end of the previous frame, a caller's bytearray
    decoder.feed(small[:3])
    frames = decoder.feed(bytearray(small[3:] + big[:70_000]))
    frames += decoder.feed(memoryview(big[70_000:] + small))
    assert frames == [small[4:], big[4:], small[4:]]
