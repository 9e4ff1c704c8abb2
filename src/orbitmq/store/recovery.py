"""Start-up recovery (fact sheet 6.7): find where the valid log ends, cut everything after it, and make
the consume queues and the index agree with the log again.

Order (each step relies on the previous one):
1. consume queues: each is scanned from its 3rd-last file and cut at its first invalid entry (one out
   of commit-log order is damage: logged, and the queue is rebuilt from the log from there);
2. commit log: records are checked (magic, lengths, body CRC when `check_crc_on_recover`) from the
   3rd-last segment after a clean exit, or after a crash from the newest segment whose first record is
   not newer than the checkpoint. An invalid record followed by a verified one is damage (damage.py):
   logged with its file and offset, skipped, its consume-queue entries blanked. The first invalid
   record nothing valid follows (a torn tail, zeros) ends the log: the rest of that segment is zeroed
   and later segments are deleted;
3. consume-queue entries and index files pointing at or beyond that end are removed;
4. the dispatcher re-runs from where the derived files stop being trustworthy -- the max offset any
   consume queue references after a clean exit; after a crash, the chosen start segment (earlier if no
   queue reaches it, or if an index file was dropped in step 3) -- so missing entries are rebuilt through
   the same dispatch path. As in RocketMQ, index entries between the last full flushed index file and
   the chosen segment are only rebuilt with `message_index_safe` (the start is then chosen by the
   index checkpoint too);
5. topicQueueTable is rebuilt from the queues' max offsets and min offsets are corrected.
"""

from __future__ import annotations

import logging
import mmap
import struct

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.hashing import ZLIB_CRC32
from orbitmq.message.record_layout import (
    BLANK_MAGIC,
    HEADER_SIZE_V4,
    MAX_TOPIC_LENGTH,
    MESSAGE_MAGIC,
    SYSFLAG_POS,
    RecordHeader,
    header_size,
    store_timestamp_pos,
    unpack_record_header,
)
from orbitmq.store.checkpoint import StoreCheckpoint
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.damage import DamagedRange, DamageReport, log_damage, next_valid_record, record_problem
from orbitmq.store.dispatch import Dispatcher
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.recovery_progress import RecoveryProgress, RecoveryStep
from orbitmq.store.segment_queue import MappedFileQueue

log = logging.getLogger(__name__)
_HEAD = struct.Struct(">iIiiiqqi")  # through SYSFLAG
_LONG = struct.Struct(">q")
_MAGIC = struct.Struct(">I")
BLANK = -1
INVALID = -2


def _check_record(mm: mmap.mmap, view: memoryview, pos: int, check_crc: bool) -> RecordHeader | int:
    """The header of a valid message record at `pos`, BLANK for the end-of-file marker, or INVALID.

    RocketMQ's checkMessageAndReturnSize: magic, lengths adding up to TOTALSIZE, body CRC. Properties
    are not decoded here (recovery only needs validity; dispatch decodes them).
    """
    if pos + 8 > len(mm):
        return INVALID
    magic = _MAGIC.unpack_from(mm, pos + 4)[0]
    if magic == BLANK_MAGIC:
        return BLANK
    if magic != MESSAGE_MAGIC:
        return INVALID
    try:
        header = unpack_record_header(mm, pos)
    except RemoteProtocolError:
        return INVALID
    if check_crc:
        body = view[header.body_pos : header.body_pos + header.body_len]
        if ZLIB_CRC32(body) & 0x7FFFFFFF != header.body_crc:
            return INVALID
    return header


_SIZE_MAGIC = struct.Struct(">iI")
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
# Bytes before BODY by the IPv6 bits of SYSFLAG ((sys_flag >> 4) & 3); BODYLENGTH is the last 4 of them.
_FIXED_SIZES = tuple(header_size(flags << 4) for flags in range(4))
_TORN = -3


