"""The batch write path (SEND_BATCH_MESSAGE, the Spark sink) described by offsets, not by objects.

A batch body is checked once (message.batch_scan.scan_batch) and kept as the request bytes plus five
ints per message. `append_scanned` packs every record in one pass straight into the mapped segment (the
same bytes as CommitLog.put_batch), builds the consume-queue entries as one packed buffer and the index
keys as two flat lists; `dispatch_run` writes them with one copy per CQ file and one
`KeyIndex.put_run`. CommitLog.put_batch (entries as objects) stays the path for the transient store pool.
"""

from __future__ import annotations

import struct
from typing import Final

from orbitmq.message import properties as P
from orbitmq.message.batch_scan import FIELDS as _FIELDS
from orbitmq.message.batch_scan import ScannedBatch, scan_batch
from orbitmq.message.hashing import ZLIB_CRC32
from orbitmq.message.hashing import tags_code as compute_tags_code
from orbitmq.message.property_string import decode_properties, find_property, find_property_key
from orbitmq.message.record_layout import (
    BLANK_RECORD_SIZE,
    MAX_PROPERTIES_LENGTH,
    MAX_TOPIC_LENGTH,
    MESSAGE_MAGIC,
    fixed_struct,
    host_sys_flag,
)
from orbitmq.store.commit import BufferedSegment
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import CQ_ENTRY, CQ_ENTRY_SIZE
from orbitmq.store.dispatch import Dispatcher
from orbitmq.store.key_index import key_hash_with_prefix
from orbitmq.store.mapped_file import MappedFile, pwrite_pieces
from orbitmq.store.results import PutMessageResult, PutMessageStatus
from orbitmq.store.store_message import StoreBatch

_SHORT: Final = struct.Struct(">h")
# TOTALSIZE .. PHYSICALOFFSET: the fields of a record's fixed part that differ between a batch's messages.
_HEAD: Final = struct.Struct(">iIiiiqq")
_MAX_RECORD_SLACK: Final = 64 * 1024  # as CommitLog: a record may exceed maxMessageSize by its header


class AppendedRun:
    """What a scanned batch appended: one run of records of one queue, for `dispatch_run`."""

    __slots__ = (
        "count",
        "cq_entries",
        "end_offset",
        "first_offset",
        "first_queue_offset",
        "index_keys",
        "index_offsets",
        "queue_id",
        "store_timestamp",
        "tags_codes",
        "topic",
    )

    def __init__(  # noqa: PLR0917 -- built in one place
        self,
        topic: str,
        queue_id: int,
        first_offset: int,
        end_offset: int,
        first_queue_offset: int,
        count: int,
        store_timestamp: int,
        cq_entries: bytearray,
        tags_codes: set[int],
        index_keys: list[str],
        index_offsets: list[int],
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.first_offset = first_offset
        self.end_offset = end_offset
        self.first_queue_offset = first_queue_offset
        self.count = count
        self.store_timestamp = store_timestamp
        self.cq_entries = cq_entries  # packed (offset, size, tags code) entries, CQ_ENTRY_SIZE each
        self.tags_codes = tags_codes
        self.index_keys = index_keys  # flat: every key of every message, in log order
        self.index_offsets = index_offsets  # parallel: the commit-log offset of each key's message


def _illegal(status: PutMessageStatus, remark: str) -> tuple[PutMessageResult, AppendedRun | None]:
    return PutMessageResult(status, remark=remark), None


def _check_each(
    scanned: ScannedBatch,
    *,
    header_size: int,
    topic_len: int,
    extra_len: int,
    max_message_size: int,
    file_size: int,
) -> tuple[PutMessageResult, AppendedRun | None] | None:
    """The per-message refusals in CommitLog.put_batch's order (run only when the batch's summaries say
    one may apply); None when every message passes."""
    layout = scanned.layout
    view = scanned.view
    texts = scanned.properties
    for i in range(scanned.count):
        j = i * _FIELDS
        body_len = layout[j + 2]
        own_len = layout[j + 4]
        if topic_len > MAX_TOPIC_LENGTH:
            return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, "topic length too long")
        if body_len > max_message_size:
            return _illegal(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"message body size {body_len} exceeds maxMessageSize {max_message_size}",
            )
        # join_properties: a separator only between a non-empty own text not ending in one and extras.
        sep = extra_len > 0 and own_len > 0 and view[layout[j + 3] + own_len - 1] != 2
        properties_len = own_len + extra_len + (1 if sep else 0)
        if properties_len > MAX_PROPERTIES_LENGTH:
            return _illegal(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, "properties size > 32767")
        text = texts[i]
        if P.DELAY in text and decode_properties(text).get(P.DELAY, "0") != "0":
            return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, "batch messages cannot be delayed")
        size = header_size + body_len + 3 + topic_len + properties_len
        if size > max_message_size + _MAX_RECORD_SLACK or size + BLANK_RECORD_SIZE > file_size:
            return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"message record too large: {size}")
    return None


