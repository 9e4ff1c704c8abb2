"""ReadPath: pulls, lookups by offset, time and key (RocketMQ's DefaultMessageStore read methods).

`get_messages` follows DefaultMessageStore.getMessage: the status table of fact sheet 3.4, at most
max(16000, max_count*20) bytes of consume queue scanned per pull, and the batch limits of fact sheet
7.1 (256 KiB / 32 messages "in memory", 64 KiB / 8 "on disk", where "in memory" means within
accessMessageInMemoryMaxRatio % of physical RAM from the log's end). At least one message is returned.
Records are returned as memoryview slices of the mapped segments: nothing is copied.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Final

from orbitmq.message.record_layout import MESSAGE_MAGIC, SYSFLAG_POS, store_timestamp_pos
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.config import SLAVE, StoreConfig
from orbitmq.store.consume_queue import CQ_ENTRY, PRE_BLANK_SIZE
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.damage import DamageReport, record_problem
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.results import GetMessageResult, GetMessageStatus, QueryMessageResult
from orbitmq.store.stats import StoreStats

_HEAD: Final = struct.Struct(">iI")
_INT: Final = struct.Struct(">i")
_LONG: Final = struct.Struct(">q")
_NO_FILE: Final = -(1 << 63)


def total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


class ReadPath:
    def __init__(
        self,
        config: StoreConfig,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        key_index: KeyIndex | None,
        stats: StoreStats,
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.queues = queues
        self.key_index = key_index
        self.stats = stats
        self.memory_limit = total_physical_memory() * config.access_message_in_memory_max_ratio // 100
        self.damage = DamageReport()  # filled by recovery; records reads refused

    def _checked_size(
        self, f: MappedFile, pos: int, size: int, check_crc: bool, where: tuple[str, int, int] | None
    ) -> int:
        """The size to serve the record at `pos` with, 0 to skip it (logged once). A whole record (CRC
        included) whose consume-queue entry has a wrong size is served with its own TOTALSIZE.
        `where`: the (topic, queue id, queue offset) pulled, None for a lookup by offset."""
        problem = record_problem(f.mm, pos, size=size, check_crc=check_crc)
        if not problem:
            return size
        own = int(_HEAD.unpack_from(f.mm, pos)[0])
        served = own != size and 0 < own <= f.wrote_position - pos and not record_problem(f.mm, pos, size=own)
        what = "a lookup by offset" if where is None else "{}:{} queue offset {}".format(*where)
        self.damage.refuse(f.path, f.file_from_offset + pos, what, problem, served=served)
        return own if served else 0

    def _correct(self, old: int, new: int) -> int:
        """nextOffsetCorrection: a slave without offsetCheckInSlave keeps the requested offset."""
        config = self.config
        if config.broker_role == SLAVE and not config.offset_check_in_slave:
            return old
        return new

    def get_messages(  # noqa: PLR0917 -- mirrors MessageStore.get_messages
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: Callable[[int], bool] | None,
        *,
        coalesce: bool = False,
    ) -> GetMessageResult:
        """`coalesce`: records adjacent in the same commit-log file come back as ONE view (a pull reply
        is then a few scatter-gather parts of the mapped log instead of one part per message);
        `message_count` and `queue_offsets` still count messages."""
        S = GetMessageStatus
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            result = GetMessageResult(S.NO_MATCHED_LOGIC_QUEUE, self._correct(offset, 0), 0, 0)
            self.stats.get_message_times_total_miss += 1
            return result
        min_offset = cq.min_offset
        max_offset = cq.max_offset
        if max_offset == 0:
            status, next_offset = S.NO_MESSAGE_IN_QUEUE, self._correct(offset, 0)
        elif offset < min_offset:
            status, next_offset = S.OFFSET_TOO_SMALL, self._correct(offset, min_offset)
        elif offset == max_offset:
            status, next_offset = S.OFFSET_OVERFLOW_ONE, self._correct(offset, offset)
        elif offset > max_offset:
            status, next_offset = S.OFFSET_OVERFLOW_BADLY, self._correct(offset, max_offset)
        else:
            found = cq.index_buffer(offset)
            if found is None:
                status, next_offset = S.OFFSET_FOUND_NULL, self._correct(offset, cq.roll_next_file(offset))
            else:
                return self._collect(
                    topic=topic,
                    queue_id=queue_id,
                    entries=found[0],
                    count=found[1],
                    offset=offset,
                    min_offset=min_offset,
                    max_offset=max_offset,
                    max_count=max_count,
                    message_filter=message_filter,
                    coalesce=coalesce,
                )
        self.stats.get_message_times_total_miss += 1
        return GetMessageResult(status, next_offset, min_offset, max_offset)

    def _collect(
        self,
        *,
        topic: str,
        queue_id: int,
        entries: memoryview,
        count: int,
        offset: int,
        min_offset: int,
        max_offset: int,
        max_count: int,
        message_filter: Callable[[int], bool] | None,
        coalesce: bool = False,
    ) -> GetMessageResult:
        config = self.config
        commit_log = self.commit_log
        files = commit_log.files
        max_phy = files.max_offset
        memory_limit = self.memory_limit
        limit = min(count, max(16000, max_count * 20) // 20)
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        buffers: list[memoryview] = []
        queue_offsets: list[int] = []
        total = 0
        found = 0  # messages taken (with `coalesce`, a buffer may hold several)
        # The open run of adjacent records (with `coalesce`): its file, first and end position.
        run_file: MappedFile | None = None
        run_start = run_end = 0
        cur: MappedFile | None = None  # the segment of the last record found, and its byte range
        cur_lo, cur_hi = 0, -1
        cur_wrote = 0  # the segment's written end (read once per segment: it only grows)
        # Per-message work is the broker's cost of a large pull: attributes and enum members read once
        # (compiled: the entry's fields declared ints, so the checks below are native arithmetic).
        found_status = GetMessageStatus.FOUND
        next_file_start = _NO_FILE
        phy: int
        size: int
        tags: int
        max_phy_pulling = 0
        disk_bytes = config.max_transfer_bytes_on_message_in_disk
        disk_count = config.max_transfer_count_on_message_in_disk
        memory_bytes = config.max_transfer_bytes_on_message_in_memory
        memory_count = config.max_transfer_count_on_message_in_memory
        check_crc = config.check_crc_on_read
        i = 0
        for i, (phy, size, tags) in enumerate(CQ_ENTRY.iter_unpack(entries[: limit * 20])):
            max_phy_pulling = phy
            if next_file_start != _NO_FILE and phy < next_file_start:
                continue
            n = found
            if n:
                if n >= max_count:
                    break
                if max_phy - phy > memory_limit:
                    if total + size > disk_bytes or n > disk_count - 1:
                        if size == PRE_BLANK_SIZE:
                            continue  # the entry of a damaged record (recovery blanked it)
                        break
                elif total + size > memory_bytes or n > memory_count - 1:
                    if size == PRE_BLANK_SIZE:
                        continue
                    break
            if message_filter is not None and not message_filter(tags):
                continue
            if cur_lo <= phy < cur_hi:  # most records sit in the segment of the previous one
                f = cur
            else:
                f = files.find(phy)
                if f is not None:
                    cur, cur_lo, cur_hi = f, f.file_from_offset, f.file_from_offset + f.file_size
                    cur_wrote = f.wrote_position
            pos = phy - cur_lo if f is not None else 0
            if f is None or size <= 0 or pos + size > cur_wrote:
                if size == PRE_BLANK_SIZE:
                    continue
                if not found:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_file_start = commit_log.roll_next_file(phy)
                continue
            if check_crc:
                size = self._checked_size(  # noqa: PLW2901 -- the size the record is served with
                    f, pos, size, True, (topic, queue_id, offset + i)
                )
                if size <= 0:
                    continue
            if not coalesce:
                buffers.append(f.view(pos, size))
            elif f is run_file and pos == run_end:
                run_end += size
            else:
                if run_file is not None:
                    buffers.append(run_file.view(run_start, run_end - run_start))
                run_file, run_start, run_end = f, pos, pos + size
            found += 1
            queue_offsets.append(offset + i)
            total += size
            status = found_status
            next_file_start = _NO_FILE
        else:
            i = limit  # every scanned entry was looked at: the next pull starts after them
        if run_file is not None:
            buffers.append(run_file.view(run_start, run_end - run_start))
        stats = self.stats
        if status is GetMessageStatus.FOUND:
            stats.get_message_times_total_found += 1
            stats.get_message_transfered_msg_count += found
        else:
            stats.get_message_times_total_miss += 1
        return GetMessageResult(
            status,
            offset + i,
            min_offset,
            max_offset,
            buffers,
            found,
            max_phy - max_phy_pulling > memory_limit,
            total,
            queue_offsets,
        )

    # ---- single records -------------------------------------------------------------------------
    def record_at(self, physical_offset: int, size: int = 0) -> memoryview | None:
        """The whole record at `physical_offset` (its size read from TOTALSIZE when 0), or None."""
        f = self.commit_log.files.find(physical_offset)
        if f is None:
            return None
        pos = physical_offset - f.file_from_offset
        if pos + 8 > f.wrote_position:
            return None
        total, magic = _HEAD.unpack_from(f.mm, pos)
        if magic != MESSAGE_MAGIC or total <= 0 or (size and size != total) or pos + total > f.wrote_position:
            return None
        check_crc = self.config.check_crc_on_read or self.damage.covers(physical_offset)
        if check_crc and not self._checked_size(f, pos, total, True, None):
            return None
        return f.view(pos, total)

    def store_timestamp_at(self, physical_offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at `physical_offset`, -1 if it is not in the log."""
        f = self.commit_log.files.find(physical_offset)
        if f is None:
            return -1
        pos = physical_offset - f.file_from_offset
        if pos + SYSFLAG_POS + 4 > f.wrote_position:
            return -1
        (sys_flag,) = _INT.unpack_from(f.mm, pos + SYSFLAG_POS)
        ts_pos = pos + store_timestamp_pos(sys_flag)
        if ts_pos + 8 > f.wrote_position:
            return -1
        return int(_LONG.unpack_from(f.mm, ts_pos)[0])

    def offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The queue offset whose store time is closest to `timestamp` (binary search over the queue,
        reading store times from the log, with RocketMQ's left/right closest rule); when several messages
        share the timestamp, the first of them."""
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return 0
        low, high = cq.min_offset, cq.max_offset - 1
        if high < low:
            return cq.max_offset
        target = left = right = -1
        left_value = right_value = -1
        while low <= high:
            mid = (low + high) // 2
            entry = cq.entry(mid)
            ts = self.store_timestamp_at(entry[0], entry[1]) if entry is not None else -1
            if ts < 0:
                low = mid + 1
                continue
            if ts == timestamp:
                target = mid
                break
            if ts > timestamp:
                high = mid - 1
                right, right_value = mid, ts
            else:
                low = mid + 1
                left, left_value = mid, ts
        if target != -1:
            while target > cq.min_offset:
                entry = cq.entry(target - 1)
                if entry is None or self.store_timestamp_at(entry[0], entry[1]) != timestamp:
                    break
                target -= 1
            return target
        if left_value == -1:
            return right if right != -1 else cq.min_offset
        if right_value == -1:
            return left
        return right if abs(timestamp - left_value) > abs(timestamp - right_value) else left

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        result = QueryMessageResult()
        if self.key_index is None:
            return result
        max_num = min(max_num, self.config.max_msgs_num_batch)
        offsets = self.key_index.query(topic, key, max_num, begin, end)
        result.index_last_update_timestamp, result.index_last_update_phyoffset = self.key_index.last_update()
        for physical_offset in offsets:
            view = self.record_at(physical_offset)
            if view is not None:
                result.buffers.append(view)
                result.buffer_total_size += len(view)
        return result