def _scan_segment(mm: mmap.mmap, view: memoryview, pos: int, check_crc: bool) -> tuple[int, int]:
    """Check records from `pos` on; returns (where the valid records end, BLANK | INVALID | _TORN).

    The same checks as `_check_record` (magic, lengths adding up to TOTALSIZE, body CRC) in one loop
    without building a header per record: recovery only needs to know where the log ends. The torn-tail
    check runs where the next bytes are not a record (normally once, at the end of the log).
    """
    end = len(mm)
    size_magic = _SIZE_MAGIC.unpack_from
    int_at = _INT.unpack_from
    short_at = _SHORT.unpack_from
    crc32 = ZLIB_CRC32
    fixed_sizes = _FIXED_SIZES
    while True:
        if pos + 8 > end:
            return pos, INVALID
        size, magic = size_magic(mm, pos)
        if magic != MESSAGE_MAGIC:
            return pos, (BLANK if magic == BLANK_MAGIC else INVALID)
        if pos + HEADER_SIZE_V4 > end:
            return pos, INVALID
        body_pos = pos + fixed_sizes[(int_at(mm, pos + SYSFLAG_POS)[0] >> 4) & 0x3]
        if body_pos > end:
            return pos, INVALID
        body_len = int_at(mm, body_pos - 4)[0]
        record_end = pos + size
        topic_len_pos = body_pos + body_len
        if body_len < 0 or record_end > end or topic_len_pos + 3 > record_end:
            return pos, INVALID
        topic_len = mm[topic_len_pos]
        properties_len_pos = topic_len_pos + 1 + topic_len
        if (
            topic_len > MAX_TOPIC_LENGTH
            or properties_len_pos + 2 > record_end
            or properties_len_pos + 2 + short_at(mm, properties_len_pos)[0] != record_end
        ):
            return pos, INVALID
        if check_crc and crc32(view[body_pos:topic_len_pos]) & 0x7FFFFFFF != int_at(mm, pos + 8)[0]:
            return pos, INVALID
        if record_end + 8 > end or size_magic(mm, record_end)[1] not in (MESSAGE_MAGIC, BLANK_MAGIC):
            r = _check_record(mm, view, pos, False)
            if (
                isinstance(r, RecordHeader)
                and _torn_text(mm, r)
                and isinstance(_check_record(mm, view, record_end, False), int)
            ):
                return pos, _TORN
        pos = record_end


def scan_valid_end(
    files: MappedFileQueue,
    start_index: int,
    *,
    check_crc: bool,
    progress: RecoveryProgress | None = None,
    damage: DamageReport | None = None,
) -> int:
    """The offset just past the last valid record, scanning from segment `start_index`.

    With `damage`, a record failing its checks is only the end of the log when no verified record
    follows it (damage.next_valid_record); otherwise the bytes up to that record are added to `damage`
    and the scan goes on there. Zeros in the last segment end the log without a search: that is where
    writing stopped."""
    segments = files.files
    if not segments:
        return 0
    index, pos = start_index, 0
    first, last = segments[start_index].file_from_offset, segments[-1].file_tail_offset
    while True:
        f = segments[index]
        mm = f.mm
        view = memoryview(mm)
        try:
            pos, what = _scan_segment(mm, view, pos, check_crc)
        finally:
            view.release()  # an exported view would keep the mmap from being closed
        if what == BLANK and index + 1 < len(segments):
            if progress is not None:
                progress(RecoveryStep("scan", f.file_tail_offset - first, last - first))
            index, pos = index + 1, 0
            continue
        if what != BLANK and damage is not None and not _unwritten(mm, pos, index + 1 == len(segments)):
            found = next_valid_record(files, index, pos)
            if found is not None:
                resume = segments[found[0]].file_from_offset + found[1]
                start = f.file_from_offset + pos
                if pos < f.file_size:
                    reason = record_problem(mm, pos, check_crc=check_crc) or "record not verifiable"
                    r = DamagedRange(start, resume, f.path, reason)
                    damage.add(r)
                    log_damage(r, f.file_size)
                index, pos = found
                continue
        # A blank closes the last segment: the log continues at the next (not yet created) one.
        end = f.file_tail_offset if what == BLANK else f.file_from_offset + pos
        if progress is not None:  # the bytes checked, not the segments' mapped size
            progress(RecoveryStep("scan", end - first, end - first))
        return end


def _unwritten(mm: mmap.mmap, pos: int, last_segment: bool) -> bool:
    """Whether the log simply stops at `pos`: zeros (TOTALSIZE and magic) in the last segment."""
    return last_segment and (pos + 8 > len(mm) or _SIZE_MAGIC.unpack_from(mm, pos) == (0, 0))


def _torn_text(mm: mmap.mmap, r: RecordHeader) -> bool:
    """Whether the topic or properties of a record hold zero bytes (or the topic is empty).

    The body CRC does not cover topic and properties, so a record whose tail was never written (a
    process killed mid-copy into the zero-filled segment) can still pass every length check. Such a
    record is only treated as torn when nothing valid follows it: a legitimate NUL inside a property
    value of a record in the middle of the log is kept.
    """
    return (
        r.topic_len == 0
        or mm.find(b"\0", r.topic_pos, r.topic_pos + r.topic_len) != -1
        or (r.properties_len > 0 and mm.find(b"\0", r.properties_pos, r.end) != -1)
    )


def _first_record_timestamp(files: MappedFileQueue, index: int) -> int:
    f = files.files[index]
    _, magic, *_rest, sys_flag = _HEAD.unpack_from(f.mm, 0)
    if magic != MESSAGE_MAGIC:
        return 0
    return int(_LONG.unpack_from(f.mm, store_timestamp_pos(sys_flag))[0])


