"""Message records (fact sheet 5.1) decoded straight into Arrow record batches, a column at a time.

The source's rows are built here, never as Python tuples: Spark's tuple path converts every value in
Python and is several times slower than handing it ready Arrow batches. The work per record in Python
is one `unpack_from` of TOTALSIZE (records are variable-length, so finding the next one is sequential);
every fixed field is gathered for all records at once with numpy, the variable-length fields (body,
topic, properties) become Arrow binary views into the pulled bytes that one Arrow cast copies into
contiguous columns, and the properties string becomes a `map<string,string>` (and tags, keys, UNIQ_KEY)
through Arrow compute.

`ROW_DDL` / `ARROW_SCHEMA` are the source's row schema; the Arrow schema must equal what Spark derives
from the DDL (`to_arrow_schema(..., timezone="UTC")`), or Spark rejects the batches.

Knows the record layout only: no pyspark, no network, no files.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
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
_HEX: Final = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)
_PROPERTY_RE: Final = "^(?P<k>[^\x01]+)\x01(?P<v>(?s:.+))$"
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


def empty_batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], ARROW_SCHEMA)


def _gather(u8: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """`(n, width)` bytes at each start; rows are contiguous, so they can be viewed as big-endian ints."""
    return u8[starts[:, None] + np.arange(width, dtype=np.int64)]


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
    views = np.zeros((n, 16), dtype=np.uint8)
    words = views.view("<i4")
    words[:, 0] = lengths
    # Inline bytes (values up to 12 bytes) or the 4-byte prefix, read from the start of each span;
    # bytes past the value's length are zero, as the format requires.
    idx = starts[:, None] + _INLINE_COLUMNS
    np.minimum(idx, max(len(u8) - 1, 0), out=idx)
    head = u8[idx] if len(u8) else np.zeros((n, _VIEW_INLINE), dtype=np.uint8)
    head[lengths[:, None] <= _INLINE_COLUMNS] = 0
    views[:, 4:] = head
    long_values = lengths > _VIEW_INLINE
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


def _hosts(u8: np.ndarray, starts: np.ndarray, v6: np.ndarray, raw: memoryview) -> pa.Array:
    """ "ip:port" of each host field; formatted once per distinct host (a pull holds few of them)."""
    if not v6.any():
        packed = _gather(u8, starts, 8).view(">u8").reshape(-1)
        distinct, inverse = np.unique(packed, return_inverse=True)
        texts = pa.array([host_string(int(k).to_bytes(8, "big")) for k in distinct.tolist()], pa.string())
        return texts.take(pa.array(inverse.reshape(-1).astype(np.int32)))
    cache: dict[bytes, str] = {}
    out = []
    for s, is_v6 in zip(starts.tolist(), v6.tolist(), strict=True):
        field = bytes(raw[s : s + (20 if is_v6 else 8)])
        text = cache.get(field)
        if text is None:
            text = cache[field] = host_string(field)
        out.append(text)
    return pa.array(out, pa.string())


def _offset_msg_ids(
    u8: np.ndarray, store_host_pos: np.ndarray, store_v6: np.ndarray, physical: np.ndarray, raw: memoryview
) -> pa.Array:
    """Broker message ids (fact sheet 5.5): uppercase hex of store host + commit-log offset."""
    n = len(physical)
    if not store_v6.any():
        raw_ids = np.empty((n, 16), dtype=np.uint8)
        raw_ids[:, :8] = _gather(u8, store_host_pos, 8)
        raw_ids[:, 8:] = physical.astype(">i8").view(np.uint8).reshape(n, 8)
        text = _HEX[raw_ids].reshape(-1)
        offsets = np.arange(0, 32 * n + 1, 32, dtype=np.int32)
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text)])
    ids = []
    for s, is_v6, phys in zip(store_host_pos.tolist(), store_v6.tolist(), physical.tolist(), strict=True):
        field = bytes(raw[s : s + (20 if is_v6 else 8)])
        ids.append((field + int(phys).to_bytes(8, "big", signed=True)).hex().upper())
    return pa.array(ids, pa.string())


def _properties(strings: pa.Array, n: int) -> pa.MapArray:
    """RocketMQ's properties string (name U+0001 value U+0002 ...) as a map, decoded as Java decodes it:
    segments without a non-empty name and value are dropped; a value may contain U+0001."""
    segments = pc.split_pattern(strings, "\x02")
    flat = segments.flatten()
    parents = np.asarray(pc.list_parent_indices(segments))
    pairs = pc.extract_regex(flat, _PROPERTY_RE)
    valid = np.asarray(pairs.is_valid())
    keys = pc.struct_field(pairs, "k").filter(pa.array(valid))
    values = pc.struct_field(pairs, "v").filter(pa.array(valid))
    counts = np.bincount(parents[valid], minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    result = pa.MapArray.from_arrays(pa.array(offsets), keys, values)
    if not result.type.equals(ARROW_SCHEMA.field("properties").type):
        result = result.cast(ARROW_SCHEMA.field("properties").type)
    return result


def _lookup(properties: pa.MapArray, name: str) -> pa.Array:
    return pc.map_lookup(properties, pa.scalar(name, pa.string()), "last")


def decode_batch(buf: Any, positions: Sequence[int], *, broker: str | None) -> pa.RecordBatch:
    """One Arrow batch (schema `ARROW_SCHEMA`) of the message records starting at `positions` in `buf`.

    The records must be complete and well-formed (use `record_positions`, or a commit-log scan, to find
    them). Compressed bodies are decompressed. `broker` fills the broker column (null when unknown).
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

    queue_id = _be(u8, pos + 12, ">i4")
    queue_offset = _be(u8, pos + 20, ">i8")
    physical = _be(u8, pos + 28, ">i8")
    sys_flag = _be(u8, pos + 36, ">i4")
    born_ts = _be(u8, pos + 40, ">i8")
    born_v6 = (sys_flag & BORNHOST_V6_FLAG) != 0
    store_v6 = (sys_flag & STOREHOSTADDRESS_V6_FLAG) != 0
    store_ts_pos = pos + 56 + 12 * born_v6
    store_ts = _be(u8, store_ts_pos, ">i8")
    store_host_pos = store_ts_pos + 8
    reconsume_pos = store_host_pos + 8 + 12 * store_v6
    reconsume = _be(u8, reconsume_pos, ">i4")
    body_len = _be(u8, reconsume_pos + 12, ">i4")
    body_pos = reconsume_pos + 16
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
        msg_id = pc.coalesce(uniq, _offset_msg_ids(u8, store_host_pos, store_v6, physical, raw))

    columns = [
        topic,
        pa.nulls(n, pa.string()) if broker is None else pa.repeat(pa.scalar(broker, pa.string()), n),
        pa.array(queue_id, pa.int32()),
        pa.array(queue_offset, pa.int64()),
        body,
        _lookup(properties, "TAGS"),
        _lookup(properties, "KEYS"),
        properties,
        msg_id,
        pa.array(born_ts * 1000, _TIMESTAMP),
        pa.array(store_ts * 1000, _TIMESTAMP),
        _hosts(u8, pos + 48, born_v6, raw),
        _hosts(u8, store_host_pos, store_v6, raw),
        pa.array(reconsume, pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
