"""Message records (fact sheet 5.1) decoded straight into Arrow record batches, a column at a time.

Spark's tuple path converts every value in Python, so the source's rows are built here as Arrow
batches: numpy gathers the fixed fields of all records at once. Knows the record layout only.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.compression import decompress_body
from orbitmq.message.hosts import host_string
from orbitmq.message.record_layout import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_RECORD_SIZE,
)
from orbitmq.message.sysflag import BORNHOST_V6_FLAG, COMPRESSED_FLAG, STOREHOSTADDRESS_V6_FLAG

# The source's row schema. ARROW_SCHEMA must equal what Spark derives from the DDL
# (`to_arrow_schema(..., timezone="UTC")`), or Spark rejects the batches.
ROW_DDL: Final = (
    "topic string, broker string, queue_id int, queue_offset bigint, body binary, tags string, "
    "keys string, properties map<string,string>, msg_id string, born_timestamp timestamp, "
    "store_timestamp timestamp, born_host string, store_host string, reconsume_times int"
)
_TIMESTAMP: Final = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA: Final = pa.schema(
    [
        ("topic", pa.string()),
        ("broker", pa.string()),
        ("queue_id", pa.int32()),
        ("queue_offset", pa.int64()),
        ("body", pa.binary()),
        ("tags", pa.string()),
        ("keys", pa.string()),
        ("properties", pa.map_(pa.string(), pa.string())),
        ("msg_id", pa.string()),
        ("born_timestamp", _TIMESTAMP),
        ("store_timestamp", _TIMESTAMP),
        ("born_host", pa.string()),
        ("store_host", pa.string()),
        ("reconsume_times", pa.int32()),
    ]
)

_HEAD: Final = struct.Struct(">iI")
_SIZE_MAGIC: Final = np.dtype([("size", ">i4"), ("magic", ">u4")])
# The record header up to BODYLENGTH when both hosts are IPv4 (fact sheet 5.1): 88 bytes, read for all
# records at once as one structured array instead of one gather per field.
_HEADER_V4: Final = np.dtype(
    [
        ("size", ">i4"),
        ("magic", ">u4"),
        ("crc", ">i4"),
        ("queue_id", ">i4"),
        ("flag", ">i4"),
        ("queue_offset", ">i8"),
        ("physical", ">i8"),
        ("sys_flag", ">i4"),
        ("born_ts", ">i8"),
        ("born_host", ">u8"),
        ("store_ts", ">i8"),
        ("store_host", ">u8"),
        ("reconsume", ">i4"),
        ("prepared", ">i8"),
        ("body_len", ">i4"),
    ]
)
# Byte -> its two uppercase hex digits as one uint16 in memory order: a 1-D take per id byte.
_HEX16: Final = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint16)
_UTF8: Final = "utf-8"


def record_positions(buf: Any, start: int = 0, end: int | None = None) -> list[int]:
    """Start of each record in concatenated message records (a pull body): TOTALSIZE walked in Python.

    Raises RemoteProtocolError for a bad magic or a record running past `end`; a commit-log segment,
    which may end in a blank record and zeros, is scanned by `orbitmq.spark.store_source` instead.
    """
    end = len(buf) if end is None else end
    positions: list[int] = []
    append = positions.append
    unpack = _HEAD.unpack_from
    pos = start
    while pos < end:
        if pos + MIN_RECORD_SIZE > end:
            raise RemoteProtocolError(f"truncated message record at {pos}: {end - pos} bytes left")
        size, magic = unpack(buf, pos)
        if magic != MESSAGE_MAGIC or size < MIN_RECORD_SIZE or pos + size > end:
            kind = "blank record" if magic == BLANK_MAGIC else f"magic {magic:#010x}"
            raise RemoteProtocolError(f"malformed message record at {pos} (size {size}, {kind})")
        append(pos)
        pos += size
    return positions


def record_starts(buf: Any) -> np.ndarray:
    """`record_positions` as an int64 array, found without a Python loop when every record has the
    same size (fixed-size bodies, one topic, same properties layout: a common shape of bulk data).

    The guess "record k starts at k * size of the first" is kept only if TOTALSIZE at every guessed
    start equals that size and every magic is right; by induction a sequential walk would then find
    exactly these starts, with the same checks. Otherwise the records are walked one by one.
    """
    end = len(buf)
    if end >= MIN_RECORD_SIZE:
        first, magic = _HEAD.unpack_from(buf, 0)
        if magic == MESSAGE_MAGIC and first >= MIN_RECORD_SIZE and end % first == 0:
            u8 = np.frombuffer(buf, dtype=np.uint8)
            rows = u8.reshape(end // first, first)[:, :8].copy().view(_SIZE_MAGIC).reshape(-1)
            if bool((rows["size"] == first).all()) and bool((rows["magic"] == MESSAGE_MAGIC).all()):
                return np.arange(0, end, first, dtype=np.int64)
    return np.asarray(record_positions(buf), dtype=np.int64)


def empty_batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], ARROW_SCHEMA)


def _gather(u8: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """`(n, width)` bytes at each start; rows are contiguous, so they can be viewed as big-endian ints.

    A strided view of `u8` (no copy, no index array) when the starts are evenly spaced, as they are
    for records of one size; else a gather. Every start + width must lie within `u8`.
    """
    rows = _strided(u8, starts, width)
    return rows if rows is not None else u8[starts[:, None] + np.arange(width, dtype=np.int64)]


def _strided(u8: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray | None:
    """`(n, width)` bytes at each start as a read-only strided view of `u8`, when the starts (n > 1)
    are evenly spaced and every row lies within `u8`; else None."""
    n = len(starts)
    if n < 2:
        return None
    first = int(starts[0])
    stride = int(starts[1]) - first
    if (
        stride > 0
        and first >= 0
        and first + stride * (n - 1) + width <= len(u8)
        and (n < 3 or bool((np.diff(starts) == stride).all()))
    ):
        return np.lib.stride_tricks.as_strided(
            u8[first:], shape=(n, width), strides=(stride, 1), writeable=False
        )
    return None


def _be(u8: np.ndarray, starts: np.ndarray, dtype: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return _gather(u8, starts, width).view(dtype).reshape(-1).astype(dtype[1:])


_VIEW_INLINE: Final = 12  # an Arrow binary view holds values of up to 12 bytes inline
_INLINE_COLUMNS: Final = np.arange(_VIEW_INLINE, dtype=np.int64)


def _spans(buf: pa.Buffer, u8: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """The byte spans `[start, start + length)` of `buf` as one `binary` array, without Python per span.

    The spans become an Arrow `binary_view` array whose views point into `buf` (built with numpy:
    length, inline bytes or 4-byte prefix, buffer 0, offset), which Arrow's cast then gathers into a
    contiguous `binary` array: the bytes are copied once, in C.
    """
    n = len(starts)
    if n and (int(lengths.min()) < 0 or int((starts + lengths).max()) > len(u8)):
        raise RemoteProtocolError("a field of a message record has a bad length or runs past the data")
    if int(starts.max(initial=0)) > 0x7FFFFFFF:
        raise ValueError("more than 2 GiB of records in one Arrow batch; decode fewer at a time")
    if n > 1 and bool((lengths == lengths[0]).all()):
        # One width, evenly spaced (records of one size): one strided copy, no views, no cast.
        width = int(lengths[0])
        rows = _strided(u8, starts, width)
        if rows is not None and n * width <= 0x7FFFFFFF:
            values = np.ascontiguousarray(rows).reshape(-1)
            offsets = (
                np.arange(0, n * width + 1, width, dtype=np.int32) if width else np.zeros(n + 1, np.int32)
            )
            return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values)])
    views = np.zeros((n, 16), dtype=np.uint8)
    words = views.view("<i4")
    words[:, 0] = lengths
    long_values = lengths > _VIEW_INLINE
    if n and bool(long_values.all()):  # bodies: only the 4-byte prefix, buffer 0, offset
        views[:, 4:8] = _gather(u8, starts, 4)
        words[:, 3] = starts
    else:
        # Inline bytes (values up to 12 bytes) or the 4-byte prefix, read from the start of each span;
        # bytes past the value's length are zero, as the format requires.
        if n and int(starts.max()) + _VIEW_INLINE <= len(u8):
            head = np.array(_gather(u8, starts, _VIEW_INLINE))
        else:
            idx = starts[:, None] + _INLINE_COLUMNS
            np.minimum(idx, max(len(u8) - 1, 0), out=idx)
            head = u8[idx] if len(u8) else np.zeros((n, _VIEW_INLINE), dtype=np.uint8)
        head[lengths[:, None] <= _INLINE_COLUMNS] = 0
        views[:, 4:] = head
        words[long_values, 2] = 0
        words[long_values, 3] = starts[long_values]
    array = pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(views), buf])
    return array.cast(pa.binary())


def _as_string(binary: pa.Array) -> pa.Array:
    """A `binary` array as `string`: its buffers reused when they are valid UTF-8, else decoded lossily."""
    n = len(binary)
    array = pa.Array.from_buffers(pa.string(), n, binary.buffers())
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        # Java writes UTF-8, but a record is bytes: undecodable text is replaced, as Java's new String does.
        array = pa.array(
            [b.decode(_UTF8, "replace") for b in binary.to_pylist()],
            pa.string(),
        )
    return array


def _packed_hosts(packed: np.ndarray) -> pa.Array:
    """ "ip:port" of IPv4 host fields read as big-endian 8-byte ints; formatted once per distinct host
    (a pull holds few of them, most often one)."""
    n = len(packed)
    if n and bool((packed == packed[0]).all()):
        return pa.repeat(pa.scalar(host_string(int(packed[0]).to_bytes(8, "big")), pa.string()), n)
    distinct, inverse = np.unique(packed, return_inverse=True)
    texts = pa.array([host_string(int(k).to_bytes(8, "big")) for k in distinct.tolist()], pa.string())
    return texts.take(pa.array(inverse.reshape(-1).astype(np.int32)))


def _hosts(u8: np.ndarray, starts: np.ndarray, v6: np.ndarray, raw: memoryview) -> pa.Array:
    """ "ip:port" of each host field; formatted once per distinct host (a pull holds few of them)."""
    if not v6.any():
        return _packed_hosts(_gather(u8, starts, 8).view(">u8").reshape(-1))
    cache: dict[bytes, str] = {}
    out = []
    for s, is_v6 in zip(starts.tolist(), v6.tolist(), strict=True):
        field = bytes(raw[s : s + (20 if is_v6 else 8)])
        text = cache.get(field)
        if text is None:
            text = cache[field] = host_string(field)
        out.append(text)
    return pa.array(out, pa.string())


def _hex_ids(raw_ids: np.ndarray) -> pa.Array:
    """Uppercase hex of each row of `(n, 16)` bytes, as a string array of 32-character ids."""
    n = len(raw_ids)
    text = np.take(_HEX16, raw_ids).view(np.uint8).reshape(-1)
    offsets = np.arange(0, 32 * n + 1, 32, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text)])


def _offset_msg_ids(
    u8: np.ndarray, store_host_pos: np.ndarray, store_v6: np.ndarray, physical: np.ndarray, raw: memoryview
) -> pa.Array:
    """Broker message ids (fact sheet 5.5): uppercase hex of store host + commit-log offset."""
    n = len(physical)
    if not store_v6.any():
        raw_ids = np.empty((n, 16), dtype=np.uint8)
        raw_ids[:, :8] = _gather(u8, store_host_pos, 8)
        raw_ids[:, 8:] = physical.astype(">i8").view(np.uint8).reshape(n, 8)
        return _hex_ids(raw_ids)
    ids = []
    for s, is_v6, phys in zip(store_host_pos.tolist(), store_v6.tolist(), physical.tolist(), strict=True):
        field = bytes(raw[s : s + (20 if is_v6 else 8)])
        ids.append((field + int(phys).to_bytes(8, "big", signed=True)).hex().upper())
    return pa.array(ids, pa.string())


def _properties(strings: pa.Array, n: int) -> pa.MapArray:
    """RocketMQ's properties string (name U+0001 value U+0002 ...) as a map, decoded as Java decodes it:
    segments without a non-empty name and value are dropped; a value may contain U+0001 (each segment is
    split at its first U+0001 only; splitting is a third cheaper than a regex match per segment)."""
    segments = pc.split_pattern(strings, "\x02")
    parents = np.asarray(pc.list_parent_indices(segments))
    pairs = pc.split_pattern(segments.flatten(), "\x01", max_splits=1)
    split = np.asarray(pc.list_value_length(pairs).fill_null(0)) == 2
    pairs = pairs.filter(pa.array(split))
    keys = pc.list_element(pairs, 0)
    values = pc.list_element(pairs, 1)
    both = pc.and_(pc.greater(pc.binary_length(keys), 0), pc.greater(pc.binary_length(values), 0))
    keys = keys.filter(both)
    values = values.filter(both)
    counts = np.bincount(parents[split][np.asarray(both)], minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    result = pa.MapArray.from_arrays(pa.array(offsets), keys, values)
    if not result.type.equals(ARROW_SCHEMA.field("properties").type):
        result = result.cast(ARROW_SCHEMA.field("properties").type)
    return result


def _lookup(properties: pa.MapArray, name: str) -> pa.Array:
    return pc.map_lookup(properties, pa.scalar(name, pa.string()), "last")


@dataclass(slots=True)
class _Fixed:
    """The fixed-position fields of n records (numpy arrays, native byte order) and their hosts."""

    queue_id: np.ndarray
    queue_offset: np.ndarray
    physical: np.ndarray
    sys_flag: np.ndarray
    born_ts: np.ndarray
    store_ts: np.ndarray
    reconsume: np.ndarray
    body_len: np.ndarray
    body_pos: np.ndarray
    born_host: pa.Array
    store_host: pa.Array
    offset_ids: Callable[[], pa.Array]  # broker message ids, built only when a record lacks UNIQ_KEY


def _header_block(data: pa.Buffer, u8: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The first 88 bytes of every record as a `_HEADER_V4` array: a strided view of the data when the
    records are evenly spaced, else one copy of each record's head (Arrow's cast, in C)."""
    n = len(pos)
    width = _HEADER_V4.itemsize
    start = int(pos[0])
    stride = int(pos[1] - pos[0]) if n > 1 else width
    if (
        stride >= width
        and start + stride * (n - 1) + width <= len(u8)
        and (n < 3 or bool((np.diff(pos) == stride).all()))
    ):
        rows = np.lib.stride_tricks.as_strided(u8[start:], shape=(n, width), strides=(stride, 1))
        return rows.view(_HEADER_V4).reshape(n)
    heads = _spans(data, u8, pos, np.full(n, width, dtype=np.int64))
    values = np.frombuffer(heads.buffers()[2], dtype=np.uint8)
    first = int(np.frombuffer(heads.buffers()[1], dtype=np.int32)[heads.offset])
    return values[first : first + n * width].view(_HEADER_V4)


