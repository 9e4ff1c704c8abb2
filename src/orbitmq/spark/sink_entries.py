"""The sink's batch entries built a column at a time: every row of an Arrow batch encoded in the
SEND_BATCH_MESSAGE entry format with numpy and Arrow compute (no Python per row), and each row's queue.

A strided fill copies the pieces when each has one width for the batch, else Arrow's element-wise join
does; the bodies are copied once.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from orbitmq.message import properties as P
from orbitmq.message.hashing import java_string_hash

_HEX_DIGITS = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_UNIQ_PREFIX = f"{P.UNIQ_KEY}\x01".encode()


def queue_plan(
    topic_of_row: np.ndarray,
    queue_counts: list[int],
    keys: pa.Array | None,
    spread: int,
    per_batch: int,
) -> tuple[np.ndarray, int]:
    """The queue index (into its topic's writable queues) of every row, and the new spread counter.

    A row with a sharding key goes to abs(Java String.hashCode(key)) modulo its topic's queue count
    (RocketMQ's SelectMessageQueueByHash); the hash is computed once per distinct key. Rows without
    one take the spread counter in row order and change queue every `per_batch` rows."""
    n = len(topic_of_row)
    counts = np.asarray(queue_counts, dtype=np.int64)[topic_of_row]
    keyed = np.zeros(n, dtype=bool)
    queue = np.zeros(n, dtype=np.int64)
    if keys is not None:
        encoded = pc.dictionary_encode(keys)
        hashes = np.asarray(
            [abs(java_string_hash(k)) for k in encoded.dictionary.to_pylist()] or [0], dtype=np.int64
        )
        indices = encoded.indices
        keyed = np.asarray(pc.is_valid(indices), dtype=bool)
        idx = np.asarray(pc.fill_null(indices, 0), dtype=np.int64)
        queue = np.where(keyed, hashes[idx] % counts, 0)
    free = ~keyed
    taken = int(free.sum())
    if taken:
        turns = spread + np.arange(taken, dtype=np.int64)
        queue[free] = (turns // per_batch) % counts[free]
    return queue, spread + taken


def property_column(name: str, values: pa.Array) -> pa.Array:
    """`name` U+0001 value U+0002 for each non-empty value, else empty (binary)."""
    values = pc.fill_null(values.cast(pa.binary()), b"")
    joined = pc.binary_join_element_wise(
        pa.scalar(f"{name}\x01".encode(), pa.binary()), values, pa.scalar(b"\x02", pa.binary()), b""
    )
    return pc.if_else(pc.greater(pc.binary_length(values), 0), joined, pa.scalar(b"", pa.binary()))


def _non_empty(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.greater(pc.binary_length(values.cast(pa.binary())), 0), False))


def _rebuild_lists(n: int, parents: np.ndarray, values: pa.Array) -> pa.Array:
    """A list array of n rows whose row i holds the `values` whose parent is i (parents ascending)."""
    counts = np.bincount(parents, minlength=n) if parents.size else np.zeros(n, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def _joined_keys(keys: pa.Array) -> pa.Array:
    """array<string> keys as one space-separated string per row, empty and null elements left out."""
    flat = pc.list_flatten(keys)
    parents = np.asarray(pc.list_parent_indices(keys), dtype=np.int64)
    keep = _non_empty(flat)
    lists = _rebuild_lists(len(keys), parents[keep], flat.filter(pa.array(keep)))
    return pc.binary_join(lists, " ")


def _map_properties(props: pa.Array, tags: pa.Array | None, keys: pa.Array | None) -> pa.Array:
    """The `properties` map as `name` U+0001 `value` U+0002 runs (binary, one per row). Entries with a
    null value are left out (as the row path and Java do), so are UNIQ_KEY (the sink sets it) and TAGS /
    KEYS where the row's `tags` / `keys` column sets them."""
    n = len(props)
    entry = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())])
    lists = props.cast(pa.list_(entry))
    flat = pc.list_flatten(lists)
    parents = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
    names, values = flat.field("key"), flat.field("value")
    keep = np.asarray(pc.is_valid(values)) & np.asarray(pc.not_equal(names, P.UNIQ_KEY))
    for name, column in ((P.TAGS, tags), (P.KEYS, keys)):
        if column is not None:
            overridden = _non_empty(column)[parents] & np.asarray(pc.equal(names, name))
            keep &= ~overridden
    pieces = pc.binary_join_element_wise(  # name U+0001 value U+0002 in one pass (no separator)
        names.cast(pa.binary()),
        pa.scalar(b"\x01", pa.binary()),
        pc.fill_null(values.cast(pa.binary()), b""),
        pa.scalar(b"\x02", pa.binary()),
        pa.scalar(b"", pa.binary()),
    )
    lists_kept = _rebuild_lists(n, parents[keep], pieces.filter(pa.array(keep)))
    return pc.binary_join(lists_kept, pa.scalar(b"", pa.binary()))


def _hex(values: np.ndarray) -> np.ndarray:
    """(n, k) bytes as (n, 2k) uppercase hex digits (ASCII), without a Python loop."""
    nibbles = np.empty((values.shape[0], 2 * values.shape[1]), dtype=np.uint8)
    nibbles[:, 0::2] = values >> 4
    nibbles[:, 1::2] = values & 15
    return np.take(_HEX_DIGITS, nibbles)


