"""Bounded decoding: header size, ext-field count, inflated size (issue 13 point 4)."""

from __future__ import annotations

import struct
import zlib

import orjson
import pytest

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.compression import InflateLimitError, inflate_bounded
from orbitmq.protocol.codes import RequestCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder


def _request(ext: dict[str, str], serialize_type: SerializeType) -> bytes:
    cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, ext)
    cmd.serialize_type = serialize_type
    return encode_command_bytes(cmd)


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_ext_field_count_limit(serialize_type: SerializeType) -> None:
    within = _request({f"k{i}": "v" for i in range(10)}, serialize_type)
    assert len(decode_command(within[4:], 10).ext_fields) == 10
    over = _request({f"k{i}": "v" for i in range(100_000)}, serialize_type)
    with pytest.raises(RemoteProtocolError, match="limit"):
        decode_command(over[4:], 1024)


def test_header_size_limit_refuses_before_buffering() -> None:
    decoder = FrameDecoder(16 * 1024 * 1024, 1024)
    # only the first 8 bytes of a 2.4 MB header frame: refused at once
    prefix = struct.pack(">iI", 4 + 2_400_000, 2_400_000)
    with pytest.raises(RemoteProtocolError, match="limit"):
        decoder.feed(prefix)
    ok = FrameDecoder(16 * 1024 * 1024, 1024)
    frame = _request({"topic": "T"}, SerializeType.JSON)
    assert len(ok.feed(frame)) == 1


def test_big_broken_json_header_skips_the_lenient_reader() -> None:
    header = b"{'code':1," + b"'k':'v'," * 20_000 + b"}"
    frame = struct.pack(">I", len(header)) + header
    with pytest.raises(RemoteProtocolError):
        decode_command(frame)


def test_inflate_bounded() -> None:
    data = b"x" * 1000
    assert inflate_bounded(zlib.compress(data), 1000) == data
    bomb = zlib.compress(b"\0" * (50 * 1024 * 1024), 9)
    assert len(bomb) < 100_000
    with pytest.raises(InflateLimitError):
        inflate_bounded(bomb, 1024 * 1024)
    with pytest.raises(zlib.error):
        inflate_bounded(zlib.compress(data)[:-3], 10_000)
    assert orjson.loads(inflate_bounded(zlib.compress(b"[1]"), 3)) == [1]