_UNIQ_KEY: Final = "\x02" + P.UNIQ_KEY + "\x01"
_TAGS: Final = "\x02" + P.TAGS + "\x01"


def append_scanned(
    log: CommitLog, batch: StoreBatch, scanned: ScannedBatch
) -> tuple[PutMessageResult, AppendedRun | None]:
    """CommitLog.put_batch for a scanned batch (no transient store pool): the same checks in the same
    order, the same record bytes. The caller holds the log's put lock.

    The per-message checks run only when the scan's summaries (longest body and properties, a DELAY
    mentioned) say one could refuse; the batch's size is known from the request's length. The records
    are then written with one pwritev per 1024 pieces (fixed part, body, topic and properties length,
    own properties, batch properties per message): the kernel copies them into the segment's pages,
    which the mapping shares, and no page is faulted in through the mapping."""
    if batch.sys_flag & 0xC:
        return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, "batch messages cannot be transactional")
    config = log.config
    max_message_size = config.max_message_size
    file_size = log.file_size
    topic = batch.topic
    topic_bytes = topic.encode()
    topic_len = len(topic_bytes)
    born_host = batch.born_host
    store_host = log.store_host
    # pack_record_into's host checks (sizes decide the IPv6 bits of the stored SYSFLAG).
    sys_flag = host_sys_flag(batch.sys_flag, born_host, store_host)
    fixed = fixed_struct(sys_flag)
    header_size = fixed.size
    extra_text = batch.properties
    extra = extra_text.encode()
    extra_len = len(extra)
    layout = scanned.layout
    texts = scanned.properties
    view = scanned.view
    count = scanned.count
    max_body = scanned.max_body
    max_own = scanned.max_properties
    bound = header_size + max_body + 3 + topic_len + max_own + extra_len + 1
    if (
        scanned.delayed
        or max_body < 0
        or scanned.open_ended < 0
        or topic_len > MAX_TOPIC_LENGTH
        or max_body > max_message_size
        or max_own + extra_len + 1 > MAX_PROPERTIES_LENGTH
        or bound > max_message_size + _MAX_RECORD_SLACK
        or bound + BLANK_RECORD_SIZE > file_size
    ):
        refused = _check_each(
            scanned,
            header_size=header_size,
            topic_len=topic_len,
            extra_len=extra_len,
            max_message_size=max_message_size,
            file_size=file_size,
        )
        if refused is not None:
            return refused
    fixed_part = header_size + 3 + topic_len  # a record's bytes besides its body and properties
    if scanned.open_ended >= 0:
        # The request's entries tile its body: 20 + body + 2 + own properties bytes each.
        total = len(view) + count * (fixed_part + extra_len - 22)
        if extra_len:
            total += scanned.open_ended
    else:
        total = 0
        for i in range(count):
            j = i * _FIELDS
            own_len = layout[j + 4]
            sep = extra_len > 0 and own_len > 0 and view[layout[j + 3] + own_len - 1] != 2
            total += fixed_part + layout[j + 2] + own_len + extra_len + (1 if sep else 0)
    if total + BLANK_RECORD_SIZE > file_size:
        return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"batch of {total} bytes exceeds a segment")
    # A batch-level TAGS/KEYS/UNIQ_KEY would win over a message's own (it comes later in the joined text).
    extra_tags = find_property(extra_text, P.TAGS) if extra_text else None
    extra_keys = find_property(extra_text, P.KEYS) if extra_text else None
    extra_uniq = find_property(extra_text, P.UNIQ_KEY) if extra_text else None
    topic_head = bytes((topic_len,)) + topic_bytes
    tail_separated = b"\x02" + extra
    queue_id = batch.queue_id
    born_timestamp = batch.born_timestamp
    reconsume_times = batch.reconsume_times
    key = (topic, queue_id)
    now = log.clock.now_ms()
    first_queue_offset = log.topic_queue_table.get(key, 0)
    f = log._segment_for(total, now)
    start = f.wrote_position
    pos = start
    base = f.file_from_offset
    first_offset = base + pos
    cq_entries = bytearray(count * CQ_ENTRY_SIZE)
    cq_pack = CQ_ENTRY.pack_into
    head_pack = _HEAD.pack
    middle = b""
    middle_for = -1
    crc32 = ZLIB_CRC32
    pieces: list[bytes | memoryview] = []
    offsets: list[int] = []
    index_keys: list[str] = []
    index_offsets: list[int] = []
    tags_codes: set[int] = set()
    last_code = -1
    last_tags = ""  # the last tag hashed, and its code
    last_tags_code = 0
    mid = b""  # topic length, topic and properties length (rebuilt when the properties length changes)
    mid_for = -1
    for i in range(count):
        j = i * _FIELDS
        body_pos = layout[j + 1]
        body_len = layout[j + 2]
        own_pos = layout[j + 3]
        own_len = layout[j + 4]
        physical_offset = base + pos
        body = view[body_pos : body_pos + body_len]
        tail = extra
        if extra_len and own_len and view[own_pos + own_len - 1] != 2:
            tail = tail_separated
        properties_len = own_len + len(tail)
        size = fixed_part + body_len + properties_len
        pieces.append(
            head_pack(
                size,
                MESSAGE_MAGIC,
                crc32(body) & 0x7FFFFFFF,
                queue_id,
                layout[j],
                first_queue_offset + i,
                physical_offset,
            )
        )
        if body_len != middle_for:
            # SYSFLAG .. BODYLENGTH: the batch's fields and the body length (bodies often share one).
            middle = fixed.pack(
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                sys_flag,
                born_timestamp,
                born_host,
                now,
                store_host,
                reconsume_times,
                0,
                body_len,
            )[_HEAD.size :]
            middle_for = body_len
        pieces.append(middle)
        pieces.append(body)
        if properties_len != mid_for:
            mid = topic_head + _SHORT.pack(properties_len)
            mid_for = properties_len
        pieces.append(mid)
        text = texts[i]
        if own_len:
            pieces.append(view[own_pos : own_pos + own_len])
        if extra_len:
            pieces.append(tail)
        # `in` first: a name that is not there costs no call (TAGS and KEYS are often absent).
        tags = extra_tags
        if tags is None and "TAGS\x01" in text:
            tags = find_property_key(text, _TAGS)
        if tags is None:
            code = 0
        elif tags == last_tags:  # rows of a batch often share their tag: hash it once
            code = last_tags_code
        else:
            code = last_tags_code = compute_tags_code(tags)
            last_tags = tags
        if code != last_code:
            tags_codes.add(code)
            last_code = code
        cq_pack(cq_entries, i * CQ_ENTRY_SIZE, physical_offset, size, code)
        uniq = extra_uniq if extra_uniq is not None else find_property_key(text, _UNIQ_KEY)
        if uniq:
            index_keys.append(uniq)
            index_offsets.append(physical_offset)
        keys = extra_keys
        if keys is None and "KEYS\x01" in text:
            keys = find_property(text, P.KEYS)
        if keys:
            for k in keys.split(" "):
                if k:
                    index_keys.append(k)
                    index_offsets.append(physical_offset)
        offsets.append(physical_offset)
        pos += size
    _write_pieces(f, start, pieces, pos - start)
    result = log.batch_appended(f, pos, now, key, first_queue_offset, offsets)
    run = AppendedRun(
        topic,
        queue_id,
        first_offset,
        base + pos,
        first_queue_offset,
        count,
        now,
        cq_entries,
        tags_codes,
        index_keys,
        index_offsets,
    )
    return result, run


