"""The read path of the message record: bytes (commit log, pull/query/view bodies) -> MessageExt.

`decode_record` / `decode_records` build complete MessageExt values: body copied out of the buffer once
(and decompressed when SYSFLAG bit 0 says so), born/store hosts as "ip:port", offset_msg_id computed from
the store host and the physical offset (fact sheet 5.5). Malformed bytes raise RemoteProtocolError: a
record that disagrees with its own TOTALSIZE came from a broken peer or a corrupt file. The body CRC
is not verified here (the store's `scan_record` does that during recovery).

The layout itself lives in `record_layout`; this module knows nothing of files or sockets.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from orbitmq.common.errors import ClientError, RemoteProtocolError
from orbitmq.message.compression import decompress_body
from orbitmq.message.hosts import host_string_of
from orbitmq.message.ids import offset_msg_id as make_offset_msg_id
from orbitmq.message.model import MessageExt
from orbitmq.message.property_string import decode_properties
from orbitmq.message.record_layout import (
    HEADER_SIZE_V4,
    MAX_TOPIC_LENGTH,
    MESSAGE_MAGIC,
    SYSFLAG_POS,
    Buffer,
    fixed_struct,
    unpack_record_header,
)
from orbitmq.message.sysflag import COMPRESSED_FLAG

# Indexed by the two IPv6 bits of SYSFLAG (bit 4 born host, bit 5 store host).
_FIXED_BY_V6_BITS: Final = tuple(fixed_struct(bits << 4) for bits in range(4))


@lru_cache(maxsize=4096)
def _topic_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _decode_at(view: memoryview, pos: int, decompress: bool) -> MessageExt:
    # The hot path of every pull: one unpack for the fixed part, checks inlined, no intermediate tuple.
    end = len(view)
    if pos < 0 or pos + HEADER_SIZE_V4 > end:
        raise RemoteProtocolError(f"truncated message record at {pos}: {end - pos} bytes left")
    fixed = _FIXED_BY_V6_BITS[(view[pos + SYSFLAG_POS + 3] >> 4) & 0x3]
    body_pos = pos + fixed.size
    if body_pos > end:
        raise RemoteProtocolError(f"truncated message record at {pos}: {end - pos} bytes left")
    # Only what is computed with is declared int (unpack_from's values are untyped: compiled, untyped
    # arithmetic is generic); the fields only handed on stay objects, boxed once.
    total_size: int
    magic: int
    body_len: int
    (
        total_size,
        magic,
        body_crc,
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
    ) = fixed.unpack_from(view, pos)
    record_end = pos + total_size
    topic_len_pos = body_pos + body_len
    if magic != MESSAGE_MAGIC or body_len < 0 or record_end > end or topic_len_pos + 3 > record_end:
        # Let the careful reader name what is wrong.
        unpack_record_header(view, pos)
        raise RemoteProtocolError(f"malformed message record at {pos}")
    topic_pos = topic_len_pos + 1
    topic_len = view[topic_len_pos]
    properties_pos = topic_pos + topic_len + 2
    if (
        topic_len > MAX_TOPIC_LENGTH
        or properties_pos > record_end
        or view[properties_pos - 2] & 0x80  # a negative PROPERTIESLENGTH
        or properties_pos + ((view[properties_pos - 2] << 8) | view[properties_pos - 1]) != record_end
    ):
        unpack_record_header(view, pos)
        raise RemoteProtocolError(f"malformed message record at {pos}")
    body: bytes = view[body_pos:topic_len_pos].tobytes()
    if decompress and sys_flag & COMPRESSED_FLAG:
        try:
            body = decompress_body(body, sys_flag)
        except ClientError as exc:
            raise RemoteProtocolError(f"message record at {pos}: {exc}") from exc
    topic = _topic_text(view[topic_pos : properties_pos - 2].tobytes())
    properties = (
        decode_properties(str(view[properties_pos:record_end], "utf-8", "replace"))
        if properties_pos < record_end
        else {}
    )
    # (ids.offset_msg_id: the host part cached, the offset packed as a signed long and hex-formatted;
    # compiled, a format spec in an f-string is slower)
    offset_msg_id = make_offset_msg_id(store_host, physical_offset)
    return MessageExt(
        topic,
        body,
        flag,
        properties,
        queue_id,
        total_size,
        queue_offset,
        sys_flag,
        born_timestamp,
        host_string_of(born_host),
        store_timestamp,
        host_string_of(store_host),
        offset_msg_id,
        physical_offset,
        body_crc,
        reconsume_times,
        prepared_transaction_offset,
    )


def decode_record(buf: Buffer, pos: int = 0, *, decompress: bool = True) -> MessageExt:
    """The message of the record at `buf[pos:]` (raises RemoteProtocolError when malformed)."""
    with memoryview(buf) as view:  # released on return: an exported view pins an mmap
        return _decode_at(view, pos, decompress)


def decode_records(buf: Buffer, *, decompress: bool = True) -> list[MessageExt]:
    """Every message of concatenated records, in order (a pull, query or view body).

    Raises RemoteProtocolError when any record is malformed or the bytes end inside a record.
    """
    messages: list[MessageExt] = []
    append = messages.append
    with memoryview(buf) as view:
        end = len(view)
        pos = 0
        while pos < end:
            msg = _decode_at(view, pos, decompress)
            append(msg)
            pos += msg.store_size
    return messages