def choose_abnormal_start(files: MappedFileQueue, min_timestamp: int) -> int:
    """Index of the newest segment whose first record is a message stored no later than `min_timestamp`."""
    for index in range(len(files.files) - 1, -1, -1):
        ts = _first_record_timestamp(files, index)
        if ts != 0 and ts <= min_timestamp:
            return index
    return 0


def recover(
    *,
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    key_index: KeyIndex | None,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    last_exit_ok: bool,
    check_crc: bool,
    index_safe: bool,
    progress: RecoveryProgress | None = None,
    damage: DamageReport | None = None,
) -> int:
    """Recover the store in place; returns the commit log's end offset (`processOffset`).

    `progress` hears after every segment of the scan and of the re-dispatch (recovery_progress).
    `damage` collects the damaged commit-log ranges (skipped, not cut: see scan_valid_end); their
    consume-queue entries become blanks, so pulls step over them."""
    damage = damage if damage is not None else DamageReport()
    rebuild_from = -1  # the earliest log offset a consume queue cut at a damaged entry needs again
    for cq in queues.snapshot():
        cut = cq.recover()
        if cut >= 0:
            rebuild_from = cut if rebuild_from < 0 else min(rebuild_from, cut)
    files = commit_log.files
    segments = files.files
    if last_exit_ok:
        start_index = max(0, len(segments) - 3)
    else:
        limit = checkpoint.min_timestamp_index() if index_safe else checkpoint.min_timestamp()
        start_index = choose_abnormal_start(files, limit)
    if segments:
        process_offset = scan_valid_end(
            files, start_index, check_crc=check_crc, progress=progress, damage=damage
        )
        start_offset = segments[start_index].file_from_offset
    else:
        # No log at all: the derived files describe nothing that exists.
        process_offset = 0
        start_offset = 0
    files.truncate_dirty_files(process_offset)
    files.set_all_full_except_last()
    if queues.max_physic_offset() >= process_offset or not segments:
        for cq in queues.snapshot():
            cq.truncate_dirty_logic_files(process_offset)
    for r in damage.ranges:
        for cq in queues.snapshot():
            cq.blank_entries(r.start, r.end)
    dropped = key_index.drop_files_beyond(process_offset) if key_index is not None else -1
    log.log(
        logging.INFO if segments else logging.DEBUG,  # a new store has nothing to recover
        "commit log recovered to %d (%s exit, scan from %d)",
        process_offset,
        "normal" if last_exit_ok else "abnormal",
        start_offset,
    )

    # Re-dispatch: same path as live appends and replication.
    min_offset = commit_log.min_offset
    queues_end = max(queues.max_physic_offset(), min_offset)
    reput = queues_end if last_exit_ok else min(start_offset, queues_end)
    if dropped >= 0:
        # An index file referenced records past the log's end: it is rebuilt from its first record.
        reput = min(reput, dropped - dropped % commit_log.file_size)
    if rebuild_from >= 0:
        reput = min(reput, rebuild_from)
    reput = max(reput, min_offset)
    dispatcher.reput_offset = reput
    rebuild_topic_queue_table(commit_log, queues)
    _dispatch(dispatcher, commit_log.file_size, process_offset, progress, damage.ranges)
    rebuild_topic_queue_table(commit_log, queues)
    return process_offset


def _dispatch(
    dispatcher: Dispatcher,
    file_size: int,
    end: int,
    progress: RecoveryProgress | None,
    damaged: list[DamagedRange],
) -> None:
    """Dispatch up to `end` one segment at a time (records never span segments), reporting after each,
    stepping over the damaged ranges."""
    first = dispatcher.reput_offset
    while dispatcher.reput_offset < end:
        before = dispatcher.reput_offset
        inside = next((r.end for r in damaged if r.start <= before < r.end), -1)
        if inside >= 0:
            dispatcher.reput_offset = inside
            continue
        limit = min(end, before - before % file_size + file_size)
        limit = min([limit] + [r.start for r in damaged if r.start > before])
        dispatcher.dispatch_from_log(limit)
        if progress is not None:
            progress(RecoveryStep("dispatch", dispatcher.reput_offset - first, end - first))
        if dispatcher.reput_offset == before:
            break  # stopped at an invalid record: as the single call would


def rebuild_topic_queue_table(commit_log: CommitLog, queues: ConsumeQueueTable) -> None:
    table: dict[tuple[str, int], int] = {}
    min_offset = commit_log.min_offset
    for cq in queues.snapshot():
        table[(cq.topic, cq.queue_id)] = cq.max_offset
        cq.correct_min_offset(min_offset)
    commit_log.topic_queue_table.clear()
    commit_log.topic_queue_table.update(table)
