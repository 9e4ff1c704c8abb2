"""Checking a SEND_BATCH_MESSAGE body once (layout: message/batch.py's docstring).

`scan_batch` checks every entry and describes the batch by offsets: the request bytes, `FIELDS` ints per
message (flag, body position and length, properties position and length) and each message's properties
text. The store's batch path (store/batch_append.py) packs records straight from that description;
`decode_batch` turns it into BatchEntry objects. Malformed input raises ClientError with the entry, the
position and the reason. Compiled with mypyc (native.py): the check runs once per message of a batch.
"""

from __future__ import annotations

import struct
from typing import Final

from orbitmq.common.errors import ClientError
from orbitmq.message.batch import BATCH_ENTRY_OVERHEAD, BatchEntry

_HEAD: Final = struct.Struct(">iiiii")
FIELDS: Final = 5  # per message in ScannedBatch.layout: flag, body pos, body len, props pos, props len


class ScannedBatch:
    """A checked SEND_BATCH_MESSAGE body: the bytes, `FIELDS` ints per message and its properties."""

    __slots__ = (
        "count",
        "delayed",
        "layout",
        "max_body",
        "max_properties",
        "open_ended",
        "properties",
        "view",
    )

    def __init__(  # noqa: PLR0917 -- built in one place
        self,
        view: memoryview,
        layout: list[int],
        properties: list[str],
        max_body: int = -1,
        max_properties: int = -1,
        open_ended: int = -1,
        delayed: bool = True,
    ) -> None:
        self.view = view
        self.layout = layout
        self.properties = properties
        self.count = len(properties)
        # Summaries for the store's batch checks (-1 / True: unknown, check each message):
        self.max_body = max_body  # the longest body
        self.max_properties = max_properties  # the longest properties text (bytes)
        self.open_ended = open_ended  # messages with properties not ending in a separator (U+0002)
        self.delayed = delayed  # some message's properties mention DELAY

    def entries(self) -> list[BatchEntry]:
        """The messages as decode_batch returns them (for the object-based path)."""
        layout = self.layout
        view = self.view
        out: list[BatchEntry] = []
        for i in range(self.count):
            j = i * FIELDS
            body_pos = layout[j + 1]
            out.append(BatchEntry(layout[j], view[body_pos : body_pos + layout[j + 2]], self.properties[i]))
        return out


def scan_batch(body: bytes | bytearray | memoryview) -> ScannedBatch:
    """Check a batch body once (every entry's lengths, TOTALSIZE and UTF-8 properties)."""
    view = memoryview(body).cast("B") if isinstance(body, memoryview) else memoryview(body)
    end = len(view)
    pos = 0
    layout: list[int] = []
    properties: list[str] = []
    head = _HEAD
    overhead = BATCH_ENTRY_OVERHEAD  # (a global of an interpreted module: read once)
    max_body = 0
    max_properties = 0
    open_ended = 0
    delayed = False
    # Declared ints: unpack_from's tuple is untyped, and compiled, every sum and comparison with an
    # untyped value below would be a generic Python operation (about 16 per message).
    total_size: int
    flag: int
    body_len: int
    while pos < end:
        n = len(properties)
        if pos + overhead > end:
            raise ClientError(f"batch body truncated: entry {n} at byte {pos} has {end - pos} bytes")
        total_size, _, _, flag, body_len = head.unpack_from(view, pos)
        body_pos = pos + 20
        properties_len_pos = body_pos + body_len
        if body_len < 0 or properties_len_pos + 2 > end:
            raise ClientError(f"batch entry {n} at byte {pos}: body length {body_len} runs past the end")
        properties_len = (view[properties_len_pos] << 8) | view[properties_len_pos + 1]
        if properties_len >= 0x8000:
            properties_len -= 0x10000
        entry_end = properties_len_pos + 2 + properties_len
        if properties_len < 0 or entry_end > end:
            raise ClientError(
                f"batch entry {n} at byte {pos}: properties length {properties_len} runs past the end"
            )
        if total_size != entry_end - pos:
            raise ClientError(
                f"batch entry {n} at byte {pos}: TOTALSIZE {total_size} disagrees with its "
                f"lengths ({entry_end - pos})"
            )
        try:
            text = str(view[properties_len_pos + 2 : entry_end], "utf-8")
        except UnicodeDecodeError:
            raise ClientError(f"batch entry {n}: properties are not valid UTF-8") from None
        properties.append(text)
        layout += (flag, body_pos, body_len, properties_len_pos + 2, properties_len)
        max_body = max(max_body, body_len)
        if properties_len:
            max_properties = max(max_properties, properties_len)
            if view[entry_end - 1] != 2:
                open_ended += 1
            if "DELAY" in text:
                delayed = True
        pos = entry_end
    if not properties:
        raise ClientError("empty batch body")
    return ScannedBatch(view, layout, properties, max_body, max_properties, open_ended, delayed)


def decode_batch(body: bytes | bytearray | memoryview) -> list[BatchEntry]:
    """The entries of a SEND_BATCH_MESSAGE body; bodies are views into `body` (keep it alive)."""
    return scan_batch(body).entries()


__all__ = ["FIELDS", "ScannedBatch", "decode_batch", "scan_batch"]
