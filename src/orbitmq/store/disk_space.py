"""Disk space: the store never writes into a mapped page its file system cannot back.

A write into an mmap'd page of a sparse file on a full file system is a SIGBUS that kills the process, so
every segment the store maps (commit log, consume queue, index) has its blocks allocated
(`allocate`: posix_fallocate) before it is mapped, or is refused with `DiskFullError`. The commit log,
which takes nearly all the space, creates a segment only while the file system stays at or below
diskSpaceWarningLevelRatio with it (`room_for`): the rest is kept for consume queues, index files and
config files, so they can still grow (and the broker restart) once sends are refused.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
from collections.abc import Callable
from typing import Final

from orbitmq.common.errors import StoreError
from orbitmq.store.config import StoreConfig

log: Final = logging.getLogger(__name__)
# The file system cannot preallocate (and then cannot run out of blocks under a mapping either way).
_NO_FALLOCATE: Final = frozenset({errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


class DiskFullError(StoreError):
    """No space left to back a new or loaded segment: the write it was for is refused."""


def used_ratio(path: str) -> float:
    """Used / total of the file system holding `path` (0.0-1.0), counting the blocks reserved for root
    as free, as Java's File.getFreeSpace does; -1 if unknown."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    return (total - st.f_bfree * st.f_frsize) / total if total else -1.0


def room_for(path: str, nbytes: int, max_ratio: float) -> bool:
    """Whether `nbytes` more on the file system of `path` keep its used ratio at or below `max_ratio`."""
    try:
        st = os.statvfs(path)
    except OSError:
        return True  # unknown: the allocation itself still fails cleanly when there is no room
    total = st.f_blocks * st.f_frsize
    if not total:
        return True
    used = total - st.f_bfree * st.f_frsize
    return (used + nbytes) / total <= max_ratio


def as_ratio(value: float) -> float:
    """A disk-space ratio key read either way RocketMQ wrote it: 0.90 (4.x system properties) or 90
    (5.x MessageStoreConfig percent)."""
    return value / 100 if value > 1 else value


def disk_util(config: StoreConfig) -> str:
    """RocketMQ's diskUtil(): the used ratio of the commit log's, consume queues' and index's disks."""
    ratios = []
    for directory in (config.commit_log_dir, config.consume_queue_dir, config.index_dir):
        path = directory
        while path and not os.path.exists(path):  # (not created yet: its parent's file system)
            path = os.path.dirname(path)
        ratios.append(used_ratio(path or "/"))
    return "CL: {:5.2f} CQ: {:5.2f} INDEX: {:5.2f}".format(*ratios)


def _fallocate_call() -> Callable[[int, int], None]:
    """fallocate(2) itself where libc has it: posix_fallocate emulates an unsupported one by writing a
    byte into every block, which on a file system without it (FUSE) means 100,000 writes per 400 MB
    index file, for nothing (such a file system has no blocks to run out of under a mapping)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        call = libc.fallocate64
    except (OSError, AttributeError):
        return lambda fd, size: os.posix_fallocate(fd, 0, size)
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    call.restype = ctypes.c_int

    def fallocate(fd: int, size: int) -> None:
        if call(fd, 0, 0, size) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return fallocate


_fallocate: Final = _fallocate_call()


def allocate(fd: int, size: int, path: str, *, new: bool) -> None:
    """Back the first `size` bytes of the open file `fd` with real blocks (a no-op where they already
    are); DiskFullError when the file system has no room for them. For a `new` file the free space is
    looked at first: a tmpfs fills its pages one by one before it gives up on a file too large."""
    if new and not room_for(path, size, 1.0):
        raise DiskFullError(f"no space left on the disk for the {size} bytes of {path}")
    try:
        _fallocate(fd, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(f"no space left on the disk for the {size} bytes of {path}") from exc
        if exc.errno not in _NO_FALLOCATE:
            raise StoreError(f"cannot allocate the blocks of {path}: {exc}") from exc
