"""Body compression (fact sheet 5.8)."""

from __future__ import annotations

import importlib.util
import zlib

import pytest

from orbitmq.common.errors import ClientError
from orbitmq.message.codec import compress_body, decompress_body


def test_zlib_level_5_with_compressed_and_zlib_type_bits() -> None:
    body = b"orbitmq " * 1000
    data, bits = compress_body(body)
    assert bits == 0x301
    assert data == zlib.compress(body, 5)
    assert zlib.decompress(data) == body


def test_decompress_honours_bit_0_and_both_zlib_type_values() -> None:
    body = b"payload" * 700
    data = zlib.compress(body, 5)
    assert decompress_body(data, 0x1) == body  # producers <= 4.9.3: type bits 0 mean zlib
    assert decompress_body(data, 0x301) == body
    assert decompress_body(data, 0x300) == data  # bit 0 clear: stored as is
    assert decompress_body(memoryview(b"raw"), 0) == b"raw"


def test_corrupt_data_and_unknown_types_are_client_errors() -> None:
    with pytest.raises(ClientError, match="corrupt"):
        decompress_body(b"not zlib", 0x301)
    with pytest.raises(ClientError, match="unknown compression type"):
        decompress_body(b"x", 0x401)


@pytest.mark.parametrize(("bits", "module", "name"), [(0x101, "lz4", "LZ4"), (0x201, "zstandard", "ZSTD")])
def test_lz4_and_zstd_need_their_optional_package(bits: int, module: str, name: str) -> None:
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here; the missing-package path cannot be exercised")
    with pytest.raises(ClientError, match=f"{name}-compressed.*'{module}'"):
        decompress_body(b"\x00\x01", bits)