def _fixed_v4(hdr: np.ndarray, pos: np.ndarray) -> _Fixed:
    body_len = hdr["body_len"].astype(np.int64)
    physical = hdr["physical"].astype(np.int64)
    store_host = hdr["store_host"]

    def offset_ids() -> pa.Array:
        n = len(physical)
        raw_ids = np.empty((n, 16), dtype=np.uint8)
        raw_ids[:, :8] = store_host.astype(">u8").view(np.uint8).reshape(n, 8)
        raw_ids[:, 8:] = physical.astype(">i8").view(np.uint8).reshape(n, 8)
        return _hex_ids(raw_ids)

    return _Fixed(
        queue_id=hdr["queue_id"].astype(np.int32),
        queue_offset=hdr["queue_offset"].astype(np.int64),
        physical=physical,
        sys_flag=hdr["sys_flag"].astype(np.int32),
        born_ts=hdr["born_ts"].astype(np.int64),
        store_ts=hdr["store_ts"].astype(np.int64),
        reconsume=hdr["reconsume"].astype(np.int32),
        body_len=body_len,
        body_pos=pos + _HEADER_V4.itemsize,
        born_host=_packed_hosts(hdr["born_host"]),
        store_host=_packed_hosts(store_host),
        offset_ids=offset_ids,
    )


