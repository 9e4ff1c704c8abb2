"""PagePreparer (opt-in, `pagePrepareAheadBytes`): a thread that brings the commit log's next pages into
the page cache ahead of the appends, so the appending thread (the broker's event loop) does not fault
and zero them inside an append, before its answer.

A segment is a sparse file (as RocketMQ leaves it): the first write into each stretch faults and the
kernel zero-fills page-cache folios on the writing thread. For each chunk ahead of the write position
this thread maps it read-only through a descriptor of its own and asks for `MADV_POPULATE_READ` (Linux
5.14): reading a hole fills the cache with clean zero pages, so nothing is written back and no disk
block is allocated (a populating write would dirty them). Mapping and descriptor are released after
each chunk, so a segment deleted meanwhile is never kept alive; ctypes releases the GIL during the
calls (`mmap.madvise` does not). Opt-in because the zeroing moves to this thread rather than going
away: a gain with a core to spare, a loss without one. Without the call (not Linux, older kernels) the
thread notes it once and stops. RocketMQ's nearest setting, warmMapedFileEnable, writes zeros instead.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import sys
import threading
from typing import Final

from orbitmq.store.mapped_file import OS_PAGE_SIZE, MappedFile
from orbitmq.store.segment_queue import MappedFileQueue

log: Final = logging.getLogger(__name__)

MADV_POPULATE_READ: Final = 22  # <asm-generic/mman-common.h>
_PROT_READ: Final = 1
_MAP_SHARED: Final = 1
_MAP_FAILED: Final = ctypes.c_void_p(-1).value
DEFAULT_CHUNK: Final = 2 << 20  # per call: a few ms of zeroing, so stop() is never far away
BUSY_WAIT: Final = 0.01  # s between rounds while the write position moves
IDLE_WAIT: Final = 0.1  # s between rounds while it does not


class _Libc:
    """mmap, madvise and munmap of the process's C library, typed for ctypes (see `_load_libc`)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(None, use_errno=True)
        self.mmap = lib.mmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        self.madvise = lib.madvise
        self.madvise.restype = ctypes.c_int
        self.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.munmap = lib.munmap
        self.munmap.restype = ctypes.c_int
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def _load_libc() -> _Libc | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _Libc()
    except (OSError, AttributeError):
        return None


class PagePreparer:
    """Keeps the `ahead` bytes after the newest segment's write position (into the pre-allocated next
    segment when the newest ends sooner) in the page cache. `prepare_once` does one round on the calling
    thread; `start` runs rounds on a daemon thread until `stop`."""

    def __init__(self, files: MappedFileQueue, ahead: int, *, chunk: int = DEFAULT_CHUNK) -> None:
        self.files = files
        self.ahead = ahead
        self.chunk = max(OS_PAGE_SIZE, chunk - chunk % OS_PAGE_SIZE)
        self.prepared_bytes = 0  # in all (a counter for tests and stats)
        self.unsupported: str | None = None  # why the platform cannot, once found out
        # (the C library only where the thread may run: off, the default, a store loads nothing)
        self._libc = _load_libc() if ahead > 0 else None
        if ahead > 0 and self._libc is None:
            self.unsupported = "no MADV_POPULATE_READ on this platform"
        # The segments being prepared and how far (at most the newest and the next): the objects, not
        # their paths, so a segment deleted and created again under its name starts afresh.
        self._done: dict[MappedFile, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None or self.ahead <= 0 or self.unsupported is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="orbitmq-store-page-preparer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        thread.join()
        self._thread = None

    @property
    def running(self) -> bool:
        # (alive, not just started: the thread ends by itself where the kernel lacks the call)
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _run(self) -> None:
        wait = 0.0
        while not self._stop.wait(wait):
            try:
                did = self.prepare_once()
            except Exception:  # never fatal: without it appends only fault as before
                log.exception("page preparation failed; appends fault in their own pages from now on")
                return
            if self.unsupported is not None:
                log.info("commit-log page preparation is off: %s", self.unsupported)
                return
            wait = BUSY_WAIT if did else IDLE_WAIT

    # ---- one round ------------------------------------------------------------------------------
    def prepare_once(self) -> int:
        """Prepare what is missing of the next `ahead` bytes; returns the bytes prepared this round."""
        tail = self.files.tail
        if tail is None or self.ahead <= 0 or self.unsupported is not None:
            return 0
        position = tail.wrote_position
        end = position + self.ahead
        done = self._prepare(tail, position, min(end, tail.file_size))
        wanted = [tail]
        following = self.files.next_file
        if end > tail.file_size and following is not None:
            done += self._prepare(following, 0, end - tail.file_size)
            wanted.append(following)
        for f in [f for f in self._done if f not in wanted]:
            del self._done[f]
        self.prepared_bytes += done
        return done

    def _prepare(self, f: MappedFile, position: int, end: int) -> int:
        start = max(self._done.get(f, 0), position - position % OS_PAGE_SIZE)
        end = min(f.file_size, -(-end // OS_PAGE_SIZE) * OS_PAGE_SIZE)
        prepared = 0
        while start < end and not self._stop.is_set():
            length = min(self.chunk, end - start)
            if not self._populate(f.path, start, length):
                break
            start += length
            prepared += length
        self._done[f] = start
        return prepared

    def _populate(self, path: str, offset: int, length: int) -> bool:
        """Fault [offset, offset + length) of the file at `path` into the page cache; False when the
        file is gone or the call failed."""
        libc = self._libc
        assert libc is not None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False  # deleted meanwhile: nothing to prepare
        try:
            addr = libc.mmap(None, length, _PROT_READ, _MAP_SHARED, fd, offset)
            if addr is None or addr == _MAP_FAILED:
                return False
            try:
                if libc.madvise(addr, length, MADV_POPULATE_READ) != 0:
                    code = ctypes.get_errno()
                    if code == errno.EINVAL:  # the kernel predates MADV_POPULATE_READ
                        self.unsupported = "the kernel has no MADV_POPULATE_READ (Linux 5.14+)"
                    return False  # EFAULT and the like: past the end of a file cut short
            finally:
                libc.munmap(addr, length)
        finally:
            os.close(fd)
        return True