def _write_pieces(
    f: MappedFile | BufferedSegment, start: int, pieces: list[bytes | memoryview], total: int
) -> None:
    """Write `pieces` back to back at `start` in the segment: pwritev on the segment file (the mapping
    sees the same pages), or one copy into a buffered segment."""
    if isinstance(f, MappedFile):
        wrote = pwrite_pieces(f.fd, pieces, start)
        if wrote != total:
            raise OSError(f"short write to {f.path}: {wrote} of {total} bytes at {start}")
        return
    f.mm[start : start + total] = b"".join(pieces)


def dispatch_run(dispatcher: Dispatcher, run: AppendedRun) -> None:
    """Dispatcher.dispatch for an appended run: the CQ entries in one packed write, the keys with one
    put_hashes, the arrival listeners once per distinct tags code. Call with the store's write lock."""
    if dispatcher.index_pending:
        dispatcher.flush_index()  # index entries stay in log order
    topic = run.topic
    queue_id = run.queue_id
    cq = dispatcher.queues.find_or_create(topic, queue_id)
    cq.put_packed(run.first_queue_offset, run.cq_entries)
    key_index = dispatcher.key_index
    keys = run.index_keys
    if key_index is not None and keys:
        indexed_until = key_index.end_phy_offset if key_index.files else -1
        prefix = key_index.prefix_for(topic)
        offsets = run.index_offsets
        hashes: list[int] = []
        if offsets[0] < indexed_until:
            # Strictly below is indexed already (see Dispatcher.dispatch): keep only the rest.
            kept: list[int] = []
            for i in range(len(keys)):
                offset = offsets[i]
                if offset >= indexed_until:
                    hashes.append(key_hash_with_prefix(prefix, keys[i]))
                    kept.append(offset)
            offsets = kept
        else:
            for k in keys:
                hashes.append(key_hash_with_prefix(prefix, k))
        if hashes:
            key_index.put_run(hashes, offsets, run.store_timestamp)
    dispatcher.reput_offset = max(dispatcher.reput_offset, run.end_offset)
    dispatcher.last_dispatched_timestamp = run.store_timestamp
    if dispatcher.listeners:
        max_offset = cq.max_offset
        for listener in dispatcher.listeners:
            for tag in run.tags_codes:
                Dispatcher.notify(listener, topic, queue_id, max_offset, tag)


__all__ = [
    "AppendedRun",
    "ScannedBatch",
    "append_scanned",
    "dispatch_run",
    "scan_batch",
]
