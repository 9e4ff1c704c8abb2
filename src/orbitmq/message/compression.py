"""Body compression (fact sheet 5.8): zlib as RocketMQ 4.9.x producers write it; LZ4/ZSTD when importable.

A producer compresses bodies of at least `compressMsgBodyOverHowmuch` (4096) bytes -- that threshold is
the producer's decision, not this module's -- and ORs `COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE` into
SYSFLAG. Readers decompress when bit 0 is set; type bits 0 (producers <= 4.9.3) and 0x300 both mean zlib.
LZ4 (frame format) and ZSTD are decoded only when the optional `lz4` / `zstandard` package is installed;
they are not dependencies of orbitmq.
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any, Final

from orbitmq.common.errors import ClientError
from orbitmq.message.sysflag import (
    COMPRESSED_FLAG,
    COMPRESSION_LZ4_TYPE,
    COMPRESSION_TYPE_MASK,
    COMPRESSION_ZLIB_TYPE,
    COMPRESSION_ZSTD_TYPE,
)

DEFAULT_COMPRESS_LEVEL: Final = 5
DEFAULT_COMPRESS_THRESHOLD: Final = 4096  # compressMsgBodyOverHowmuch: the producer's threshold


def compress_body(
    body: bytes | bytearray | memoryview, level: int = DEFAULT_COMPRESS_LEVEL
) -> tuple[bytes, int]:
    """`(zlib data, sys_flag bits to OR in)`; RocketMQ keeps the compressed form even when it is larger."""
    return zlib.compress(body, level), COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE


class InflateLimitError(ValueError):
    """Inflated data would exceed the allowed size (a zlib bomb, or a limit set too low)."""


def inflate_bounded(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    """zlib-inflate `data`, producing at most `max_size` bytes: never allocates more than that, whatever
    the ratio. InflateLimitError beyond it, zlib.error for data that is not a whole zlib stream."""
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, max_size + 1)
    if len(out) > max_size or inflater.unconsumed_tail:
        # Free the output before raising: the traceback keeps this frame (and its locals) alive.
        del out, inflater
        raise InflateLimitError(f"inflates to more than {max_size} bytes")
    if not inflater.eof:
        raise zlib.error("incomplete or truncated zlib stream")
    return out


def decompress_body(body: bytes | bytearray | memoryview, sys_flag: int) -> bytes:
    """The plain body of a stored body whose record has `sys_flag`; unchanged (as bytes) if not compressed.

    Raises ClientError for an unknown or unavailable algorithm and for corrupt compressed data.
    """
    if not sys_flag & COMPRESSED_FLAG:
        return bytes(body)
    kind = sys_flag & COMPRESSION_TYPE_MASK
    try:
        if kind in (0, COMPRESSION_ZLIB_TYPE):
            return zlib.decompress(body)
        if kind == COMPRESSION_LZ4_TYPE:
            return bytes(_optional("lz4.frame", "LZ4").decompress(bytes(body)))
        if kind == COMPRESSION_ZSTD_TYPE:
            # Java's zstd frames may omit the content size, so decompress as a stream.
            decompressor = _optional("zstandard", "ZSTD").ZstdDecompressor()
            return bytes(decompressor.decompressobj().decompress(bytes(body)))
    except ClientError:
        raise
    except Exception as exc:  # zlib.error, lz4/zstd errors: the stored bytes are not what the flag says
        raise ClientError(f"compressed message body is corrupt (sysFlag {sys_flag:#x}): {exc}") from exc
    raise ClientError(f"unknown compression type {kind:#x} in sysFlag {sys_flag:#x}")


def _optional(module: str, name: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ClientError(
            f"message body is {name}-compressed; install the optional '{module.partition('.')[0]}' "
            "package to read it"
        ) from None