def _fixed_general(u8: np.ndarray, pos: np.ndarray, raw: memoryview) -> _Fixed:
    """Field by field, for batches with an IPv6 host (whose fields shift the layout per record)."""
    physical = _be(u8, pos + 28, ">i8")
    sys_flag = _be(u8, pos + 36, ">i4")
    born_v6 = (sys_flag & BORNHOST_V6_FLAG) != 0
    store_v6 = (sys_flag & STOREHOSTADDRESS_V6_FLAG) != 0
    store_ts_pos = pos + 56 + 12 * born_v6
    store_host_pos = store_ts_pos + 8
    reconsume_pos = store_host_pos + 8 + 12 * store_v6
    return _Fixed(
        queue_id=_be(u8, pos + 12, ">i4"),
        queue_offset=_be(u8, pos + 20, ">i8"),
        physical=physical,
        sys_flag=sys_flag,
        born_ts=_be(u8, pos + 40, ">i8"),
        store_ts=_be(u8, store_ts_pos, ">i8"),
        reconsume=_be(u8, reconsume_pos, ">i4"),
        body_len=_be(u8, reconsume_pos + 12, ">i4").astype(np.int64),
        body_pos=reconsume_pos + 16,
        born_host=_hosts(u8, pos + 48, born_v6, raw),
        store_host=_hosts(u8, store_host_pos, store_v6, raw),
        offset_ids=lambda: _offset_msg_ids(u8, store_host_pos, store_v6, physical, raw),
    )


