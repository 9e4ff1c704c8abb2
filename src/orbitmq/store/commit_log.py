"""CommitLog: the append-only record log (fact sheet 6.3) -- write path, raw reads and replicated appends.

Write path per message: validate, take the put lock, stamp the store time, assign the queue offset from
`topic_queue_table`, close the segment with an 8-byte blank record if the record plus 8 bytes does not
fit, then one `pack_record_into` straight into the mapped segment (the body is copied once, from the
request bytes into the page cache). A batch is placed whole in one segment.

The caller (MessageStore) dispatches the returned DispatchRequests right after the append.
With the transient store pool active (`committer` set, see commit.py) records are packed into a pool
buffer instead of the mapped segment, and the caller dispatches them only once committed.
Reads return zero-copy memoryviews of the mapped segments. This module knows nothing of consume queues.
"""

from __future__ import annotations

import logging
import threading
from typing import Final

from orbitmq.common.clock import Clock
from orbitmq.common.errors import StoreError
from orbitmq.message import properties as P
from orbitmq.message.hashing import tags_code as compute_tags_code
from orbitmq.message.property_string import decode_properties, join_properties
from orbitmq.message.record import SCHEDULE_TOPIC
from orbitmq.message.record_layout import (
    BLANK_RECORD_SIZE,
    MAX_PROPERTIES_LENGTH,
    MAX_TOPIC_LENGTH,
    MIN_RECORD_SIZE,
    V6_EXTRA,
    Buffer,
    pack_blank_into,
    pack_record_into,
    record_size,
)
from orbitmq.store.commit import BufferedSegment, CommitService
from orbitmq.store.config import StoreConfig
from orbitmq.store.dispatch import DispatchRequest
from orbitmq.store.mapped_file import MappedFile, pwrite_pieces
from orbitmq.store.results import PutMessageResult, PutMessageStatus
from orbitmq.store.segment_queue import MappedFileQueue
from orbitmq.store.store_message import StoreBatch, StoreMessage

_HOST_V6: Final = 20
_MAX_RECORD_SLACK: Final = 64 * 1024  # a record may exceed maxMessageSize by its header and properties


class SegmentCreateError(StoreError):
    """A new commit-log segment could not be created (disk full, permissions)."""


log: Final = logging.getLogger(__name__)


def _illegal(status: PutMessageStatus, remark: str) -> tuple[PutMessageResult, list[DispatchRequest]]:
    return PutMessageResult(status, remark=remark), []


