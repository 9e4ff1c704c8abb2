"""Damaged commit-log records: what is wrong with one, and where valid records resume after it.

A flipped byte inside the log makes one record fail its checks. Recovery must not take that for the end
of the log (RocketMQ truncates there, dropping every later message): it skips to the next record that
passes every check and whose PHYSICALOFFSET is its own offset, which no stray bytes can fake. Reads use
`record_problem` to refuse a damaged record instead of sending a wrong body.
"""

from __future__ import annotations

import bisect
import logging
import mmap
import struct
from dataclasses import dataclass
from typing import Final

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.hashing import ZLIB_CRC32
from orbitmq.message.record_layout import MESSAGE_MAGIC, RecordHeader, unpack_record_header
from orbitmq.store.segment_queue import MappedFileQueue

log = logging.getLogger("orbitmq.store.recovery")

_PHYSICAL: Final = struct.Struct(">q")
_PHYSICAL_POS: Final = 28
_MAGIC_BYTES: Final = MESSAGE_MAGIC.to_bytes(4, "big")
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class DamagedRange:
    """Commit-log bytes recovery skipped: [start, end), `end` being where the next valid record starts."""

    start: int
    end: int
    path: str  # the segment file holding `start`
    reason: str


def record_problem(buf: mmap.mmap | memoryview, pos: int, *, size: int = 0, check_crc: bool = True) -> str:
    """Why the bytes at `pos` are not one valid message record ("" when they are): magic, lengths
    adding up to TOTALSIZE (and to `size` when given), the body CRC when `check_crc`."""
    try:
        header = unpack_record_header(buf, pos)
    except RemoteProtocolError as exc:
        return str(exc)
    if size and header.total_size != size:
        return f"TOTALSIZE {header.total_size} differs from the consume queue's size {size}"
    if check_crc and not crc_matches(buf, header):
        return "body CRC mismatch"
    return ""


def crc_matches(buf: mmap.mmap | memoryview, header: RecordHeader) -> bool:
    view = memoryview(buf)
    try:
        body = view[header.body_pos : header.body_pos + header.body_len]
        return ZLIB_CRC32(body) & 0x7FFFFFFF == header.body_crc
    finally:
        view.release()  # an exported view would keep the mmap from being closed


def _verified_at(mm: mmap.mmap, pos: int, offset: int) -> bool:
    """Whether a record passing every check (CRC included) starts at `pos`, stored at commit-log `offset`."""
    if pos + _PHYSICAL_POS + 8 > len(mm) or _PHYSICAL.unpack_from(mm, pos + _PHYSICAL_POS)[0] != offset:
        return False
    return not record_problem(mm, pos)


def next_valid_record(files: MappedFileQueue, index: int, pos: int) -> tuple[int, int] | None:
    """(segment index, position) of the first verified record after position `pos` of segment `index`,
    or None when none follows (the log really ends at `pos`).

    Searches for the magic code; within a segment the search stops after `files.zero_run_limit` zero
    bytes (segments are written front to back: past such a run nothing was ever written) and goes on
    at the start of the next segment.
    """
    segments = files.files
    start = pos + 1
    while index < len(segments):
        f = segments[index]
        mm = f.mm
        end = len(mm)
        zero_run = 0
        at = start
        while at < end and zero_run < files.zero_run_limit:
            stop = min(end, at + _CHUNK)
            hit = mm.find(_MAGIC_BYTES, at + 4, stop + 4)
            while hit != -1:
                if _verified_at(mm, hit - 4, f.file_from_offset + hit - 4):
                    return index, hit - 4
                hit = mm.find(_MAGIC_BYTES, hit + 1, stop + 4)
            zero_run = zero_run + (stop - at) if mm[at:stop].count(0) == stop - at else 0
            at = stop
        index += 1
        start = 0
    return None


def log_damage(r: DamagedRange, file_size: int) -> None:
    log.error(
        "commit log %s damaged at offset %d (position %d in the file): %s; %d bytes skipped, "
        "valid records resume at offset %d",
        r.path,
        r.start,
        r.start % file_size,
        r.reason,
        r.end - r.start,
        r.end,
    )


class DamageReport:
    """The damaged ranges recovery found, and the records reads refused (each logged once)."""

    def __init__(self) -> None:
        self.ranges: list[DamagedRange] = []
        self._starts: list[int] = []
        self.refused: set[int] = set()

    def add(self, r: DamagedRange) -> None:
        self.ranges.append(r)
        self._starts.append(r.start)

    def covers(self, offset: int) -> bool:
        i = bisect.bisect_right(self._starts, offset) - 1
        return i >= 0 and offset < self.ranges[i].end

    def refuse(self, path: str, offset: int, what: str, problem: str, *, served: bool = False) -> None:
        """Log (once per record) that a read skipped the record at commit-log `offset`, or `served` it
        with its own TOTALSIZE (the consume-queue entry was wrong, the record is whole)."""
        if offset in self.refused:
            return
        self.refused.add(offset)
        if served:
            log.warning(
                "commit log %s: record at offset %d (%s): %s; served whole", path, offset, what, problem
            )
        else:
            log.error("commit log %s: record at offset %d not served (%s): %s", path, offset, what, problem)