def _same_width(values: pa.Array) -> np.ndarray | None:
    """A binary array whose values all have one length, as an (n, width) view of its data buffer;
    None when the lengths differ or a value is null."""
    n = len(values)
    if values.null_count or n == 0:
        return None
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset : values.offset + n + 1]
    width = int(offsets[1] - offsets[0])
    if int(offsets[-1] - offsets[0]) != width * n or np.any(np.diff(offsets) != width):
        return None
    data = values.buffers()[2]
    if width == 0 or data is None:
        return np.empty((n, 0), dtype=np.uint8)
    start = int(offsets[0])
    return np.frombuffer(data, dtype=np.uint8)[start : start + width * n].reshape(n, width)


def fill_entries(pieces: list[np.ndarray | pa.Array]) -> pa.Array | None:
    """The entries of rows whose every piece (header, body, each property run) has one width for the
    whole batch -- fixed-size bodies, the body-only case -- copied column by column into one buffer:
    a strided copy per piece instead of Arrow's per-value join. None when a width varies."""
    columns: list[np.ndarray] = []
    for piece in pieces:
        column = piece if isinstance(piece, np.ndarray) else _same_width(piece)
        if column is None:
            return None
        columns.append(column)
    n = columns[0].shape[0]
    width = sum(c.shape[1] for c in columns)
    if width * n >= 2**31:  # a binary array's offsets are int32
        return None
    # From Arrow's pool, which keeps freed pages: the buffer lives until its last batch is sent, and
    # a fresh mmap per Arrow batch (numpy's allocation of this size) pays a page fault per 4 KiB.
    data = pa.allocate_buffer(width * n)
    out = np.frombuffer(data, dtype=np.uint8).reshape(n, width)
    at = 0
    for column in columns:
        out[:, at : at + column.shape[1]] = column
        at += column.shape[1]
    offsets = np.arange(0, width * n + 1, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), data])


def encode_entries(batch: pa.RecordBatch, prefix: bytes, first_row: int) -> pa.Array:
    """The rows as batch-wire-format entries (a `binary` array: one contiguous buffer of entries).

    Each entry: TOTALSIZE, MAGIC 0, BODYCRC 0, FLAG 0, BODYLEN, body, PROPERTIESLEN (short), properties;
    properties are TAGS, KEYS (when set) and UNIQ_KEY, as the row path writes them.
    """
    n = batch.num_rows
    names = batch.schema.names
    body = batch.column("body").cast(pa.binary())
    parts: list[pa.Array] = []
    tags = batch.column("tags") if "tags" in names else None
    keys = batch.column("keys") if "keys" in names else None
    if keys is not None and not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        keys = _joined_keys(keys)
    if "properties" in names:
        parts.append(_map_properties(batch.column("properties"), tags, keys))
    if tags is not None:
        parts.append(property_column(P.TAGS, tags))
    if keys is not None:
        parts.append(property_column(P.KEYS, keys))
    rows = np.arange(first_row, first_row + n, dtype=np.uint64).astype(">u8").view(np.uint8).reshape(n, 8)
    ids = np.empty((n, len(_UNIQ_PREFIX) + 32), dtype=np.uint8)
    head = _UNIQ_PREFIX + prefix.hex().upper().encode()
    ids[:, : len(head)] = np.frombuffer(head, dtype=np.uint8)
    ids[:, len(head) :] = _hex(rows[:, 2:])
    width = ids.shape[1]
    parts.append(
        pa.Array.from_buffers(
            pa.binary(),
            n,
            [None, pa.py_buffer(np.arange(0, width * n + 1, width, dtype=np.int32)), pa.py_buffer(ids)],
        )
    )
    props_len = np.full(n, width, dtype=np.int64)
    for part in parts[:-1]:
        props_len += np.asarray(pc.binary_length(part), dtype=np.int64)
    if int(props_len.max()) > 0x7FFF:
        raise ValueError("the properties of a row are longer than 32767 bytes")
    body_len = np.asarray(pc.fill_null(pc.binary_length(body), 0), dtype=np.int64)
    fixed = np.zeros((n, 5), dtype=">i4")
    fixed[:, 0] = 22 + body_len + props_len
    fixed[:, 4] = body_len
    props_short = props_len.astype(">i2")
    filled = fill_entries([fixed.view(np.uint8), body, props_short.view(np.uint8).reshape(n, 2), *parts])
    if filled is not None:
        return filled
    offsets20 = pa.py_buffer(np.arange(0, 20 * n + 1, 20, dtype=np.int32))
    offsets2 = pa.py_buffer(np.arange(0, 2 * n + 1, 2, dtype=np.int32))
    # The small pieces (properties length and text) are joined first: Arrow's element-wise join of
    # many arrays is several times slower per row than two joins of few, and the body is copied once.
    empty = pa.scalar(b"", pa.binary())
    tail = pc.binary_join_element_wise(
        pa.Array.from_buffers(pa.binary(), n, [None, offsets2, pa.py_buffer(props_short)]), *parts, empty
    )
    entries = pc.binary_join_element_wise(
        pa.Array.from_buffers(pa.binary(), n, [None, offsets20, pa.py_buffer(fixed)]), body, tail, empty
    )
    if entries.null_count:
        raise ValueError("a row could not be encoded (null value)")
    return entries
