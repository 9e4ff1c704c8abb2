"""MappedFile: one fixed-size segment file, memory-mapped, with write and flush positions.

The file is named by the absolute offset of its first byte (20 digits) and always has its full configured
size (RocketMQ refuses to load a segment of another size). The unwritten tail is zero bytes.

Crash ordering: `flushed_position` only moves after `os.fdatasync` returned, so everything below it is
on disk. fdatasync (not msync) is used because CPython's mmap.flush holds the GIL during msync while
os.fdatasync releases it, and on Linux the two persist the same shared page-cache pages.

This module knows nothing of records, queues or what the bytes mean.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections.abc import Sequence
from typing import Final

from orbitmq.common.errors import StoreError
from orbitmq.message.record_layout import Buffer
from orbitmq.store.disk_space import allocate

OS_PAGE_SIZE: Final = 4096


def segment_name(offset: int) -> str:
    """RocketMQ's file name of a segment: the 20-digit zero-padded start offset."""
    return f"{offset:020d}"


def fsync_directory(path: str) -> None:
    """Make a created or removed directory entry durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


IOV_MAX: Final = 1024  # buffers per pwritev (Linux's IOV_MAX)


def pwrite_pieces(fd: int, pieces: Sequence[Buffer], pos: int) -> int:
    """Write `pieces` back to back at `pos` with as few pwritev calls as IOV_MAX allows; the bytes
    written, which stop short of the total only if the kernel wrote less (a full disk)."""
    n = len(pieces)
    wrote = 0
    at = 0
    while at < n:
        chunk = pieces[at : at + IOV_MAX] if at or n > IOV_MAX else pieces
        want = 0
        for piece in chunk:
            want += len(piece)
        done = os.pwritev(fd, chunk, pos + wrote)
        wrote += done
        if done != want:
            return wrote
        at += IOV_MAX
    return wrote


class MappedFile:
    __slots__ = (
        "_flush_lock",
        "_whole",
        "fd",
        "file_from_offset",
        "file_size",
        "flushed_position",
        "mm",
        "path",
        "store_timestamp",
        "wrote_position",
    )

    def __init__(self, path: str, file_size: int, *, create: bool) -> None:
        self.path = path
        self.file_size = file_size
        try:
            self.file_from_offset = int(os.path.basename(path))
        except ValueError as exc:
            raise StoreError(f"segment file name is not an offset: {path}") from exc
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            self.fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open segment {path}: {exc}") from exc
        try:
            if create:
                os.ftruncate(self.fd, file_size)
            else:
                actual = os.fstat(self.fd).st_size
                if actual != file_size:
                    raise StoreError(
                        f"segment {path} has {actual} bytes, expected {file_size} (wrong mapped file size)"
                    )
            # Every block backed before the file is mapped (a no-op for a loaded file that already is):
            # a write into a page the file system cannot back would be a SIGBUS (disk_space.py).
            allocate(self.fd, file_size, path, new=create)
            self.mm = mmap.mmap(self.fd, file_size, access=mmap.ACCESS_WRITE)
        except BaseException:
            os.close(self.fd)
            if create:  # (never left behind half made: a later load would take it for a segment)
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        # A new file is empty; a loaded one counts as full until recovery sets its positions.
        start = 0 if create else file_size
        self.wrote_position = start
        self.flushed_position = start
        self.store_timestamp = 0
        self._flush_lock = threading.Lock()
        # One memoryview of the whole mapping, made at the first read: a read's view is a slice of it (a
        # new memoryview of the mmap per record cost a second object and a buffer export each).
        self._whole: memoryview | None = None

    # ---- positions ------------------------------------------------------------------------------
    @property
    def file_tail_offset(self) -> int:
        return self.file_from_offset + self.file_size

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    def set_positions(self, position: int) -> None:
        self.wrote_position = position
        self.flushed_position = position

    def able_to_flush(self, least_pages: int) -> bool:
        wrote, flushed = self.wrote_position, self.flushed_position
        if wrote >= self.file_size and flushed < wrote:
            return True
        if least_pages > 0:
            return (wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE) >= least_pages
        return wrote > flushed

    # ---- I/O ------------------------------------------------------------------------------------
    def flush(self, least_pages: int = 0) -> int:
        """Persist written bytes (if at least `least_pages` dirty pages); returns the flushed position.

        Called from the flusher thread; the writer only moves `wrote_position` forward, so the value
        read before fdatasync is a safe lower bound of what became durable.
        """
        with self._flush_lock:
            if self.able_to_flush(least_pages):
                target = self.wrote_position
                os.fdatasync(self.fd)
                self.flushed_position = max(self.flushed_position, target)
            return self.flushed_position

    def view(self, position: int, size: int) -> memoryview:
        """A zero-copy view of `size` bytes at `position` within this file."""
        whole = self._whole
        if whole is None:
            whole = self._whole = memoryview(self.mm)
        return whole[position : position + size]

    def write(self, position: int, data: bytes | bytearray | memoryview) -> None:
        self.mm[position : position + len(data)] = data

    def zero_from(self, position: int, zero_run_limit: int = 8 << 20) -> None:
        """Zero the bytes from `position` on (a truncated tail must read as "no record", or a later
        recovery could take stale bytes for records).

        Only non-zero chunks are written (rewriting zeros would dirty every page of a 1 GiB segment), and
        the scan stops after `zero_run_limit` consecutive zero bytes: files are written front to back,
        so past the largest possible all-zero stretch inside a record nothing was ever written.
        """
        end = self.file_size
        step = 1 << 20
        zeros = bytes(min(step, max(0, end - position)))
        pos = position
        zero_run = 0
        mm = self.mm
        while pos < end and zero_run < zero_run_limit:
            n = min(step, end - pos)
            chunk = mm[pos : pos + n]
            if chunk.count(0) == n:
                zero_run += n
            else:
                mm[pos : pos + n] = zeros[:n]
                zero_run = 0
            pos += n

    def close(self) -> None:
        whole = self._whole
        if whole is not None:
            # Released first: the slices handed out keep the mapping alive on their own.
            self._whole = None
            whole.release()
        close_mapping(self.mm, self.fd)

    def destroy(self) -> None:
        self.close()
        remove_file(self.path)

    def last_modified_ms(self) -> int:
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    def __repr__(self) -> str:
        return f"MappedFile({self.path}, wrote={self.wrote_position}, flushed={self.flushed_position})"


def close_mapping(mm: mmap.mmap, fd: int) -> None:
    """Close a file's mapping and descriptor. A mapping that zero-copy views handed to readers still
    use stays open until the last of them goes; a descriptor already closed is no error."""
    try:
        mm.close()
    except BufferError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


def remove_file(path: str) -> None:
    """Delete `path`; already gone is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
