"""`scan_record`: the sans-IO record check the store runs in recovery and in dispatch.

It answers "what is at this position of the commit log?" without ever raising:

- "message": a complete, consistent record (magic 0xDAA320A7, the lengths in the record add up to
  TOTALSIZE, and -- when `check_crc` -- BODYCRC matches the body). The fields the dispatcher needs for
  consume-queue and index entries are derived: tags code (Java hash of TAGS; the delivery time for
  SCHEDULE_TOPIC_XXXX when delay levels are given), KEYS, UNIQ_KEY, DELAY.
- "blank": the end-of-file marker (magic 0xCBD43194); `size` is its TOTALSIZE, the bytes left in the file.
- "invalid": anything else -- zeros (unwritten tail), a torn or truncated record, a CRC mismatch, a 5.x
  V2 record. Recovery stops there (fact sheet 6.7, checkMessageAndReturnSize).

Lenient where Java would throw on content rather than layout: an unparsable DELAY value counts as no
delay (Java would reject the whole record); undecodable UTF-8 is replaced, as Java's `new String` does.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Sequence
from typing import Final, Literal, NamedTuple

from orbitmq.message import properties as P
from orbitmq.message.hashing import tags_code as _tags_code
from orbitmq.message.property_string import decode_properties
from orbitmq.message.record_layout import (
    BLANK_MAGIC,
    HEADER_SIZE_V4,
    MAX_TOPIC_LENGTH,
    MESSAGE_MAGIC,
    SYSFLAG_POS,
    fixed_struct,
)

SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"

RecordKind = Literal["message", "blank", "invalid"]

_HEAD: Final = struct.Struct(">iI")
_INT: Final = struct.Struct(">i")
_SHORT: Final = struct.Struct(">h")


class ScannedRecord(NamedTuple):
    kind: RecordKind
    size: int  # TOTALSIZE for "message" and "blank"; 0 for "invalid"
    topic: str = ""
    queue_id: int = 0
    queue_offset: int = 0
    physical_offset: int = 0
    sys_flag: int = 0
    store_timestamp: int = 0
    tags_code: int = 0
    keys: str | None = None
    uniq_key: str | None = None
    properties: dict[str, str] = {}  # noqa: RUF012 -- NamedTuple default, never mutated by this module
    born_timestamp: int = 0
    delay_level: int = 0
    flag: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_pos: int = 0  # absolute position of BODY in the scanned buffer
    body_len: int = 0


INVALID: Final = ScannedRecord("invalid", 0)


def scan_record(
    buf: bytes | bytearray | memoryview | mmap.mmap,
    pos: int,
    *,
    check_crc: bool = True,
    delay_levels_ms: Sequence[int] | None = None,
) -> ScannedRecord:
    """What the bytes at `buf[pos:]` hold; never raises.

    `delay_levels_ms[i]` is the delay of level i+1; when given, a SCHEDULE_TOPIC_XXXX record's tags code
    is its delivery time (store timestamp + delay of its DELAY level, clamped to the last level), as the
    consume queue of that topic stores it.
    """
    end = len(buf)
    if pos < 0 or pos + 8 > end:
        return INVALID
    size, magic = _HEAD.unpack_from(buf, pos)
    if magic == BLANK_MAGIC:
        return ScannedRecord("blank", size)
    if magic != MESSAGE_MAGIC or pos + HEADER_SIZE_V4 > end:
        return INVALID
    fixed = fixed_struct(_INT.unpack_from(buf, pos + SYSFLAG_POS)[0])
    body_pos = pos + fixed.size
    record_end = pos + size
    if record_end > end or body_pos + 3 > record_end:
        return INVALID
    (
        _,
        _,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        _,
        store_timestamp,
        _,
        reconsume_times,
        prepared_transaction_offset,
        body_len,
    ) = fixed.unpack_from(buf, pos)
    topic_len_pos = body_pos + body_len
    if body_len < 0 or topic_len_pos + 3 > record_end:
        return INVALID
    topic_len = buf[topic_len_pos]
    properties_len_pos = topic_len_pos + 1 + topic_len
    if topic_len > MAX_TOPIC_LENGTH or properties_len_pos + 2 > record_end:
        return INVALID
    properties_len = _SHORT.unpack_from(buf, properties_len_pos)[0]
    if properties_len < 0 or properties_len_pos + 2 + properties_len != record_end:
        return INVALID
    view = memoryview(buf)
    try:
        if check_crc and zlib.crc32(view[body_pos:topic_len_pos]) & 0x7FFFFFFF != body_crc:
            return INVALID
        topic = str(view[topic_len_pos + 1 : properties_len_pos], "utf-8", "replace")
        properties = (
            decode_properties(str(view[properties_len_pos + 2 : record_end], "utf-8", "replace"))
            if properties_len
            else {}
        )
    finally:
        view.release()  # an exported view would keep an mmap from being closed or resized
    tags_code = _tags_code(properties.get(P.TAGS))
    delay_level = 0
    delay_text = properties.get(P.DELAY)
    if delay_text is not None:
        try:
            delay_level = int(delay_text)
        except ValueError:
            delay_level = 0
    if delay_levels_ms and delay_level > 0 and topic == SCHEDULE_TOPIC:
        tags_code = store_timestamp + delay_levels_ms[min(delay_level, len(delay_levels_ms)) - 1]
    return ScannedRecord(
        "message",
        size,
        topic,
        queue_id,
        queue_offset,
        physical_offset,
        sys_flag,
        store_timestamp,
        tags_code,
        properties.get(P.KEYS),
        properties.get(P.UNIQ_KEY),
        properties,
        born_timestamp,
        delay_level,
        flag,
        body_crc,
        reconsume_times,
        prepared_transaction_offset,
        body_pos,
        body_len,
    )
