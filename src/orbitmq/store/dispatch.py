"""The dispatcher (RocketMQ's ReputMessageService + CommitLogDispatchers): the log is the truth.

One code path derives consume-queue entries and index keys from commit-log records:

- after each append, the write path hands over requests it built while writing (nothing re-parsed);
- on a slave after each replicated chunk, and at start-up after recovery, `dispatch_from_log` tails the
  commit log from `reput_offset`, scanning records with message.record.scan_record and stopping before
  an incomplete record (a replicated chunk may end mid-record).

Both end in `dispatch`, which writes CQ entries per queue in one pack, indexes keys, moves
`reput_offset` and calls the arrival listeners (the broker wakes long-polling pulls with them).
PREPARED/ROLLBACK transaction types get no CQ entry; ROLLBACK is not indexed (fact sheet 5.2, 6.5).
"""

from __future__ import annotations

import logging
import mmap
import struct
from collections.abc import Callable, Sequence
from typing import Final

from orbitmq.message.hashing import tags_code as _tags_code
from orbitmq.message.properties import DELAY, KEYS, TAGS, UNIQ_KEY
from orbitmq.message.property_string import decode_properties
from orbitmq.message.record import SCHEDULE_TOPIC, scan_record
from orbitmq.message.record_layout import (
    BLANK_MAGIC,
    HEADER_SIZE_V4,
    MAX_TOPIC_LENGTH,
    MESSAGE_MAGIC,
    SYSFLAG_POS,
    fixed_struct,
)
from orbitmq.message.sysflag import TRANSACTION_ROLLBACK_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.segment_queue import MappedFileQueue

log: Final = logging.getLogger(__name__)
ArrivalListener = Callable[[str, int, int, int], None]
_HEAD: Final = struct.Struct(">iI")
_INT: Final = struct.Struct(">i")
_SHORT: Final = struct.Struct(">h")
Buffer = bytes | bytearray | memoryview | mmap.mmap
_SCAN_CHUNK: Final = 512
# Deferred index entries written at once when this many are pending (bounds the memory and the loss
# window of a crash; recovery re-indexes from the log anyway).
_INDEX_PENDING_MAX: Final = 256
IndexItem = tuple[str, list[str], int, int]  # (topic, keys, commit log offset, store timestamp)


