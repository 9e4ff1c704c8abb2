"""The timer wheel: a memory-mapped file of slots, one per `precision` ms over a window of time, each naming
the first and last timer log record put in it. A slot is reused once its time has been scanned; its stored
time tells a stale slot from a live one.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Final, NamedTuple

from orbitmq.store.timer_log import NO_PREV

# slot time ms, first record position, last record position, record count, magic (unused, 0)
SLOT: Final = struct.Struct(">qqqii")
SLOT_SIZE: Final = SLOT.size


class Slot(NamedTuple):
    time_ms: int
    first: int
    last: int
    num: int


EMPTY: Final = Slot(-1, NO_PREV, NO_PREV, 0)


class TimerWheel:
    """`slots` slots of `precision_ms` each; slot time t lives at index (t // precision) % slots."""

    def __init__(self, path: str, slots: int, precision_ms: int) -> None:
        if slots <= 0 or precision_ms <= 0:
            raise ValueError(f"a timer wheel needs slots and a precision above 0 ({slots}, {precision_ms})")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.slots = slots
        self.precision_ms = precision_ms
        size = slots * SLOT_SIZE
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size != size:
            os.ftruncate(
                self._fd, 0
            )  # another geometry: its contents mean nothing now (rebuilt by the caller)
            os.ftruncate(self._fd, size)
            self.rebuilt = True
        else:
            self.rebuilt = False
        self._map: mmap.mmap | None = mmap.mmap(self._fd, size)

    @property
    def window_ms(self) -> int:
        return self.slots * self.precision_ms

    def _at(self, time_ms: int) -> int:
        return (time_ms // self.precision_ms) % self.slots * SLOT_SIZE

    def get(self, time_ms: int) -> Slot:
        """The slot of `time_ms` (EMPTY when the slot holds another time, or nothing)."""
        assert self._map is not None
        t, first, last, count, _ = SLOT.unpack_from(self._map, self._at(time_ms))
        if t != time_ms or count <= 0:
            return EMPTY
        return Slot(t, first, last, count)

    def put(self, time_ms: int, first: int, last: int, count: int) -> None:
        assert self._map is not None
        SLOT.pack_into(self._map, self._at(time_ms), time_ms, first, last, count, 0)

    def clear(self) -> None:
        assert self._map is not None
        self._map[:] = bytes(len(self._map))

    def flush(self) -> None:
        # fdatasync, not mmap.flush: msync holds the GIL for its whole wait, fdatasync releases it (a
        # save on a worker thread must not stop the event loop), and both persist the same pages.
        if self._fd >= 0:
            os.fdatasync(self._fd)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