def decode_batch(buf: Any, positions: Sequence[int] | np.ndarray, *, broker: str | None) -> pa.RecordBatch:
    """One Arrow batch (schema `ARROW_SCHEMA`) of the message records starting at `positions` in `buf`.

    The records must be complete and well-formed (use `record_positions` / `record_starts`, or a
    commit-log scan, to find them). Compressed bodies are decompressed. `broker` fills the broker
    column (null when unknown).
    """
    n = len(positions)
    if n == 0:
        return empty_batch()
    raw = memoryview(buf)
    if raw.ndim != 1 or raw.itemsize != 1:
        raw = raw.cast("B")
    u8 = np.frombuffer(raw, dtype=np.uint8)
    data = pa.py_buffer(raw)
    pos = np.asarray(positions, dtype=np.int64)

    hdr = _header_block(data, u8, pos)
    v6 = (hdr["sys_flag"] & (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)) != 0
    fixed = _fixed_general(u8, pos, raw) if v6.any() else _fixed_v4(hdr, pos)
    body_len, body_pos, sys_flag = fixed.body_len, fixed.body_pos, fixed.sys_flag
    if n and (int(body_len.min()) < 0 or int((body_pos + body_len).max()) >= len(u8)):
        raise RemoteProtocolError("a message record's body length runs past the data")
    topic_len = u8[body_pos + body_len].astype(np.int64)
    topic_pos = body_pos + body_len + 1
    properties_len = _be(u8, topic_pos + topic_len, ">i2").astype(np.int64)
    properties_pos = topic_pos + topic_len + 2

    compressed = (sys_flag & COMPRESSED_FLAG) != 0
    if compressed.any():
        bodies = [
            decompress_body(raw[s : s + b], f) if f & COMPRESSED_FLAG else raw[s : s + b]
            for s, b, f in zip(body_pos.tolist(), body_len.tolist(), sys_flag.tolist(), strict=True)
        ]
        body_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(b) for b in bodies], out=body_offsets[1:])
        if body_offsets[-1] > 0x7FFFFFFF:
            raise ValueError("more than 2 GiB of bodies in one Arrow batch; decode fewer records at a time")
        body = pa.Array.from_buffers(
            pa.binary(),
            n,
            [None, pa.py_buffer(body_offsets.astype(np.int32)), pa.py_buffer(b"".join(bodies))],
        )
    else:
        body = _spans(data, u8, body_pos, body_len)

    topic = _as_string(_spans(data, u8, topic_pos, topic_len))
    properties_text = _as_string(_spans(data, u8, properties_pos, properties_len))
    properties = _properties(properties_text, n)
    uniq = _lookup(properties, "UNIQ_KEY")
    msg_id = uniq
    if uniq.null_count:
        msg_id = pc.coalesce(uniq, fixed.offset_ids())

    columns = [
        topic,
        pa.nulls(n, pa.string()) if broker is None else pa.repeat(pa.scalar(broker, pa.string()), n),
        pa.array(fixed.queue_id, pa.int32()),
        pa.array(fixed.queue_offset, pa.int64()),
        body,
        _lookup(properties, "TAGS"),
        _lookup(properties, "KEYS"),
        properties,
        msg_id,
        pa.array(fixed.born_ts * 1000, _TIMESTAMP),
        pa.array(fixed.store_ts * 1000, _TIMESTAMP),
        fixed.born_host,
        fixed.store_host,
        pa.array(fixed.reconsume, pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