class DispatchRequest:
    """One stored record for the consume queue and the key index. A plain class with an explicit
    `__init__` (not a NamedTuple, whose constructor stays an interpreted lambda when compiled): one is
    built per put."""

    __slots__ = (
        "keys",
        "physical_offset",
        "queue_id",
        "queue_offset",
        "size",
        "store_timestamp",
        "sys_flag",
        "tags_code",
        "topic",
        "uniq_key",
    )

    def __init__(  # noqa: PLR0917 -- positional, as the NamedTuple was
        self,
        topic: str,
        queue_id: int,
        physical_offset: int,
        size: int,
        tags_code: int,
        store_timestamp: int,
        queue_offset: int,
        sys_flag: int,
        keys: str | None,
        uniq_key: str | None,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.physical_offset = physical_offset
        self.size = size
        self.tags_code = tags_code
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.sys_flag = sys_flag
        self.keys = keys
        self.uniq_key = uniq_key

    def _fields(self) -> tuple[object, ...]:
        return (
            self.topic,
            self.queue_id,
            self.physical_offset,
            self.size,
            self.tags_code,
            self.store_timestamp,
            self.queue_offset,
            self.sys_flag,
            self.keys,
            self.uniq_key,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DispatchRequest):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # compared by value

    def __repr__(self) -> str:
        return "DispatchRequest" + repr(self._fields())


def dispatch_request_at(
    mm: Buffer, pos: int, physical_offset: int, delay_levels_ms: Sequence[int]
) -> DispatchRequest | None:
    """The DispatchRequest of the message record at `pos` (None if it is not a complete, consistent one).

    Exactly what `scan_record(..., check_crc=False)` derives for a "message" (the same layout checks,
    tags code, SCHEDULE_TOPIC_XXXX delivery time, KEYS, UNIQ_KEY), without the intermediate record
    object: recovery and slaves dispatch every record through here.
    """
    end = len(mm)
    # (declared ints: unpack_from's values are untyped, and compiled, untyped arithmetic is a generic
    # Python operation)
    size: int
    magic: int
    size, magic = _HEAD.unpack_from(mm, pos)
    if magic != MESSAGE_MAGIC or pos + HEADER_SIZE_V4 > end:
        return None
    fixed = fixed_struct(_INT.unpack_from(mm, pos + SYSFLAG_POS)[0])
    body_pos = pos + fixed.size
    record_end = pos + size
    if record_end > end or body_pos + 3 > record_end:
        return None
    fields = fixed.unpack_from(mm, pos)
    body_len: int = fields[14]
    topic_len_pos = body_pos + body_len
    if body_len < 0 or topic_len_pos + 3 > record_end:
        return None
    topic_len = mm[topic_len_pos]
    properties_len_pos = topic_len_pos + 1 + topic_len
    if topic_len > MAX_TOPIC_LENGTH or properties_len_pos + 2 > record_end:
        return None
    properties_len: int = _SHORT.unpack_from(mm, properties_len_pos)[0]
    if properties_len < 0 or properties_len_pos + 2 + properties_len != record_end:
        return None
    topic = str(mm[topic_len_pos + 1 : properties_len_pos], "utf-8", "replace")
    properties = (
        decode_properties(str(mm[properties_len_pos + 2 : record_end], "utf-8", "replace"))
        if properties_len
        else {}
    )
    store_timestamp = fields[10]
    tags_code = _tags_code(properties.get(TAGS))
    delay_text = properties.get(DELAY)
    if delay_text is not None and delay_levels_ms and topic == SCHEDULE_TOPIC:
        try:
            delay_level = int(delay_text)
        except ValueError:
            delay_level = 0
        if delay_level > 0:
            tags_code = store_timestamp + delay_levels_ms[min(delay_level, len(delay_levels_ms)) - 1]
    return DispatchRequest(
        topic,
        fields[3],
        physical_offset,
        size,
        tags_code,
        store_timestamp,
        fields[5],
        fields[7],
        properties.get(KEYS),
        properties.get(UNIQ_KEY),
    )


class Dispatcher:
    def __init__(
        self,
        commit_log_files: MappedFileQueue,
        queues: ConsumeQueueTable,
        key_index: KeyIndex | None,
        delay_levels_ms: list[int],
        topic_queue_table: dict[tuple[str, int], int],
    ) -> None:
        self.commit_log_files = commit_log_files
        self.queues = queues
        self.key_index = key_index
        self.delay_levels_ms = delay_levels_ms
        self.topic_queue_table = topic_queue_table
        self.reput_offset = 0
        self.last_dispatched_timestamp = 0
        self.listeners: list[ArrivalListener] = []
        self._warned_at = -1
        # Deferred key index (off the ack path): with `defer_index` set, single puts queue their keys here
        # and `defer_index()` is called when the queue becomes non-empty; its owner (the broker, with a
        # 10 ms loop timer) then calls `flush_index()`, so the index is written in batches after the
        # responses left. Anything that reads or reorders the index flushes first.
        self.index_pending: list[IndexItem] = []
        self.index_pending_max = _INDEX_PENDING_MAX  # broker.conf `indexDeferMaxEntries`
        self.defer_index: Callable[[], object] | None = None

    def flush_index(self) -> None:
        """Write the deferred index entries (call with the store's write lock held)."""
        pending = self.index_pending
        if pending and self.key_index is not None:
            self.index_pending = []
            self.key_index.put_batch(pending)

    def dispatch(self, requests: list[DispatchRequest]) -> None:
        if not requests:
            return
        if len(requests) == 1:
            self._dispatch_one(requests[0])
            return
        if self.index_pending:
            self.flush_index()  # index entries stay in log order
        groups: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
        for r in requests:
            if not r.sys_flag & 0x4:
                key = (r.topic, r.queue_id)
                entry = (r.physical_offset, r.size, r.tags_code, r.queue_offset)
                group = groups.get(key)
                if group is None:
                    groups[key] = [entry]
                else:
                    group.append(entry)
        queues = self.queues
        for (topic, queue_id), entries in groups.items():
            queues.find_or_create(topic, queue_id).put_entries(entries)
        key_index = self.key_index
        if key_index is not None:
            indexed_until = key_index.end_phy_offset if key_index.files else -1
            items: list[tuple[str, list[str], int, int]] = []
            for r in requests:
                # Strictly below, as RocketMQ's IndexService: the message AT the end offset may have had
                # only some of its keys in the kept file (the rest were in a file dropped by recovery).
                if r.physical_offset < indexed_until:
                    continue
                if (r.sys_flag & TRANSACTION_TYPE_MASK) == TRANSACTION_ROLLBACK_TYPE:
                    continue
                keys: list[str] = []
                if r.uniq_key:
                    keys.append(r.uniq_key)
                if r.keys:
                    keys += [k for k in r.keys.split(" ") if k]
                if keys:
                    items.append((r.topic, keys, r.physical_offset, r.store_timestamp))
            if items:
                key_index.put_batch(items)
        last = requests[-1]
        end = last.physical_offset + last.size
        self.reput_offset = max(self.reput_offset, end)
        self.last_dispatched_timestamp = last.store_timestamp
        if self.listeners:
            for (topic, queue_id), entries in groups.items():
                cq = queues.find(topic, queue_id)
                max_offset = cq.max_offset if cq is not None else 0
                tags = {e[2] for e in entries} if len(entries) > 1 else (entries[0][2],)
                for listener in self.listeners:
                    for tag in tags:
                        self.notify(listener, topic, queue_id, max_offset, tag)

    @staticmethod
    def notify(listener: ArrivalListener, topic: str, queue_id: int, max_offset: int, tags_code: int) -> None:
        # The append already happened: a failing listener must not turn it into a failed put.
        try:
            listener(topic, queue_id, max_offset, tags_code)
        except Exception:
            log.exception("arrival listener failed")

    def _dispatch_one(self, r: DispatchRequest) -> None:
        """`dispatch` of a single request (the common single-message put), without grouping."""
        cq = None
        if not r.sys_flag & 0x4:
            cq = self.queues.find_or_create(r.topic, r.queue_id)
            cq.put_entry(r.physical_offset, r.size, r.tags_code, r.queue_offset)
        key_index = self.key_index
        if (
            key_index is not None
            and (r.sys_flag & TRANSACTION_TYPE_MASK) != TRANSACTION_ROLLBACK_TYPE
            and (not key_index.files or r.physical_offset >= key_index.end_phy_offset)
        ):
            keys = [r.uniq_key] if r.uniq_key else []
            if r.keys:
                keys += [k for k in r.keys.split(" ") if k]
            if keys:
                defer = self.defer_index
                if defer is None:
                    key_index.put(r.topic, keys, r.physical_offset, r.store_timestamp)
                else:
                    pending = self.index_pending
                    pending.append((r.topic, keys, r.physical_offset, r.store_timestamp))
                    if len(pending) == 1:
                        defer()
                    elif len(pending) >= self.index_pending_max:
                        self.flush_index()
        end = r.physical_offset + r.size
        self.reput_offset = max(self.reput_offset, end)
        self.last_dispatched_timestamp = r.store_timestamp
        if cq is not None:
            max_offset = cq.max_offset
            for listener in self.listeners:
                self.notify(listener, r.topic, r.queue_id, max_offset, r.tags_code)

    def _warn_invalid(self, offset: int) -> None:
        if offset != self._warned_at:
            self._warned_at = offset
            log.warning("dispatch stopped at an invalid record at commit log offset %d", offset)

    def dispatch_from_log(self, end_offset: int | None = None, *, check_crc: bool = False) -> int:
        """Dispatch the complete records from `reput_offset` up to `end_offset` (default: the log's end).

        Returns the new `reput_offset`. Stops before an incomplete record and at an invalid one (the
        caller decides whether that is an error: recovery has already truncated the log there).
        """
        files = self.commit_log_files
        limit = files.max_offset if end_offset is None else min(end_offset, files.max_offset)
        batch: list[DispatchRequest] = []
        delays = self.delay_levels_ms
        table = self.topic_queue_table
        while self.reput_offset < limit:
            offset = self.reput_offset
            f = files.find(offset)
            if f is None:
                if offset < files.min_offset:
                    self.reput_offset = files.min_offset
                    continue
                break
            pos = offset - f.file_from_offset
            readable = min(f.wrote_position, limit - f.file_from_offset)
            mm = f.mm
            stop = False
            while pos < readable:
                if readable - pos < 8:
                    stop = True
                    break
                size, magic = _HEAD.unpack_from(mm, pos)
                if magic == BLANK_MAGIC:
                    # End of this file: dispatch what we have, continue in the next file.
                    self.dispatch(batch)
                    batch = []
                    self.reput_offset = f.file_tail_offset
                    break
                if magic == MESSAGE_MAGIC and size > 0 and pos + size > readable:
                    stop = True  # incomplete: the rest of the record has not arrived yet
                    break
                if check_crc:
                    r = scan_record(mm, pos, check_crc=True, delay_levels_ms=delays)
                    request = (
                        DispatchRequest(
                            r.topic,
                            r.queue_id,
                            f.file_from_offset + pos,
                            r.size,
                            r.tags_code,
                            r.store_timestamp,
                            r.queue_offset,
                            r.sys_flag,
                            r.keys,
                            r.uniq_key,
                        )
                        if r.kind == "message"
                        else None
                    )
                else:
                    request = dispatch_request_at(mm, pos, f.file_from_offset + pos, delays)
                if request is None:
                    self._warn_invalid(f.file_from_offset + pos)
                    stop = True
                    break
                batch.append(request)
                # NOT (0x0) and COMMIT (0x8) get a CQ entry; bit 2 means PREPARED (0x4) or ROLLBACK (0xC).
                if not request.sys_flag & 0x4:
                    key = (request.topic, request.queue_id)
                    if table.get(key, 0) <= request.queue_offset:
                        table[key] = request.queue_offset + 1
                pos += size
                if len(batch) >= _SCAN_CHUNK:
                    self.dispatch(batch)
                    batch = []
            else:
                stop = True
            if batch:
                self.dispatch(batch)
                batch = []
            if stop:
                break
        return self.reput_offset
