"""The hashes RocketMQ puts on disk and on the wire: Java String.hashCode and the masked CRC-32.

- `java_string_hash`: `h = 31*h + c` over UTF-16 code units (a non-BMP character is two units), 32-bit
  wrap-around, signed result. Consume-queue tag codes and index-file key hashes are built from it, so a
  different value would make filters and key queries miss messages written by Java.
- `crc32`: zlib CRC-32 masked with 0x7FFFFFFF, as BODYCRC in a record.

Pure functions; nothing here knows about records or files.
"""

from __future__ import annotations

import mmap
import sys
import zlib
from array import array
from collections.abc import Callable
from operator import mul
from typing import Final

Buffer = bytes | bytearray | memoryview | mmap.mmap
_MASK32: Final = 0xFFFFFFFF
_BIG_ENDIAN: Final = sys.byteorder == "big"


_SHORT: Final = 8  # up to this many units the plain loop is faster than setting up the dot product
_MAX_CACHED: Final = 1024
# _POWERS[n] = (31**(n-1), ..., 31, 1) mod 2**32: hash(units) = sum(u * p) mod 2**32. Built per length
# on first use (importing must stay cheap: it is on every process's start-up path).
_POWERS: Final[dict[int, tuple[int, ...]]] = {}


def hash_powers(n: int) -> tuple[int, ...]:
    """(31**(n-1), ..., 31, 1) mod 2**32: the Java hash of n units is sum(unit * power) mod 2**32."""
    powers = _POWERS.get(n)
    if powers is None:
        powers = _POWERS[n] = tuple(pow(31, e, 1 << 32) for e in range(n - 1, -1, -1))
    return powers


def _java_hash_units(units: bytes | array[int]) -> int:
    n = len(units)
    if n <= _SHORT or n > _MAX_CACHED:
        h = 0
        for unit in units:
            h = (31 * h + unit) & _MASK32
    else:
        # One C-level pass (map + sum) instead of a Python loop per unit: UNIQ_KEY (32 units, new for
        # every message) is hashed on every indexed append and on every recovered record.
        h = sum(map(mul, units, _POWERS.get(n) or hash_powers(n))) & _MASK32
    return h - 0x100000000 if h & 0x80000000 else h


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode()` of `s`: signed 32-bit."""
    if s.isascii():
        # ASCII code points are their own UTF-16 units; iterating bytes yields them as ints.
        return _java_hash_units(s.encode("ascii"))
    # surrogatepass: a lone surrogate in a Python str is one UTF-16 unit in Java too.
    units = array("H", s.encode("utf-16-be" if _BIG_ENDIAN else "utf-16-le", "surrogatepass"))
    return _java_hash_units(units)


# Tags repeat across messages: their codes are kept (a dict, not functools.lru_cache, whose wrapper
# would make every compiled caller a generic Python call); only short ones, so the cache stays small.
# Process-wide; broker.conf `tagsCodeCacheMaxEntries` sets the bound when a broker starts.
_TAGS_CODES: Final[dict[str, int]] = {}
DEFAULT_TAGS_CODE_CACHE_MAX: Final = 4096
_tags_codes_max = DEFAULT_TAGS_CODE_CACHE_MAX  # (read on a miss only)
_TAGS_CACHED_LENGTH: Final = 256


def set_tags_code_cache_max(entries: int) -> None:
    """Bound the tags -> tags code cache (the broker calls this at start)."""
    global _tags_codes_max
    if entries < 1:
        raise ValueError(f"tagsCodeCacheMaxEntries must be positive, not {entries}")
    _tags_codes_max = entries
    _TAGS_CODES.clear()


def tags_code_cache_size() -> int:
    return len(_TAGS_CODES)


def tags_code(tags: str | None) -> int:
    """The consume-queue tags code of a TAGS value: its Java hash sign-extended to 64 bits; 0 if none."""
    if not tags:
        return 0
    code = _TAGS_CODES.get(tags)
    if code is None:
        if len(tags) > _TAGS_CACHED_LENGTH:
            return java_string_hash(tags)
        if len(_TAGS_CODES) >= _tags_codes_max:
            _TAGS_CODES.clear()
        code = _TAGS_CODES[tags] = java_string_hash(tags)
    return code


def index_key_hash(key: str) -> int:
    """The index-file key hash of an index key (`<topic>#<key>`): abs(hashCode), Integer.MIN_VALUE -> 0."""
    h = java_string_hash(key)
    return 0 if h == -0x80000000 else abs(h)


def _zlib_crc32() -> Callable[[Buffer], int]:
    """zlib-ng's CRC-32 when installed (the `fast` extra: SIMD, faster than zlib's; the same
    CRC-32), else zlib's. Every stored record's body goes through it."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return zlib.crc32
    fast: Callable[[Buffer], int] = zlib_ng.crc32
    return fast


# CRC-32 of a buffer, unsigned (zlib.crc32's result): the store's record writers and recovery use it.
ZLIB_CRC32: Final = _zlib_crc32()


def crc32(data: bytes | bytearray | memoryview) -> int:
    """RocketMQ's body CRC: zlib CRC-32 & 0x7FFFFFFF (never negative)."""
    return ZLIB_CRC32(data) & 0x7FFFFFFF
