"""StoreCheckpoint: the 4096-byte `checkpoint` file (fact sheet 6.6).

Layout, big-endian longs: 0 physicMsgTimestamp, 8 logicsMsgTimestamp, 16 indexMsgTimestamp; the rest of
the page is zero. Abnormal recovery starts from the first commit log segment whose first message is not
newer than `min_timestamp()` (or `min_timestamp_index()` when index safety is on), so each value must
never be ahead of what is durable: callers set a value only after flushing what it describes.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading

from orbitmq.store.disk_space import allocate

CHECKPOINT_FILE_SIZE = 4096
_LAYOUT = struct.Struct(">qqq")


class StoreCheckpoint:
    def __init__(self, path: str) -> None:
        self.path = path
        exists = os.path.exists(path)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size != CHECKPOINT_FILE_SIZE:
            os.ftruncate(self.fd, CHECKPOINT_FILE_SIZE)
        # (written through the mapping: backed first, disk_space.py)
        allocate(self.fd, CHECKPOINT_FILE_SIZE, path, new=not exists)
        self.mm = mmap.mmap(self.fd, CHECKPOINT_FILE_SIZE, access=mmap.ACCESS_WRITE)
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        if exists:
            (
                self.physic_msg_timestamp,
                self.logics_msg_timestamp,
                self.index_msg_timestamp,
            ) = _LAYOUT.unpack_from(self.mm, 0)
        self._lock = threading.Lock()

    def min_timestamp(self) -> int:
        """max(0, min(physic, logics) - 3000): 3 s of slack for clock and flush ordering."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp(), self.index_msg_timestamp)

    def flush(self) -> None:
        with self._lock:
            _LAYOUT.pack_into(
                self.mm, 0, self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp
            )
            os.fdatasync(self.fd)

    def close(self) -> None:
        if self.mm.closed:
            return
        try:
            self.mm.close()
        finally:
            os.close(self.fd)