class CommitLog:
    def __init__(self, config: StoreConfig, clock: Clock, store_host: bytes) -> None:
        self.config = config
        self.clock = clock
        self.store_host = store_host
        self.file_size = config.mapped_file_size_commit_log
        self.files = MappedFileQueue(
            config.commit_log_dir,
            self.file_size,
            preallocate=True,
            defer_dir_sync=True,  # a roll happens on the broker's loop: its directory sync is the flusher's
        )
        self.files.zero_run_limit = max(8 << 20, 2 * config.max_message_size + (1 << 20))
        # (topic, queue id) -> next queue offset; rebuilt from the consume queues on start.
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        # Held by the caller around `put`/`put_batch` (MessageStore shares its write lock here, so one
        # put takes one lock); `append_data` and retention take it themselves.
        self.put_lock: threading.RLock | threading.Lock = threading.RLock()
        self.last_store_timestamp = 0
        self.confirm_offset = -1
        # Set by MessageStore when the transient store pool is active: appends go to its buffers.
        self.committer: CommitService | None = None
        # Gathered puts (`put(..., gather=True)`): records placed after the segment's written end but not
        # written yet, in log order, for one vectored write (`write_pending`). `wrote_position` moves only
        # when they are written, so nothing that reads it (flusher, replication, readers) sees them before.
        self._pending: list[Buffer] = []
        self._pending_file: MappedFile | None = None
        self._pending_start = 0
        self.pending_bytes = 0
        self._pending_timestamp = 0
        levels = config.delay_levels_ms()
        self.delay_levels_ms = [levels[i] for i in sorted(levels)]

    # ---- offsets --------------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        first = self.files.first_file()
        return first.file_from_offset if first is not None else 0

    @property
    def max_offset(self) -> int:
        return self.files.max_offset

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    # ---- tags, keys -----------------------------------------------------------------------------
    def _tags_code(self, topic: str, props: dict[str, str], store_timestamp: int) -> int:
        if topic == SCHEDULE_TOPIC:
            delay = props.get(P.DELAY)
            if delay and delay.isdigit() and int(delay) > 0 and self.delay_levels_ms:
                level = min(int(delay), len(self.delay_levels_ms))
                return store_timestamp + self.delay_levels_ms[level - 1]
        return compute_tags_code(props.get(P.TAGS))

    def _validate(self, topic_bytes: bytes, body_len: int) -> PutMessageResult | None:
        if len(topic_bytes) > MAX_TOPIC_LENGTH:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="topic length too long")
        if body_len > self.config.max_message_size:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL,
                remark=f"message body size {body_len} exceeds maxMessageSize {self.config.max_message_size}",
            )
        return None

    def _room_check(self, size: int) -> PutMessageResult | None:
        if (
            size > self.config.max_message_size + _MAX_RECORD_SLACK
            or size + BLANK_RECORD_SIZE > self.file_size
        ):
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL, remark=f"message record too large: {size}"
            )
        return None

    def _segment_for(self, size: int, now: int) -> MappedFile | BufferedSegment:
        """The segment with room for `size` bytes plus the 8-byte minimum blank (rolling if needed)."""
        try:
            return self._roll_if_needed(size, now)
        except (OSError, StoreError) as exc:
            raise SegmentCreateError(str(exc)) from exc

    def _roll_if_needed(self, size: int, now: int) -> MappedFile | BufferedSegment:
        if self.committer is not None:
            return self.committer.segment_for(size, now)
        return self._mapped_for(size, now)

    def _mapped_for(self, size: int, now: int) -> MappedFile:
        """`_roll_if_needed` without a transient store pool: the last mapped segment, typed as the
        native class (its fields are read and written as struct fields, not attribute lookups)."""
        f = self.files.last_file_for_append(0)
        if f.file_size - f.wrote_position < size + BLANK_RECORD_SIZE:
            remaining = f.file_size - f.wrote_position
            if remaining >= BLANK_RECORD_SIZE:
                pack_blank_into(f.mm, f.wrote_position, remaining)
            f.wrote_position = f.file_size
            f.store_timestamp = now
            f = self.files.create_file(f.file_tail_offset)
        return f

    # ---- write path -----------------------------------------------------------------------------
    def write_pending(self) -> None:
        """Write the gathered records (call with the put lock held). One pwritev for the lot; what the
        kernel does not take is copied through the mapping, as an ungathered put writes, so a disk that
        cannot take it faults there as before instead of a record going missing."""
        size = self.pending_bytes
        f = self._pending_file
        if not size or f is None:
            return
        pieces = self._pending
        start = self._pending_start
        self._pending = []
        self._pending_file = None
        self.pending_bytes = 0
        try:
            wrote = pwrite_pieces(f.fd, pieces, start)
        except OSError as exc:
            log.warning(
                "pwritev of %d bytes at %d in %s failed (%s): written through the mapping",
                size,
                start,
                f.path,
                exc,
            )
            wrote = 0
        if wrote < size:
            f.mm[start + wrote : start + size] = b"".join(pieces)[wrote:]
        f.wrote_position = start + size
        f.store_timestamp = self._pending_timestamp
        self.last_store_timestamp = self._pending_timestamp

    def put(
        self, msg: StoreMessage, *, gather: bool = False
    ) -> tuple[PutMessageResult, list[DispatchRequest]]:
        topic_bytes = msg.topic.encode()
        properties_bytes = msg.properties.encode()
        body_len = len(msg.body)
        max_message_size = self.config.max_message_size  # (read once: the config is interpreted)
        # The checks inline (one message, every time); the helpers build the error results.
        if len(topic_bytes) > MAX_TOPIC_LENGTH or body_len > max_message_size:
            bad = self._validate(topic_bytes, body_len)
            if bad is not None:
                return bad, []
        if len(properties_bytes) > MAX_PROPERTIES_LENGTH:
            return _illegal(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, f"properties size {len(properties_bytes)} > 32767"
            )
        size = (
            MIN_RECORD_SIZE
            + body_len
            + len(topic_bytes)
            + len(properties_bytes)
            + (V6_EXTRA if len(msg.born_host) == _HOST_V6 else 0)
            + (V6_EXTRA if len(self.store_host) == _HOST_V6 else 0)
        )
        if size > max_message_size + _MAX_RECORD_SLACK or size + BLANK_RECORD_SIZE > self.file_size:
            bad = self._room_check(size)
            if bad is not None:
                return bad, []
        sys_flag = msg.sys_flag
        normal = not sys_flag & 0x4
        key = (msg.topic, msg.queue_id)
        # The caller holds put_lock (see __init__).
        now = self.clock.now_ms()
        queue_offset = self.topic_queue_table.get(key, 0) if normal else 0
        mapped: MappedFile | None = None
        segment: MappedFile | BufferedSegment | None = None
        if self.committer is None:
            pending = self.pending_bytes
            if pending:
                pending_file = self._pending_file
                if (
                    not gather
                    or pending_file is None
                    or pending_file is not self.files.tail
                    or pending_file.file_size - self._pending_start - pending < size + BLANK_RECORD_SIZE
                ):
                    self.write_pending()  # (log order; and a segment rolls from its written end)
                    pending = 0
            try:
                mapped = self._mapped_for(size, now)
            except (OSError, StoreError) as exc:
                raise SegmentCreateError(str(exc)) from exc
            pos = self._pending_start + pending if pending else mapped.wrote_position
            physical_offset = mapped.file_from_offset + pos
            mm = mapped.mm
        else:
            segment = self._segment_for(size, now)
            pos = segment.wrote_position
            physical_offset = segment.file_from_offset + pos
            mm = segment.mm
        # A gathered record is packed into a buffer of its own, the pending write's piece.
        gathered = bytearray(size) if gather and mapped is not None else None
        pack_record_into(
            mm if gathered is None else gathered,
            pos if gathered is None else 0,
            msg.queue_id,
            msg.flag,
            queue_offset,
            physical_offset,
            sys_flag,
            msg.born_timestamp,
            msg.born_host,
            now,
            self.store_host,
            msg.reconsume_times,
            msg.prepared_transaction_offset,
            msg.body,
            topic_bytes,
            properties_bytes,
        )
        if gathered is not None:
            # (its segment's positions and timestamps move when it is written: write_pending)
            if not self.pending_bytes:
                self._pending_file = mapped
                self._pending_start = pos
            self._pending.append(gathered)
            self.pending_bytes += size
            self._pending_timestamp = now
        elif mapped is not None:
            mapped.wrote_position = pos + size
            mapped.store_timestamp = now
            self.last_store_timestamp = now
        elif segment is not None:
            segment.wrote_position = pos + size
            segment.store_timestamp = now
            self.last_store_timestamp = now
        if normal:
            self.topic_queue_table[key] = queue_offset + 1
        if msg.properties_read:
            # The broker already read TAGS/KEYS/UNIQ_KEY from the properties text: no second decode.
            tags = msg.tags_code if msg.tags_code is not None else 0
            keys, uniq_key = msg.keys, msg.uniq_key
        else:
            props = decode_properties(msg.properties) if msg.properties else {}
            tags = msg.tags_code if msg.tags_code is not None else self._tags_code(msg.topic, props, now)
            keys, uniq_key = props.get(P.KEYS), props.get(P.UNIQ_KEY)
        request = DispatchRequest(
            msg.topic,
            msg.queue_id,
            physical_offset,
            size,
            tags,
            now,
            queue_offset,
            sys_flag,
            keys,
            uniq_key,
        )
        result = PutMessageResult(
            PutMessageStatus.PUT_OK,
            wrote_offset=physical_offset,
            wrote_bytes=size,
            store_timestamp=now,
            queue_offset=queue_offset,
            msg_num=1,
            store_host=self.store_host,
        )
        return result, [request]

    def put_batch(self, batch: StoreBatch) -> tuple[PutMessageResult, list[DispatchRequest]]:
        if not batch.entries:
            return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, "empty batch")
        if batch.sys_flag & 0xC:
            return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, "batch messages cannot be transactional")
        topic_bytes = batch.topic.encode()
        born_v6 = len(batch.born_host) == _HOST_V6
        store_v6 = len(self.store_host) == _HOST_V6
        prepared: list[tuple[int, memoryview | bytes | bytearray, bytes, dict[str, str], int]] = []
        total = 0
        for entry in batch.entries:
            bad = self._validate(topic_bytes, len(entry.body))
            if bad is not None:
                return bad, []
            text = join_properties(entry.properties, batch.properties)
            properties_bytes = text.encode()
            if len(properties_bytes) > MAX_PROPERTIES_LENGTH:
                return _illegal(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, "properties size > 32767")
            if P.DELAY in entry.properties and decode_properties(entry.properties).get(P.DELAY, "0") != "0":
                return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, "batch messages cannot be delayed")
            size = record_size(len(entry.body), len(topic_bytes), len(properties_bytes), born_v6, store_v6)
            bad = self._room_check(size)
            if bad is not None:
                return bad, []
            prepared.append((entry.flag, entry.body, properties_bytes, decode_properties(text), size))
            total += size
        if total + BLANK_RECORD_SIZE > self.file_size:
            return _illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"batch of {total} bytes exceeds a segment")
        key = (batch.topic, batch.queue_id)
        requests: list[DispatchRequest] = []
        store_host = self.store_host
        # The caller holds put_lock (see __init__).
        now = self.clock.now_ms()
        first_queue_offset = queue_offset = self.topic_queue_table.get(key, 0)
        f = self._segment_for(total, now)
        mm = f.mm
        pos = f.wrote_position
        for flag, body, properties_bytes, props, size in prepared:
            physical_offset = f.file_from_offset + pos
            pack_record_into(
                mm,
                pos,
                queue_id=batch.queue_id,
                flag=flag,
                queue_offset=queue_offset,
                physical_offset=physical_offset,
                sys_flag=batch.sys_flag,
                born_timestamp=batch.born_timestamp,
                born_host=batch.born_host,
                store_timestamp=now,
                store_host=store_host,
                reconsume_times=batch.reconsume_times,
                prepared_transaction_offset=0,
                body=body,
                topic=topic_bytes,
                properties=properties_bytes,
            )
            requests.append(
                DispatchRequest(
                    batch.topic,
                    batch.queue_id,
                    physical_offset,
                    size,
                    compute_tags_code(props.get(P.TAGS)),
                    now,
                    queue_offset,
                    batch.sys_flag,
                    props.get(P.KEYS),
                    props.get(P.UNIQ_KEY),
                )
            )
            pos += size
            queue_offset += 1
        offsets = [r.physical_offset for r in requests]
        return self.batch_appended(f, pos, now, key, first_queue_offset, offsets), requests

    def batch_appended(  # noqa: PLR0917 -- internal, the batch paths' tail
        self,
        f: MappedFile | BufferedSegment,
        end: int,
        now: int,
        key: tuple[str, int],
        first_queue_offset: int,
        offsets: list[int],
    ) -> PutMessageResult:
        """After a batch's records were written into `f` up to `end` (at `offsets`): move the segment's
        write position and the queue's next offset, and answer for the batch."""
        first_offset = offsets[0]
        f.wrote_position = end
        f.store_timestamp = now
        self.last_store_timestamp = now
        self.topic_queue_table[key] = first_queue_offset + len(offsets)
        wrote = f.file_from_offset + end - first_offset
        count = len(offsets)
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            first_offset,
            wrote,
            now,
            first_queue_offset,
            count,
            "",
            self.store_host,
            offsets,
        )

    # ---- replicated appends (slave) -------------------------------------------------------------
    def append_data(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Append raw log bytes that must continue the log exactly at `start_offset` (HA slave)."""
        view = memoryview(data)
        with self.put_lock:
            if self.files.files:
                if start_offset != self.files.max_offset:
                    return False
            elif start_offset % self.file_size:
                # An empty slave may start at the master's last segment, never mid-segment.
                return False
            pos_offset = start_offset
            while view:
                f = self.files.find(pos_offset)
                if f is None or f.is_full:
                    f = self.files.create_file(pos_offset)
                pos = pos_offset - f.file_from_offset
                n = min(len(view), f.file_size - pos)
                f.mm[pos : pos + n] = view[:n]
                f.wrote_position = pos + n
                view = view[n:]
                pos_offset += n
        return True

    # ---- reads ----------------------------------------------------------------------------------
    def get_data_from(self, offset: int, max_bytes: int) -> memoryview | None:
        """The written bytes from `offset` to the end of its segment, at most `max_bytes` (HA master)."""
        f = self.files.find(offset)
        if f is None:
            return None
        pos = offset - f.file_from_offset
        end = min(f.wrote_position, pos + max_bytes)
        if end <= pos:
            return None
        return f.view(pos, end - pos)
