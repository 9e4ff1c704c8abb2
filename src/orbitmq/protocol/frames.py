"""Cutting a TCP byte stream into remoting frames (fact sheet 1.1), sans-IO.

    +--------+---------------------------+--------+------+
    | length | serialize type | hdr len  | header | body |
    |  int   |   1 byte       | 3 bytes  |        |      |
    +--------+---------------------------+--------+------+
      length = 4 + header length + body length (bytes after the length field)

`FrameDecoder.feed` takes chunks of any size and returns whole frames without the 4-byte length
prefix, as Netty's LengthFieldBasedFrameDecoder(max, 0, 4, 0, 4) does. It checks only the framing
(length and header length); what the header says is `orbitmq.protocol.command`'s business.
"""

from __future__ import annotations

import struct
from typing import Final, NoReturn, TypeAlias

from orbitmq.common.errors import RemoteProtocolError

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
# Real headers are small (a send's properties are at most 32 KiB, JSON escaping can triple them); a
# bigger header only costs decode time, so it is refused with the framing (serverMaxHeaderSize).
DEFAULT_MAX_HEADER_SIZE = 512 * 1024

# A frame at least this long that arrives over several chunks is collected as a list of the chunks and
# joined once (see FrameDecoder.collect_from).
LARGE_FRAME: Final = 64 * 1024

_INT: Final = struct.Struct(">i")
_TWO_INTS: Final = struct.Struct(">iI")

Buffer: TypeAlias = bytes | bytearray | memoryview


class FrameDecoder:
    """Incremental frame splitter. Each byte is copied at most twice: into the buffer and into its frame.

    While the buffer is empty, whole frames are cut straight out of the fed chunk; only a partial tail
    is kept. A frame of `collect_from` bytes or more whose first chunk holds its 8-byte head (a batch
    send of a few MiB arrives in many reads) is kept as the list of its chunks and joined once, when its
    last byte came: one copy of it instead of two (into the buffer, out of it) and no buffer regrowth.
    A broken length raises `RemoteProtocolError`; the decoder is then unusable (the caller closes the
    connection, as RocketMQ does).
    """

    __slots__ = (
        "_broken",
        "_buffer",
        "_parts",
        "_parts_len",
        "_wanted",
        "collect_from",
        "max_frame_size",
        "max_header_size",
    )

    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, max_header_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> None:
        self.max_frame_size = max_frame_size
        self.max_header_size = max_header_size
        self.collect_from = LARGE_FRAME
        self._buffer = bytearray()
        self._broken = False
        # A large frame being collected: its pieces (length prefix excluded), their total and the
        # frame's length (0: none is).
        self._parts: list[bytes | memoryview] = []
        self._parts_len = 0
        self._wanted = 0

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        # (a frame being collected: its length prefix too)
        return len(self._buffer) + (self._parts_len + 4 if self._wanted else 0)

    def _fail_length(self, length: int) -> NoReturn:
        """Refuse a frame length outside 4..max_frame_size - 4; the stream cannot be resynchronised."""
        self._broken = True
        raise RemoteProtocolError(f"bad frame length {length} (must be 4..{self.max_frame_size - 4})")

    def _fail_header(self, length: int, header_length: int) -> NoReturn:
        """Refuse a header longer than its frame or than max_header_size."""
        self._broken = True
        if header_length > length - 4:
            raise RemoteProtocolError(f"header length {header_length} exceeds frame length {length}")
        raise RemoteProtocolError(f"header length {header_length} exceeds the limit {self.max_header_size}")

    def feed(self, data: Buffer) -> list[bytes]:
        if self._broken:
            raise RemoteProtocolError("frame decoder already failed on this stream")
        if self._wanted:
            return self._collect(data)
        buffer = self._buffer
        if not buffer and type(data) is bytes:
            return self._feed_bytes(data)
        if buffer:
            buffer += data
            source: Buffer = buffer
        else:
            source = data
        frames: list[bytes] = []
        pos = 0
        # A memoryview slices without an intermediate copy; it must be released before the
        # bytearray is resized below.
        # (declared ints: unpack_from's values are untyped, and compiled, untyped arithmetic is a
        # generic Python operation)
        length: int
        header_length: int
        with memoryview(source) as view:
            end = view.nbytes
            max_frame_size = self.max_frame_size
            while end - pos >= 4:
                (length,) = _INT.unpack_from(view, pos)
                if length < 4 or length + 4 > max_frame_size:
                    self._fail_length(length)
                if end - pos < 8:
                    break
                header_length = _TWO_INTS.unpack_from(view, pos)[1] & 0xFFFFFF
                if header_length > length - 4 or header_length > self.max_header_size:
                    self._fail_header(length, header_length)
                stop = pos + 4 + length
                if stop > end:
                    break
                frames.append(view[pos + 4 : stop].tobytes())
                pos = stop
            if source is not buffer and pos < end:
                buffer += view[pos:]
        if source is buffer and pos:
            del buffer[:pos]
        return frames

    def _feed_bytes(self, data: bytes) -> list[bytes]:
        """`feed` of a `bytes` chunk with nothing buffered (what the event loop hands over): the same
        checks, with the length fields read byte by byte (compiled, no struct call or memoryview per
        frame)."""
        frames: list[bytes] = []
        pos = 0
        end = len(data)
        max_frame_size = self.max_frame_size
        while end - pos >= 4:
            length = (data[pos] << 24) | (data[pos + 1] << 16) | (data[pos + 2] << 8) | data[pos + 3]
            if length >= 0x80000000:  # a signed Java int
                length -= 0x100000000
            if length < 4 or length + 4 > max_frame_size:
                self._fail_length(length)
            if end - pos < 8:
                break
            header_length = (data[pos + 5] << 16) | (data[pos + 6] << 8) | data[pos + 7]
            if header_length > length - 4 or header_length > self.max_header_size:
                self._fail_header(length, header_length)
            stop = pos + 4 + length
            if stop > end:
                if length >= self.collect_from:  # the head is here, the rest comes in later chunks
                    self._wanted = length
                    self._parts_len = end - pos - 4
                    self._parts = [memoryview(data)[pos + 4 :]]
                    return frames
                break
            frames.append(data[pos + 4 : stop])
            pos = stop
        if pos < end:
            with memoryview(data) as view:
                self._buffer += view[pos:]
        return frames

    def _collect(self, data: Buffer) -> list[bytes]:
        """`feed` while a large frame is being collected."""
        need = self._wanted - self._parts_len
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        if size < need:
            # (a caller's bytearray or memoryview may change after the call: only bytes are kept as is)
            self._parts.append(data if type(data) is bytes else bytes(data))
            self._parts_len += size
            return []
        parts = self._parts
        parts.append(memoryview(data)[:need])
        frame = b"".join(parts)
        self._parts = []
        self._parts_len = 0
        self._wanted = 0
        rest = memoryview(data)[need:]
        if not rest:
            return [frame]
        return [frame, *self.feed(rest.tobytes() if type(data) is bytes else rest)]
