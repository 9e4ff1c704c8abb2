"""The commit-log message record (RocketMQ 4.x, fact sheet 5.1): layout constants and the write path.

The same bytes are a commit-log entry, an item of a pull/query/view response body and the body of a
CHECK_TRANSACTION_STATE request. Big-endian throughout. Offsets for IPv4 born and store hosts; each IPv6
host (SYSFLAG 0x10 born, 0x20 store) is 20 bytes instead of 8 and shifts everything after it by 12::

     0 TOTALSIZE int        4 MAGICCODE int (0xDAA320A7)   8 BODYCRC int      12 QUEUEID int
    16 FLAG int            20 QUEUEOFFSET long            28 PHYSICALOFFSET long
    36 SYSFLAG int         40 BORNTIMESTAMP long          48 BORNHOST 8|20   56 STORETIMESTAMP long
    64 STOREHOSTADDRESS 8|20                              72 RECONSUMETIMES int
    76 PREPARED_TRANSACTION_OFFSET long                   84 BODYLENGTH int  88 BODY (B bytes)
    88+B TOPICLENGTH byte   89+B TOPIC (T)   89+B+T PROPERTIESLENGTH short   91+B+T PROPERTIES (P)

    total = 91 + B + T + P (+12 per IPv6 host)

A commit-log file ends with an 8-byte blank record when the next record does not fit:
TOTALSIZE = bytes left in the file, MAGICCODE = 0xCBD43194; the rest of the file stays zero.

This module writes records straight into a caller's buffer (bytearray, mmap, memoryview): one
`struct.pack_into` for the fixed part, one slice assignment for the body, one `pack_into` for the tail,
so a body is copied exactly once. It knows nothing of files or of the store's offsets bookkeeping.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

from orbitmq.common.errors import ClientError, RemoteProtocolError
from orbitmq.message.hashing import ZLIB_CRC32
from orbitmq.message.hosts import HOST_V4_SIZE, HOST_V6_SIZE
from orbitmq.message.sysflag import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG

Buffer = bytes | bytearray | memoryview | mmap.mmap
WritableBuffer = bytearray | memoryview | mmap.mmap

MESSAGE_MAGIC: Final = 0xDAA320A7
MESSAGE_MAGIC_SIGNED: Final = -626843481
BLANK_MAGIC: Final = 0xCBD43194
BLANK_MAGIC_SIGNED: Final = -875286124
MESSAGE_MAGIC_V2: Final = 0xDAA320AB  # 5.x record with a 2-byte topic length; 4.x readers reject it

BLANK_RECORD_SIZE: Final = (
    8  # also END_FILE_MIN_BLANK_LENGTH: a record is appended only if 8 bytes remain after it
)
MAX_TOPIC_LENGTH: Final = 127
MAX_PROPERTIES_LENGTH: Final = 32767

# Field positions (IPv4 born host; from STORETIMESTAMP on, add 12 if the born host is IPv6).
TOTALSIZE_POS: Final = 0
MAGIC_POS: Final = 4
BODYCRC_POS: Final = 8
QUEUEID_POS: Final = 12
FLAG_POS: Final = 16
QUEUEOFFSET_POS: Final = 20
PHYSICALOFFSET_POS: Final = 28
SYSFLAG_POS: Final = 36
BORNTIMESTAMP_POS: Final = 40
BORNHOST_POS: Final = 48
STORETIMESTAMP_POS_V4: Final = 56  # + 12 when the born host is IPv6
HEADER_SIZE_V4: Final = 88  # fixed part before BODY, both hosts IPv4
MIN_RECORD_SIZE: Final = 91  # empty body, topic and properties, IPv4 hosts
V6_EXTRA: Final = 12

# Fixed part before BODY, by (born host v6, store host v6). MAGICCODE is unsigned here so it compares
# with MESSAGE_MAGIC directly.
_FIXED: Final = {
    (born_v6, store_v6): struct.Struct(
        ">iIiiiqqiq" + ("20s" if born_v6 else "8s") + "q" + ("20s" if store_v6 else "8s") + "iqi"
    )
    for born_v6 in (False, True)
    for store_v6 in (False, True)
}
# Index of BODYLENGTH, the last field of a fixed struct's tuple (TOTALSIZE ... PREPAREDTRANSACTIONOFFSET
# come before it, in RecordHeader's order).
FIXED_BODY_LEN: Final = 14
_FIXED_BY_FLAGS: Final = tuple(
    _FIXED[(bool(flags & BORNHOST_V6_FLAG), bool(flags & STOREHOSTADDRESS_V6_FLAG))]
    for flags in range(0, 0x40, 0x10)
)
_FIXED_SIZES: Final[tuple[int, int, int, int]] = (
    _FIXED_BY_FLAGS[0].size,
    _FIXED_BY_FLAGS[1].size,
    _FIXED_BY_FLAGS[2].size,
    _FIXED_BY_FLAGS[3].size,
)
_INT: Final = struct.Struct(">i")
_UINT_PAIR: Final = struct.Struct(">iI")
_SHORT: Final = struct.Struct(">h")
_BLANK: Final = struct.Struct(">iI")
_tail_cache: Final[dict[tuple[int, int], struct.Struct]] = {}
# Bounded: properties lengths vary with keys and ids. broker.conf `recordTailCacheMaxEntries` sets it.
DEFAULT_TAIL_CACHE_MAX = 4096
_tail_cache_max = DEFAULT_TAIL_CACHE_MAX


def set_tail_cache_max(entries: int) -> None:
    """Bound the (topic length, properties length) -> struct cache (the broker calls this at start)."""
    global _tail_cache_max
    if entries < 1:
        raise ValueError(f"recordTailCacheMaxEntries must be positive, not {entries}")
    _tail_cache_max = entries
    _tail_cache.clear()


def tail_cache_size() -> int:
    return len(_tail_cache)


def fixed_struct(sys_flag: int) -> struct.Struct:
    """The struct of the fixed part before BODY for a record with `sys_flag` (host sizes follow its bits)."""
    return _FIXED_BY_FLAGS[(sys_flag >> 4) & 0x3]


def header_size(sys_flag: int) -> int:
    """Bytes before BODY: 88, +12 per IPv6 host."""
    return _FIXED_BY_FLAGS[(sys_flag >> 4) & 0x3].size


def store_timestamp_pos(sys_flag: int) -> int:
    return STORETIMESTAMP_POS_V4 + (V6_EXTRA if sys_flag & BORNHOST_V6_FLAG else 0)


def store_host_pos(sys_flag: int) -> int:
    return store_timestamp_pos(sys_flag) + 8


def record_size(
    body_len: int, topic_len: int, properties_len: int, born_v6: bool = False, store_v6: bool = False
) -> int:
    """TOTALSIZE of a record with these lengths (bytes, not characters)."""
    return (
        MIN_RECORD_SIZE
        + body_len
        + topic_len
        + properties_len
        + (V6_EXTRA if born_v6 else 0)
        + (V6_EXTRA if store_v6 else 0)
    )


def _tail_struct(topic_len: int, properties_len: int) -> struct.Struct:
    key = (topic_len, properties_len)
    tail = _tail_cache.get(key)
    if tail is None:
        if len(_tail_cache) >= _tail_cache_max:
            _tail_cache.clear()
        tail = _tail_cache[key] = struct.Struct(f">B{topic_len}sh{properties_len}s")
    return tail


def host_sys_flag(sys_flag: int, born_host: bytes, store_host: bytes) -> int:
    """`sys_flag` with its IPv6 bits set from the host field sizes (8 or 20 bytes), so the stored SYSFLAG
    describes the stored layout; ClientError for any other size."""
    born_len = len(born_host)
    store_len = len(store_host)
    if born_len == HOST_V4_SIZE:
        sys_flag &= ~BORNHOST_V6_FLAG
    elif born_len == HOST_V6_SIZE:
        sys_flag |= BORNHOST_V6_FLAG
    else:
        raise ClientError(f"born host field must be 8 or 20 bytes, not {born_len}")
    if store_len == HOST_V4_SIZE:
        sys_flag &= ~STOREHOSTADDRESS_V6_FLAG
    elif store_len == HOST_V6_SIZE:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    else:
        raise ClientError(f"store host field must be 8 or 20 bytes, not {store_len}")
    return sys_flag


def pack_record_into(  # noqa: PLR0917 -- positional on the per-message append path, keywords elsewhere
    buf: WritableBuffer,
    pos: int,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: Buffer,
    topic: bytes,
    properties: bytes,
    body_crc: int | None = None,
) -> int:
    """Write one record at `buf[pos:]`; return its size (bytes written). The commit log's per-message
    append passes the fields positionally (sixteen keyword arguments cost more than the checks below).

    The IPv6 bits of `sys_flag` are set from the host field sizes (8 or 20 bytes, see `pack_host`), so the
    stored SYSFLAG always describes the stored layout. `body_crc` is computed when None. Raises
    ClientError for a topic over 127 bytes, properties over 32767 bytes or a bad host field, and
    ValueError when the record does not fit in `buf` (nothing is written then).
    """
    topic_len = len(topic)
    properties_len = len(properties)
    if topic_len > MAX_TOPIC_LENGTH:
        raise ClientError(f"topic is {topic_len} bytes long; a 4.x record allows at most {MAX_TOPIC_LENGTH}")
    if properties_len > MAX_PROPERTIES_LENGTH:
        raise ClientError(
            f"properties string is {properties_len} bytes long; at most {MAX_PROPERTIES_LENGTH} allowed"
        )
    sys_flag = host_sys_flag(sys_flag, born_host, store_host)
    layout = (sys_flag >> 4) & 0x3
    fixed = _FIXED_BY_FLAGS[layout]
    fixed_size = _FIXED_SIZES[layout]  # (a native int: Struct.size is an attribute lookup)
    body_len = len(body)
    body_pos = pos + fixed_size
    tail_pos = body_pos + body_len
    size = fixed_size + body_len + 3 + topic_len + properties_len
    if pos < 0 or pos + size > len(buf):
        raise ValueError(f"record of {size} bytes does not fit at {pos} in a buffer of {len(buf)} bytes")
    fixed.pack_into(
        buf,
        pos,
        size,
        MESSAGE_MAGIC,
        ZLIB_CRC32(body) & 0x7FFFFFFF if body_crc is None else body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body_len,
    )
    buf[body_pos:tail_pos] = body
    _tail_struct(topic_len, properties_len).pack_into(
        buf, tail_pos, topic_len, topic, properties_len, properties
    )
    return size


def encode_record(
    *, born_host: bytes, store_host: bytes, body: Buffer, topic: bytes, properties: bytes, **fields: int
) -> bytes:
    """One record as bytes: `pack_record_into` (the same keyword arguments) into a buffer of its size."""
    born_v6 = len(born_host) == HOST_V6_SIZE
    buf = bytearray(
        record_size(len(body), len(topic), len(properties), born_v6, len(store_host) == HOST_V6_SIZE)
    )
    pack_record_into(
        buf,
        0,
        born_host=born_host,
        store_host=store_host,
        body=body,
        topic=topic,
        properties=properties,
        **fields,
    )
    return bytes(buf)


def pack_blank_into(buf: WritableBuffer, pos: int, remaining: int) -> int:
    """Write the end-of-file marker (TOTALSIZE = `remaining`, BLANK magic); return the 8 bytes written."""
    _BLANK.pack_into(buf, pos, remaining, BLANK_MAGIC)
    return BLANK_RECORD_SIZE


class RecordHeader(NamedTuple):
    """The fields of a record plus where its variable parts lie (absolute positions in the buffer)."""

    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    store_timestamp: int
    store_host: bytes
    reconsume_times: int
    prepared_transaction_offset: int
    body_pos: int
    body_len: int
    topic_pos: int
    topic_len: int
    properties_pos: int
    properties_len: int

    @property
    def end(self) -> int:
        return self.properties_pos + self.properties_len


def unpack_record_header(buf: Buffer, pos: int = 0) -> RecordHeader:
    """All fixed fields of the message record at `pos`, checked for consistency.

    Raises RemoteProtocolError when the bytes at `pos` are not one complete, well-formed message record
    (wrong magic, truncated, lengths that disagree with TOTALSIZE). The body CRC is not checked here.
    """
    end = len(buf)
    if pos < 0 or pos + HEADER_SIZE_V4 > end:
        raise RemoteProtocolError(f"truncated message record at {pos}: {end - pos} bytes left")
    sys_flag = _INT.unpack_from(buf, pos + SYSFLAG_POS)[0]
    fixed = _FIXED_BY_FLAGS[(sys_flag >> 4) & 0x3]
    body_pos = pos + fixed.size
    if body_pos > end:
        raise RemoteProtocolError(f"truncated message record at {pos}: {end - pos} bytes left")
    fields = fixed.unpack_from(buf, pos)
    total_size, magic, body_len = fields[0], fields[1], fields[FIXED_BODY_LEN]
    if magic != MESSAGE_MAGIC:
        raise RemoteProtocolError(f"bad magic code {magic:#010x} at {pos}: not a 4.x message record")
    record_end = pos + total_size
    topic_len_pos = body_pos + body_len
    if body_len < 0 or record_end > end or topic_len_pos + 3 > record_end:
        raise RemoteProtocolError(
            f"message record at {pos} is truncated or inconsistent (size {total_size}, body {body_len})"
        )
    topic_len = buf[topic_len_pos]
    properties_len_pos = topic_len_pos + 1 + topic_len
    properties_len = (
        _SHORT.unpack_from(buf, properties_len_pos)[0] if properties_len_pos + 2 <= record_end else -1
    )
    if (
        topic_len > MAX_TOPIC_LENGTH
        or properties_len < 0
        or properties_len_pos + 2 + properties_len != record_end
    ):
        raise RemoteProtocolError(
            f"message record at {pos}: lengths (body {body_len}, topic {topic_len}, properties "
            f"{properties_len}) disagree with TOTALSIZE {total_size}"
        )
    # The struct's first 14 fields are RecordHeader's first 14, in the same order. Concatenating
    # tuples is about twice as fast as unpacking into a new one (recovery reads every record here).
    return RecordHeader._make(
        fields[:FIXED_BODY_LEN]  # noqa: RUF005
        + (body_pos, body_len, topic_len_pos + 1, topic_len, properties_len_pos + 2, properties_len)
    )


def iter_record_spans(buf: Buffer) -> Iterator[tuple[int, int]]:
    """`(pos, size)` of each record in concatenated records (a pull or query body), without decoding.

    Only TOTALSIZE and MAGICCODE are read; raises RemoteProtocolError on a bad magic or a record that
    runs past the end. Use `unpack_record_header` and the `record_*` readers for single fields.
    """
    pos = 0
    end = len(buf)
    unpack = _UINT_PAIR.unpack_from
    while pos < end:
        if pos + MIN_RECORD_SIZE > end:
            raise RemoteProtocolError(f"truncated message record at {pos}: {end - pos} bytes left")
        size, magic = unpack(buf, pos)
        if magic != MESSAGE_MAGIC or size < MIN_RECORD_SIZE or pos + size > end:
            raise RemoteProtocolError(f"malformed message record at {pos} (size {size}, magic {magic:#010x})")
        yield pos, size
        pos += size


def record_body(buf: Buffer, pos: int = 0) -> memoryview:
    """A view of the stored (possibly compressed) body of the record at `pos`; nothing is copied."""
    header = unpack_record_header(buf, pos)
    return memoryview(buf)[header.body_pos : header.body_pos + header.body_len]


def record_topic(buf: Buffer, pos: int = 0) -> str:
    header = unpack_record_header(buf, pos)
    return str(memoryview(buf)[header.topic_pos : header.topic_pos + header.topic_len], "utf-8", "replace")


def record_properties(buf: Buffer, pos: int = 0) -> str:
    """The raw properties string of the record at `pos` (see `decode_properties`)."""
    header = unpack_record_header(buf, pos)
    view = memoryview(buf)[header.properties_pos : header.properties_pos + header.properties_len]
    return str(view, "utf-8", "replace")
