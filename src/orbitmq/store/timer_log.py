"""The timer log: an append-only file of fixed-size records, one per timer message (or recall) put on the
wheel. Records of one wheel slot are chained backwards (each names the previous record of its slot), so a
slot on disk needs only its last record's position; nothing per timer is held in memory.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

# prev position, slot time ms, commit log offset, size, magic, queue offset in the timer topic
RECORD: Final = struct.Struct(">qqqiiq")
RECORD_SIZE: Final = RECORD.size
NO_PREV: Final = -1
MAGIC_NORMAL: Final = 1
MAGIC_DELETE: Final = 2  # a recall: the slot's message with this key is not delivered
MAGIC_ROLL: Final = 4  # put again because its time lies beyond the slot it was first put in


class TimerRecord(NamedTuple):
    prev: int
    slot_ms: int
    phy_offset: int
    size: int
    magic: int
    queue_offset: int


class TimerLog:
    """Records appended at the end and read by position; a torn tail (a partial record) is cut at open."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(self._fd).st_size
        whole = size - size % RECORD_SIZE
        if whole != size:
            os.ftruncate(self._fd, whole)
        self.length = whole

    def append(self, record: TimerRecord) -> int:
        """Writes `record` at the end (one write: a kill leaves it whole or absent); its position."""
        pos = self.length
        os.pwrite(self._fd, RECORD.pack(*record), pos)
        self.length = pos + RECORD_SIZE
        return pos

    def read(self, pos: int) -> TimerRecord:
        if pos < 0 or pos + RECORD_SIZE > self.length or pos % RECORD_SIZE:
            raise ValueError(f"timer log position {pos} is outside the log (length {self.length})")
        return TimerRecord(*RECORD.unpack(os.pread(self._fd, RECORD_SIZE, pos)))

    def scan(self, start: int, chunk: int = 4096) -> Iterator[tuple[int, TimerRecord]]:
        """(position, record) from `start` to the end, read `chunk` records at a time."""
        pos = start - start % RECORD_SIZE
        while pos < self.length:
            data = os.pread(self._fd, min(chunk * RECORD_SIZE, self.length - pos), pos)
            if not data:
                return
            for fields in RECORD.iter_unpack(data):
                yield pos, TimerRecord(*fields)
                pos += RECORD_SIZE

    def reset(self) -> None:
        os.ftruncate(self._fd, 0)
        self.length = 0

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
